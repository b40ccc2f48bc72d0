// The vector forms of the kernel-header ops: stax::op_<name>(Vec<T, N>...) for every
// PointwiseOp, register by register through reg_<name> (intrinsics where the level has them,
// else the scalar op_<name> per lane, so results equal the scalar forms), plus Vec operators,
// convert<U>(Vec) and the lane-mask (Vec<bool, N>) forms of the ops that accept bool.
// Included by stax_kernel.h after stax_kernel_vec.h; not meant to be included directly.
#pragma once

#include <cstdint>

#include "stax_kernel_vec.h"

namespace stax {

#define STAX_VEC_UNARY(name)                                                    \
  template <class T, int N>                                                     \
  inline Vec<T, N> op_##name(const Vec<T, N>& a) {                              \
    Vec<T, N> r{detail::Uninitialized{}};                                       \
    for (int k = 0; k < Vec<T, N>::kRegs; ++k) r.reg[k] = reg_##name(a.reg[k]); \
    return r;                                                                   \
  }
#define STAX_VEC_BINARY(name)                                                             \
  template <class T, int N>                                                               \
  inline Vec<T, N> op_##name(const Vec<T, N>& a, const Vec<T, N>& b) {                    \
    Vec<T, N> r{detail::Uninitialized{}};                                                 \
    for (int k = 0; k < Vec<T, N>::kRegs; ++k) r.reg[k] = reg_##name(a.reg[k], b.reg[k]); \
    return r;                                                                             \
  }
#define STAX_VEC_MASK1(name)                                      \
  template <class T, int N>                                       \
  inline Vec<bool, N> op_##name(const Vec<T, N>& a) {             \
    uint64_t bits = 0;                                            \
    for (int k = 0; k < Vec<T, N>::kRegs; ++k) {                  \
      bits |= reg_##name(a.reg[k]) << (k * Vec<T, N>::kRegLanes); \
    }                                                             \
    return Vec<bool, N>::from_bits(bits);                         \
  }
#define STAX_VEC_MASK2(name)                                                \
  template <class T, int N>                                                 \
  inline Vec<bool, N> op_##name(const Vec<T, N>& a, const Vec<T, N>& b) {   \
    uint64_t bits = 0;                                                      \
    for (int k = 0; k < Vec<T, N>::kRegs; ++k) {                            \
      bits |= reg_##name(a.reg[k], b.reg[k]) << (k * Vec<T, N>::kRegLanes); \
    }                                                                       \
    return Vec<bool, N>::from_bits(bits);                                   \
  }
STAX_UNARY_OPS(STAX_VEC_UNARY)
STAX_BINARY_OPS(STAX_VEC_BINARY)
STAX_COMPARE_OPS(STAX_VEC_MASK2)
STAX_CLASSIFY_OPS(STAX_VEC_MASK1)
#undef STAX_VEC_UNARY

#undef STAX_VEC_BINARY
#undef STAX_VEC_MASK1
#undef STAX_VEC_MASK2

template <class T, int N>
inline Vec<T, N> op_where(const Vec<bool, N>& c, const Vec<T, N>& a, const Vec<T, N>& b) {
  Vec<T, N> r{detail::Uninitialized{}};
  for (int k = 0; k < Vec<T, N>::kRegs; ++k) {
    r.reg[k] = reg_select(c.bits >> (k * Vec<T, N>::kRegLanes), a.reg[k], b.reg[k]);
  }
  return r;
}

// ---- Logical ops: nonzero is true ----
template <class T, int N>
inline Vec<bool, N> truth(const Vec<T, N>& a) {
  return op_ne(a, Vec<T, N>(T(0)));
}
template <int N>
inline Vec<bool, N> truth(const Vec<bool, N>& a) {
  return a;
}
template <class T, int N>
inline Vec<bool, N> op_logical_and(const Vec<T, N>& a, const Vec<T, N>& b) {
  return truth(a) & truth(b);
}
template <class T, int N>
inline Vec<bool, N> op_logical_or(const Vec<T, N>& a, const Vec<T, N>& b) {
  return truth(a) | truth(b);
}
template <class T, int N>
inline Vec<bool, N> op_logical_xor(const Vec<T, N>& a, const Vec<T, N>& b) {
  return truth(a) ^ truth(b);
}
template <class T, int N>
inline Vec<bool, N> op_logical_not(const Vec<T, N>& a) {
  return !truth(a);
}

// ---- Lane masks: the ops that accept bool (false < true) ----
template <int N>
using Mask = Vec<bool, N>;
template <int N>
inline Mask<N> op_bitwise_and(const Mask<N>& a, const Mask<N>& b) {
  return a & b;
}
template <int N>
inline Mask<N> op_bitwise_or(const Mask<N>& a, const Mask<N>& b) {
  return a | b;
}
template <int N>
inline Mask<N> op_bitwise_xor(const Mask<N>& a, const Mask<N>& b) {
  return a ^ b;
}
template <int N>
inline Mask<N> op_bitwise_not(const Mask<N>& a) {
  return !a;
}
template <int N>
inline Mask<N> op_maximum(const Mask<N>& a, const Mask<N>& b) {
  return a | b;
}
template <int N>
inline Mask<N> op_minimum(const Mask<N>& a, const Mask<N>& b) {
  return a & b;
}
template <int N>
inline Mask<N> op_eq(const Mask<N>& a, const Mask<N>& b) {
  return !(a ^ b);
}
template <int N>
inline Mask<N> op_ne(const Mask<N>& a, const Mask<N>& b) {
  return a ^ b;
}
template <int N>
inline Mask<N> op_lt(const Mask<N>& a, const Mask<N>& b) {
  return ~a & b;
}
template <int N>
inline Mask<N> op_le(const Mask<N>& a, const Mask<N>& b) {
  return ~a | b;
}
template <int N>
inline Mask<N> op_gt(const Mask<N>& a, const Mask<N>& b) {
  return a & ~b;
}
template <int N>
inline Mask<N> op_ge(const Mask<N>& a, const Mask<N>& b) {
  return a | ~b;
}
template <int N>
inline Mask<N> op_isnan(const Mask<N>&) {
  return Mask<N>(false);
}
template <int N>
inline Mask<N> op_isinf(const Mask<N>&) {
  return Mask<N>(false);
}
template <int N>
inline Mask<N> op_where(const Mask<N>& c, const Mask<N>& a, const Mask<N>& b) {
  return (c & a) | (~c & b);
}

// ---- Conversions: register by register when both vectors have the same register lanes
// (convert_reg overloads of the levels, else lanes), otherwise lane by lane ----
namespace detail {
template <class RU, class RT>
inline RU convert_reg(Tag<RU>, const RT& r) {
  alignas(64) typename RT::Elem x[RT::kLanes];
  r.store(x);
  alignas(64) typename RU::Elem y[RU::kLanes];
  for (int l = 0; l < RU::kLanes; ++l) y[l] = convert_scalar<typename RU::Elem>(x[l]);
  return RU::load(y);
}
template <class U, class T, int N>
inline Vec<U, N> convert_lanes(const Vec<T, N>& v) {
  if constexpr (Vec<U, N>::kRegLanes == Vec<T, N>::kRegLanes) {
    Vec<U, N> r{Uninitialized{}};
    for (int k = 0; k < Vec<T, N>::kRegs; ++k) {
      r.reg[k] = convert_reg(Tag<typename Vec<U, N>::Reg>{}, v.reg[k]);
    }
    return r;
  } else {
    alignas(64) T x[N];
    v.store(x);
    alignas(64) U y[N];
    for (int l = 0; l < N; ++l) y[l] = convert_scalar<U>(x[l]);
    return Vec<U, N>::from_array(y);
  }
}
}  // namespace detail

template <class U, class T, int N>
inline Vec<U, N> convert(const Vec<T, N>& v) {
  if constexpr (detail::kSame<U, T>) {
    return v;
  } else if constexpr (detail::kIsBool<U>) {
    return truth(v);
  } else if constexpr (detail::kIsBool<T>) {
    return op_where(v, Vec<U, N>(U(1)), Vec<U, N>(U(0)));
  } else {
    return detail::convert_lanes<U>(v);
  }
}

// A float rounded to the 16-bit float S (Half, BFloat16) and widened back, as eager rounds
// after every op of a 16-bit computation. The vector form is round16 per register: the
// lanes of store16 then load16 (the same conversions as 16-bit stores and loads), computed
// in the register where the level can, so a rounded intermediate equals a stored and
// reloaded one without the narrowing and widening shuffles.
template <class S>
inline float round_to(float x) {
  static_assert(detail::kIsStorage16<S>, "round_to: Half or BFloat16");
  return static_cast<float>(S(x));
}
template <class S, int N>
inline Vec<float, N> round_to(const Vec<float, N>& v) {
  static_assert(detail::kIsStorage16<S>, "round_to: Half or BFloat16");
  Vec<float, N> r{detail::Uninitialized{}};
  for (int k = 0; k < Vec<float, N>::kRegs; ++k) r.reg[k] = round16(v.reg[k], detail::Tag<S>{});
  return r;
}

// log1p, asinh and acosh of large floating arguments (the register forms are SLEEF's, which
// overflows there; see detail::LargeArgument in stax_kernel_scalar_ops.h). These overloads
// are more specialized than the generic op_<name>(Vec<T, N>) and call it for the other lanes.
#define STAX_VEC_LARGE_ARGUMENT_OPS(T)                                                            \
  template <int N>                                                                                \
  inline Vec<T, N> op_log1p(const Vec<T, N>& x) {                                                 \
    const Vec<T, N> r = op_log1p<T, N>(x);                                                        \
    const Vec<bool, N> large = op_gt(x, Vec<T, N>(detail::LargeArgument<T>::log1p));              \
    return large.bits == 0 ? r : op_where(large, op_log(x), r);                                   \
  }                                                                                               \
  template <int N>                                                                                \
  inline Vec<T, N> op_asinh(const Vec<T, N>& x) {                                                 \
    const Vec<T, N> r = op_asinh<T, N>(x);                                                        \
    const Vec<T, N> a = op_abs(x);                                                                \
    const Vec<bool, N> large = op_gt(a, Vec<T, N>(detail::LargeArgument<T>::inverse_hyperbolic)); \
    if (large.bits == 0) return r;                                                                \
    const Vec<T, N> big = op_copysign(op_add(op_log(a), Vec<T, N>(detail::kLog2<T>)), x);         \
    return op_where(large, big, r);                                                               \
  }                                                                                               \
  template <int N>                                                                                \
  inline Vec<T, N> op_acosh(const Vec<T, N>& x) {                                                 \
    const Vec<T, N> r = op_acosh<T, N>(x);                                                        \
    const Vec<bool, N> large = op_gt(x, Vec<T, N>(detail::LargeArgument<T>::inverse_hyperbolic)); \
    return large.bits == 0 ? r                                                                    \
                           : op_where(large, op_add(op_log(x), Vec<T, N>(detail::kLog2<T>)), r);  \
  }
STAX_VEC_LARGE_ARGUMENT_OPS(float)
STAX_VEC_LARGE_ARGUMENT_OPS(double)
#undef STAX_VEC_LARGE_ARGUMENT_OPS

}  // namespace stax
