// The register layer under stax::Vec<T, N>: a Vec is an array of Reg<T, L> (L lanes each).
// This file defines the generic Reg (a plain lane array) and, for every op, the generic
// register function reg_<op> that applies the scalar op_<op> lane by lane. The SIMD levels
// (stax_kernel_reg_avx2.h, stax_kernel_reg_avx512.h) specialize Reg for their machine
// registers and overload reg_<op> with intrinsics; overload resolution prefers those
// non-template overloads, and everything they do not cover falls back to the lane loops here
// (through store / load), so every (T, N) compiles and is correct at every level.
// Lane masks of a register are the low L bits of a uint64_t.
// Included by stax_kernel.h; not meant to be included directly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stax_kernel_convert.h"
#include "stax_kernel_scalar_ops.h"
#include "stax_kernel_traits.h"

namespace stax {
namespace detail {

// Selects an overload by register type (load16, convert_reg).
template <class R>
struct Tag {};

// L lanes of T in memory; the compiler may auto-vectorize the loops.
template <class T, int L>
struct Reg {
  using Elem = T;
  static constexpr int kLanes = L;
  T lane[L];

  static Reg zero() {
    Reg r;
    for (int l = 0; l < L; ++l) r.lane[l] = T(0);
    return r;
  }
  static Reg broadcast(T x) {
    Reg r;
    for (int l = 0; l < L; ++l) r.lane[l] = x;
    return r;
  }
  static Reg load(const T* p) {
    Reg r;
    __builtin_memcpy(r.lane, p, sizeof r.lane);
    return r;
  }
  // Lanes [0, count) from p, the rest 0; nothing past p[count - 1] is read.
  static Reg load_partial(const T* p, int64_t count) {
    Reg r;
    for (int l = 0; l < L; ++l) r.lane[l] = l < count ? p[l] : T(0);
    return r;
  }
  void store(T* p) const { __builtin_memcpy(p, lane, sizeof lane); }
  void store_partial(T* p, int64_t count) const {
    for (int l = 0; l < L && l < count; ++l) p[l] = lane[l];
  }
};

// ---- Lane-loop fallbacks, usable with any Reg (they only need load and store) ----
template <class R, class F>
inline R map1(const R& a, F f) {
  alignas(64) typename R::Elem x[R::kLanes];
  a.store(x);
  for (int l = 0; l < R::kLanes; ++l) x[l] = f(x[l]);
  return R::load(x);
}
template <class R, class F>
inline R map2(const R& a, const R& b, F f) {
  alignas(64) typename R::Elem x[R::kLanes], y[R::kLanes];
  a.store(x);
  b.store(y);
  for (int l = 0; l < R::kLanes; ++l) x[l] = f(x[l], y[l]);
  return R::load(x);
}
template <class R, class F>
inline uint64_t mask1(const R& a, F f) {
  alignas(64) typename R::Elem x[R::kLanes];
  a.store(x);
  uint64_t bits = 0;
  for (int l = 0; l < R::kLanes; ++l) bits |= static_cast<uint64_t>(f(x[l]) ? 1 : 0) << l;
  return bits;
}
template <class R, class F>
inline uint64_t mask2(const R& a, const R& b, F f) {
  alignas(64) typename R::Elem x[R::kLanes], y[R::kLanes];
  a.store(x);
  b.store(y);
  uint64_t bits = 0;
  for (int l = 0; l < R::kLanes; ++l) bits |= static_cast<uint64_t>(f(x[l], y[l]) ? 1 : 0) << l;
  return bits;
}

// The double register forms of the ops whose float form is Stax's own code (exp, log, the
// trigonometric, hyperbolic and error functions): SLEEF's vector routines at the AVX levels,
// which give the scalar level's bits. D is the level's double register, W its lanes, ISA
// SLEEF's suffix for the level (avx2, avx512f); STAX_R1 is the level's one-operand helper.
#define STAX_SLEEF_DOUBLE_REG_OPS(D, W, ISA)            \
  STAX_R1(D, exp, Sleef_finz_expd##W##_u10##ISA(x))     \
  STAX_R1(D, expm1, Sleef_finz_expm1d##W##_u10##ISA(x)) \
  STAX_R1(D, log, Sleef_finz_logd##W##_u10##ISA(x))     \
  STAX_R1(D, log2, Sleef_finz_log2d##W##_u10##ISA(x))   \
  STAX_R1(D, log10, Sleef_finz_log10d##W##_u10##ISA(x)) \
  STAX_R1(D, log1p, Sleef_finz_log1pd##W##_u10##ISA(x)) \
  STAX_R1(D, sin, Sleef_finz_sind##W##_u10##ISA(x))     \
  STAX_R1(D, cos, Sleef_finz_cosd##W##_u10##ISA(x))     \
  STAX_R1(D, tan, Sleef_finz_tand##W##_u10##ISA(x))     \
  STAX_R1(D, asin, Sleef_finz_asind##W##_u10##ISA(x))   \
  STAX_R1(D, acos, Sleef_finz_acosd##W##_u10##ISA(x))   \
  STAX_R1(D, atan, Sleef_finz_atand##W##_u10##ISA(x))   \
  STAX_R1(D, sinh, Sleef_finz_sinhd##W##_u10##ISA(x))   \
  STAX_R1(D, cosh, Sleef_finz_coshd##W##_u10##ISA(x))   \
  STAX_R1(D, tanh, Sleef_finz_tanhd##W##_u10##ISA(x))   \
  STAX_R1(D, atanh, Sleef_finz_atanhd##W##_u10##ISA(x)) \
  STAX_R1(D, erf, Sleef_finz_erfd##W##_u10##ISA(x))     \
  STAX_R1(D, erfc, Sleef_finz_erfcd##W##_u15##ISA(x))

// horner (stax_kernel_scalar_ops.h) on every lane: the same fused multiply-adds in the same
// order, through the level's reg_fma.
template <class R, size_t N>
inline R reg_horner(const float (&c)[N], const R& x) {
  R p = R::broadcast(c[N - 1]);
  for (size_t k = N - 1; k-- > 0;) p = reg_fma(p, x, R::broadcast(c[k]));
  return p;
}

// Lane l: bit l of `bits` ? a : b.
template <class R>
inline R reg_select(uint64_t bits, const R& a, const R& b) {
  alignas(64) typename R::Elem x[R::kLanes], y[R::kLanes];
  a.store(x);
  b.store(y);
  for (int l = 0; l < R::kLanes; ++l) x[l] = ((bits >> l) & 1) ? x[l] : y[l];
  return R::load(x);
}

#define STAX_REG_GENERIC1(name)                                      \
  template <class R>                                                 \
  inline R reg_##name(const R& a) {                                  \
    return map1(a, [](typename R::Elem x) { return op_##name(x); }); \
  }
#define STAX_REG_GENERIC2(name)                                                                \
  template <class R>                                                                           \
  inline R reg_##name(const R& a, const R& b) {                                                \
    return map2(a, b, [](typename R::Elem x, typename R::Elem y) { return op_##name(x, y); }); \
  }
#define STAX_REG_GENERIC_MASK1(name)                                  \
  template <class R>                                                  \
  inline uint64_t reg_##name(const R& a) {                            \
    return mask1(a, [](typename R::Elem x) { return op_##name(x); }); \
  }
#define STAX_REG_GENERIC_MASK2(name)                                                            \
  template <class R>                                                                            \
  inline uint64_t reg_##name(const R& a, const R& b) {                                          \
    return mask2(a, b, [](typename R::Elem x, typename R::Elem y) { return op_##name(x, y); }); \
  }

// The op lists: each X(name) names one op of that shape (ops_handler.h / pointwise_ops.cpp).
#define STAX_UNARY_OPS(X)                                                                        \
  X(neg)                                                                                         \
  X(abs)                                                                                         \
  X(sign)                                                                                        \
  X(reciprocal)                                                                                  \
  X(bitwise_not)                                                                                 \
  X(exp) X(exp2) X(expm1) X(log) X(log2) X(log10) X(log1p) X(sqrt) X(rsqrt) X(sin) X(cos) X(tan) \
      X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) X(acosh) X(atanh) X(erf) X(erfc)  \
          X(erfinv) X(sigmoid) X(relu) X(floor) X(ceil) X(round) X(trunc)
#define STAX_BINARY_OPS(X)                                                                        \
  X(add)                                                                                          \
  X(sub)                                                                                          \
  X(mul)                                                                                          \
  X(div)                                                                                          \
  X(truncdiv)                                                                                     \
  X(floordiv) X(remainder) X(fmod) X(pow) X(maximum) X(minimum) X(fmax) X(fmin) X(atan2) X(hypot) \
      X(copysign) X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(shift_left) X(shift_right)
#define STAX_COMPARE_OPS(X) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)
#define STAX_CLASSIFY_OPS(X) X(isnan) X(isinf)

STAX_UNARY_OPS(STAX_REG_GENERIC1)
STAX_BINARY_OPS(STAX_REG_GENERIC2)
STAX_COMPARE_OPS(STAX_REG_GENERIC_MASK2)
STAX_CLASSIFY_OPS(STAX_REG_GENERIC_MASK1)

// Lane reductions of one register (sum in pairwise order, like the butterflies).
template <class R, class F>
inline typename R::Elem reg_fold(const R& a, F f) {
  alignas(64) typename R::Elem x[R::kLanes];
  a.store(x);
  for (int width = R::kLanes / 2; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) x[l] = f(x[l], x[l + width]);
  }
  return x[0];
}
template <class R>
inline typename R::Elem reg_reduce_sum(const R& a) {
  return reg_fold(a, [](typename R::Elem x, typename R::Elem y) { return op_add(x, y); });
}
template <class R>
inline typename R::Elem reg_reduce_prod(const R& a) {
  return reg_fold(a, [](typename R::Elem x, typename R::Elem y) { return op_mul(x, y); });
}
template <class R>
inline typename R::Elem reg_reduce_max(const R& a) {
  return reg_fold(a, [](typename R::Elem x, typename R::Elem y) { return op_maximum(x, y); });
}
template <class R>
inline typename R::Elem reg_reduce_min(const R& a) {
  return reg_fold(a, [](typename R::Elem x, typename R::Elem y) { return op_minimum(x, y); });
}

}  // namespace detail
}  // namespace stax
