// Scalar forms of the kernel-header ops: stax::op_<name>(x...) for every PointwiseOp of
// src/lowering/ops_handler.h and every element type it accepts, with PyTorch's CPU semantics
// (docs/kernel_header_api.md). The vector forms (stax_kernel_vec_ops.h) compute exactly these
// results lane by lane, so a vectorized main loop and its scalar tail agree bit for bit:
// transcendentals use SLEEF's deterministic entry points (finz = with FMA at the AVX levels,
// cinz = without FMA at the scalar level), which return the same bits for the 1-lane and the
// 8/16-lane forms.
// Included by stax_kernel.h; not meant to be included directly.
#pragma once

#include <sleef.h>

#include <cstdint>

#include "stax_kernel_traits.h"

#if defined(STAX_SIMD_AVX512) || defined(STAX_SIMD_AVX2)
#define STAX_SLEEF1(fn, acc) Sleef_finz_##fn##1_##acc##purecfma
#else
#define STAX_SLEEF1(fn, acc) Sleef_cinz_##fn##1_##acc##purec
#endif

namespace stax {

using detail::Scalar;

namespace detail {

template <class T>
inline bool is_nan(T x) {
  if constexpr (kIsFloat<T>) {
    return x != x;
  } else {
    return false;
  }
}

// Two's-complement wrapping arithmetic (signed overflow is undefined in C++).
template <class T>
inline T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
}
template <class T>
inline T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b));
}
template <class T>
inline T wrap_mul(T a, T b) {
  // uint16_t * uint16_t promotes to (signed) int and may overflow: multiply as 32/64 bits.
  using U = Unsigned<T>;
  if constexpr (sizeof(T) < 4) {
    return static_cast<T>(static_cast<uint32_t>(static_cast<U>(a)) *
                          static_cast<uint32_t>(static_cast<U>(b)));
  } else {
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  }
}

// The float / double builtins (libm semantics, no <cmath>).
#define STAX_FLOAT_BUILTIN1(name, builtin) \
  template <class T>                       \
  inline T name(T x) {                     \
    if constexpr (kSame<T, float>) {       \
      return builtin##f(x);                \
    } else {                               \
      return builtin(x);                   \
    }                                      \
  }
#define STAX_FLOAT_BUILTIN2(name, builtin) \
  template <class T>                       \
  inline T name(T a, T b) {                \
    if constexpr (kSame<T, float>) {       \
      return builtin##f(a, b);             \
    } else {                               \
      return builtin(a, b);                \
    }                                      \
  }
STAX_FLOAT_BUILTIN1(float_floor, __builtin_floor)
STAX_FLOAT_BUILTIN1(float_ceil, __builtin_ceil)
STAX_FLOAT_BUILTIN1(float_trunc, __builtin_trunc)
STAX_FLOAT_BUILTIN1(float_rint, __builtin_rint)
STAX_FLOAT_BUILTIN1(float_sqrt, __builtin_sqrt)
STAX_FLOAT_BUILTIN1(float_fabs, __builtin_fabs)
STAX_FLOAT_BUILTIN2(float_fmod, __builtin_fmod)
STAX_FLOAT_BUILTIN2(float_copysign, __builtin_copysign)
#undef STAX_FLOAT_BUILTIN1
#undef STAX_FLOAT_BUILTIN2

// torch.div(a, b, rounding_mode="floor") on floats (ATen's div_floor_floating).
template <class T>
inline T float_floordiv(T a, T b) {
  if (b == 0) return a / b;
  const T mod = float_fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
  if (div == 0) return float_copysign(T(0), a / b);
  T floordiv = float_floor(div);
  if (div - floordiv > T(0.5)) floordiv += T(1);
  return floordiv;
}

// Integer truncating division; a zero divisor gives 0 (the kernel checks divisors itself),
// MIN / -1 wraps to MIN.
template <class T>
inline T int_truncdiv(T a, T b) {
  if (b == 0) return T(0);
  if constexpr (kIsSigned<T>) {
    if (b == T(-1)) return static_cast<T>(wrap_sub(T(0), a));
  }
  return static_cast<T>(a / b);
}
template <class T>
inline T int_fmod(T a, T b) {
  if (b == 0) return T(0);
  if constexpr (kIsSigned<T>) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}
template <class T>
inline T int_floordiv(T a, T b) {
  const T q = int_truncdiv(a, b);
  if constexpr (kIsSigned<T>) {
    if (b != 0 && b != T(-1) && (a % b != 0) && ((a < 0) != (b < 0))) return static_cast<T>(q - 1);
  }
  return q;
}
template <class T>
inline T int_remainder(T a, T b) {
  T r = int_fmod(a, b);
  if constexpr (kIsSigned<T>) {
    if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
  }
  return r;
}

// ATen's powi: exact repeated squaring, wrapping; negative exponents per torch.pow.
template <class T>
inline T int_pow(T base, T exp) {
  if constexpr (kIsSigned<T>) {
    if (exp < 0) {
      if (base == 1) return T(1);
      if (base == T(-1)) return (exp % 2) != 0 ? T(-1) : T(1);
      return T(0);
    }
  }
  T result = 1;
  Unsigned<T> e = static_cast<Unsigned<T>>(exp);
  while (e != 0) {
    if (e & 1u) result = wrap_mul(result, base);
    e = static_cast<Unsigned<T>>(e >> 1);
    base = wrap_mul(base, base);
  }
  return result;
}

// PyTorch's erfinv (ATen calc_erfinv): a rational initial guess refined by two Newton steps.
template <class T>
inline T float_erfinv(T y);

}  // namespace detail

// ---- SLEEF-backed scalar math: one overload per floating type ----
#define STAX_SCALAR_SLEEF1(name, fn, acc) \
  inline float op_##name(float x) {       \
    return STAX_SLEEF1(fn##f, acc)(x);    \
  }                                       \
  inline double op_##name(double x) {     \
    return STAX_SLEEF1(fn##d, acc)(x);    \
  }
STAX_SCALAR_SLEEF1(exp, exp, u10)
STAX_SCALAR_SLEEF1(exp2, exp2, u10)
STAX_SCALAR_SLEEF1(expm1, expm1, u10)
STAX_SCALAR_SLEEF1(log, log, u10)
STAX_SCALAR_SLEEF1(log2, log2, u10)
STAX_SCALAR_SLEEF1(log10, log10, u10)
STAX_SCALAR_SLEEF1(sleef_log1p, log1p, u10)
STAX_SCALAR_SLEEF1(sin, sin, u10)
STAX_SCALAR_SLEEF1(cos, cos, u10)
STAX_SCALAR_SLEEF1(tan, tan, u10)
STAX_SCALAR_SLEEF1(asin, asin, u10)
STAX_SCALAR_SLEEF1(acos, acos, u10)
STAX_SCALAR_SLEEF1(atan, atan, u10)
STAX_SCALAR_SLEEF1(sinh, sinh, u10)
STAX_SCALAR_SLEEF1(cosh, cosh, u10)
STAX_SCALAR_SLEEF1(tanh, tanh, u10)
STAX_SCALAR_SLEEF1(sleef_asinh, asinh, u10)
STAX_SCALAR_SLEEF1(sleef_acosh, acosh, u10)
STAX_SCALAR_SLEEF1(atanh, atanh, u10)
STAX_SCALAR_SLEEF1(erf, erf, u10)
STAX_SCALAR_SLEEF1(erfc, erfc, u15)
#undef STAX_SCALAR_SLEEF1

// SLEEF's log1p, asinh and acosh overflow to inf inside their own computation for large
// arguments (float: log1p from 2e38, asinh / acosh from about 2e19; double: log1p near
// DBL_MAX, asinh / acosh from about 1.4e154) where the results are finite (~89 for 3e38).
// Past kLargeArgument the identities below are exact to within the type's rounding:
// log1p(x) = log(x) + log1p(1/x) with 1/x below the last bit, asinh(x) = sign(x) (log|x| +
// log 2) + O(1/x^2), acosh(x) = log x + log 2 + O(1/x^2). The vector forms
// (stax_kernel_vec_ops.h) use the same thresholds.
namespace detail {
template <class T>
struct LargeArgument;
template <>
struct LargeArgument<float> {
  static constexpr float log1p = 1e37f;  // below SLEEF's overflow at 2e38
  static constexpr float inverse_hyperbolic = 1e18f;
};
template <>
struct LargeArgument<double> {
  static constexpr double log1p = 1e300;
  static constexpr double inverse_hyperbolic = 1e150;
};
template <class T>
constexpr T kLog2 = static_cast<T>(0.693147180559945309417232121458176568);
}  // namespace detail

#define STAX_SCALAR_LARGE_ARGUMENT_OPS(T)                                                  \
  inline T op_log1p(T x) {                                                                 \
    return x > detail::LargeArgument<T>::log1p ? op_log(x) : op_sleef_log1p(x);            \
  }                                                                                        \
  inline T op_asinh(T x) {                                                                 \
    const T a = x < T(0) ? -x : x;                                                         \
    if (!(a > detail::LargeArgument<T>::inverse_hyperbolic)) return op_sleef_asinh(x);     \
    const T r = op_log(a) + detail::kLog2<T>;                                              \
    return x < T(0) ? -r : r;                                                              \
  }                                                                                        \
  inline T op_acosh(T x) {                                                                 \
    return x > detail::LargeArgument<T>::inverse_hyperbolic ? op_log(x) + detail::kLog2<T> \
                                                            : op_sleef_acosh(x);           \
  }
STAX_SCALAR_LARGE_ARGUMENT_OPS(float)
STAX_SCALAR_LARGE_ARGUMENT_OPS(double)
#undef STAX_SCALAR_LARGE_ARGUMENT_OPS

inline float op_atan2(float a, float b) {
  return STAX_SLEEF1(atan2f, u10)(a, b);
}
inline double op_atan2(double a, double b) {
  return STAX_SLEEF1(atan2d, u10)(a, b);
}
inline float op_hypot(float a, float b) {
  return STAX_SLEEF1(hypotf, u05)(a, b);
}
inline double op_hypot(double a, double b) {
  return STAX_SLEEF1(hypotd, u05)(a, b);
}

// ---- Arithmetic ----
template <class T>
inline Scalar<T> op_add(T a, T b) {
  if constexpr (detail::kIsInt<T>) {
    return detail::wrap_add(a, b);
  } else {
    return a + b;
  }
}
template <class T>
inline Scalar<T> op_sub(T a, T b) {
  if constexpr (detail::kIsInt<T>) {
    return detail::wrap_sub(a, b);
  } else {
    return a - b;
  }
}
template <class T>
inline Scalar<T> op_mul(T a, T b) {
  if constexpr (detail::kIsInt<T>) {
    return detail::wrap_mul(a, b);
  } else {
    return a * b;
  }
}
template <class T>
inline Scalar<T> op_div(T a, T b) {
  return a / b;
}
template <class T>
inline Scalar<T> op_truncdiv(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::float_trunc(a / b);
  } else {
    return detail::int_truncdiv(a, b);
  }
}
template <class T>
inline Scalar<T> op_floordiv(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::float_floordiv(a, b);
  } else {
    return detail::int_floordiv(a, b);
  }
}
// torch.remainder: the sign of the divisor (ATen: fmod, then + b when the signs differ).
template <class T>
inline Scalar<T> op_remainder(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    T mod = detail::float_fmod(a, b);
    if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
    return mod;
  } else {
    return detail::int_remainder(a, b);
  }
}
template <class T>
inline Scalar<T> op_fmod(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::float_fmod(a, b);
  } else {
    return detail::int_fmod(a, b);
  }
}
// Floats: elementwise pow (SLEEF u10), with the exponents whose correctly rounded result is
// one IEEE operation taken exactly (2: x*x, -1: 1/x, 0.5: sqrt with pow's -0 / -inf cases).
template <class T>
inline Scalar<T> op_pow(T x, T e) {
  if constexpr (detail::kIsFloat<T>) {
    if (e == T(2)) return x * x;
    if (e == T(1)) return x;
    if (e == T(0)) return T(1);
    if (e == T(-1)) return T(1) / x;
    if constexpr (detail::kSame<T, float>) {
      return STAX_SLEEF1(powf, u10)(x, e);
    } else {
      return STAX_SLEEF1(powd, u10)(x, e);
    }
  } else {
    return detail::int_pow(x, e);
  }
}
template <class T>
inline Scalar<T> op_neg(T a) {
  if constexpr (detail::kIsInt<T>) {
    return detail::wrap_sub(T(0), a);
  } else {
    return -a;
  }
}
template <class T>
inline Scalar<T> op_abs(T a) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::float_fabs(a);
  } else if constexpr (detail::kIsSigned<T>) {
    return a < 0 ? detail::wrap_sub(T(0), a) : a;
  } else {
    return a;
  }
}
// (0 < x) - (x < 0): NaN and -0.0 give +0 (ATen's sign_kernel).
template <class T>
inline Scalar<T> op_sign(T a) {
  return static_cast<T>(static_cast<int>(T(0) < a) - static_cast<int>(a < T(0)));
}
template <class T>
inline Scalar<T> op_reciprocal(T a) {
  return T(1) / a;
}
// NaN-propagating; on equal operands (+0 / -0) the second one, like maxps / minps.
template <class T>
inline Scalar<T> op_maximum(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    if (a != a || b != b) return a + b;
  }
  if constexpr (detail::kIsBool<T>) {
    return a || b;
  } else {
    return a > b ? a : b;
  }
}
template <class T>
inline Scalar<T> op_minimum(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    if (a != a || b != b) return a + b;
  }
  if constexpr (detail::kIsBool<T>) {
    return a && b;
  } else {
    return a < b ? a : b;
  }
}
// NaN-ignoring (NaN only when both are).
template <class T>
inline Scalar<T> op_fmax(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    if (a != a) return b;
    if (b != b) return a;
  }
  return a > b ? a : b;
}
template <class T>
inline Scalar<T> op_fmin(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    if (a != a) return b;
    if (b != b) return a;
  }
  return a < b ? a : b;
}
template <class T>
inline Scalar<T> op_copysign(T a, T b) {
  return detail::float_copysign(a, b);
}

// ---- Bitwise and shifts ----
template <class T>
inline Scalar<T> op_bitwise_and(T a, T b) {
  return static_cast<T>(a & b);
}
template <class T>
inline Scalar<T> op_bitwise_or(T a, T b) {
  return static_cast<T>(a | b);
}
template <class T>
inline Scalar<T> op_bitwise_xor(T a, T b) {
  return static_cast<T>(a ^ b);
}
template <class T>
inline Scalar<T> op_bitwise_not(T a) {
  if constexpr (detail::kIsBool<T>) {
    return !a;
  } else {
    return static_cast<T>(~a);
  }
}
// ATen's shifts: the count is read as signed (uint8: as int8); a count < 0 or >= the bit
// width gives 0 for <<, and for >> the value shifted by width - 1 (0 or -1; unsigned: 0).
template <class T>
inline Scalar<T> op_shift_left(T a, T b) {
  const int64_t count =
      static_cast<int64_t>(detail::kSame<T, uint8_t> ? static_cast<int8_t>(b) : b);
  if (count < 0 || count >= detail::kBits<T>) return T(0);
  return static_cast<T>(static_cast<detail::Unsigned<T>>(a) << count);
}
template <class T>
inline Scalar<T> op_shift_right(T a, T b) {
  const int64_t count =
      static_cast<int64_t>(detail::kSame<T, uint8_t> ? static_cast<int8_t>(b) : b);
  constexpr int max_shift = detail::kBits<T> - (detail::kIsSigned<T> ? 1 : 0);
  if (count < 0 || count >= max_shift) return static_cast<T>(a >> max_shift);
  return static_cast<T>(a >> count);
}

// ---- Logical (nonzero is true) and comparisons: bool results ----
template <class T>
inline detail::Scalar<T, bool> op_logical_and(T a, T b) {
  return a != T(0) && b != T(0);
}
template <class T>
inline detail::Scalar<T, bool> op_logical_or(T a, T b) {
  return a != T(0) || b != T(0);
}
template <class T>
inline detail::Scalar<T, bool> op_logical_xor(T a, T b) {
  return (a != T(0)) != (b != T(0));
}
template <class T>
inline detail::Scalar<T, bool> op_logical_not(T a) {
  return a == T(0);
}
template <class T>
inline detail::Scalar<T, bool> op_eq(T a, T b) {
  return a == b;
}
template <class T>
inline detail::Scalar<T, bool> op_ne(T a, T b) {
  return a != b;
}
template <class T>
inline detail::Scalar<T, bool> op_lt(T a, T b) {
  return a < b;
}
template <class T>
inline detail::Scalar<T, bool> op_le(T a, T b) {
  return a <= b;
}
template <class T>
inline detail::Scalar<T, bool> op_gt(T a, T b) {
  return a > b;
}
template <class T>
inline detail::Scalar<T, bool> op_ge(T a, T b) {
  return a >= b;
}
template <class T>
inline detail::Scalar<T, bool> op_isnan(T a) {
  return detail::is_nan(a);
}
template <class T>
inline detail::Scalar<T, bool> op_isinf(T a) {
  if constexpr (detail::kIsFloat<T>) {
    return a == detail::max_value<T>() || a == detail::min_value<T>();
  } else {
    return false;
  }
}

// ---- Floating math that is not SLEEF ----
template <class T>
inline Scalar<T> op_sqrt(T x) {
  return detail::float_sqrt(x);
}
// Exactly 1 / sqrt(x) (two correctly rounded steps), never the approximate instruction.
template <class T>
inline Scalar<T> op_rsqrt(T x) {
  return T(1) / detail::float_sqrt(x);
}
// 1 / (1 + exp(-x)), as ATen's vectorized sigmoid.
template <class T>
inline Scalar<T> op_sigmoid(T x) {
  return T(1) / (T(1) + op_exp(-x));
}
template <class T>
inline Scalar<T> op_erfinv(T x) {
  return detail::float_erfinv(x);
}
// x > 0 ? x : +0; NaN stays NaN.
template <class T>
inline Scalar<T> op_relu(T x) {
  if constexpr (detail::kIsFloat<T>) {
    return !(x <= T(0)) ? x : T(0);
  } else {
    return x > T(0) ? x : T(0);
  }
}

// ---- Rounding: identity on integers ----
#define STAX_SCALAR_ROUNDING(name, fn)   \
  template <class T>                     \
  inline Scalar<T> op_##name(T x) {      \
    if constexpr (detail::kIsFloat<T>) { \
      return detail::fn(x);              \
    } else {                             \
      return x;                          \
    }                                    \
  }
STAX_SCALAR_ROUNDING(floor, float_floor)
STAX_SCALAR_ROUNDING(ceil, float_ceil)
STAX_SCALAR_ROUNDING(round, float_rint)  // half to even in the default rounding mode
STAX_SCALAR_ROUNDING(trunc, float_trunc)
#undef STAX_SCALAR_ROUNDING

template <class T>
inline Scalar<T> op_where(bool c, T a, T b) {
  return c ? a : b;
}

namespace detail {

template <class T>
inline T float_erfinv(T y) {
  const T a[4] = {T(0.886226899), T(-1.645349621), T(0.914624893), T(-0.140543331)};
  const T b[4] = {T(-2.118377725), T(1.442710462), T(-0.329097515), T(0.012229801)};
  const T c[4] = {T(-1.970840454), T(-1.624906493), T(3.429567803), T(1.641345311)};
  const T d[2] = {T(3.543889200), T(1.637067800)};
  const T y_abs = float_fabs(y);
  if (y_abs > T(1)) return T(__builtin_nan(""));
  if (y_abs == T(1)) return float_copysign(T(__builtin_huge_val()), y);
  T x;
  if (y_abs <= T(0.7)) {
    const T z = y * y;
    const T num = ((a[3] * z + a[2]) * z + a[1]) * z + a[0];
    const T dem = (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + T(1);
    x = y * num / dem;
  } else {
    const T z = float_sqrt(-op_log((T(1) - y_abs) / T(2)));
    const T num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
    const T dem = (d[1] * z + d[0]) * z + T(1);
    x = float_copysign(num, y) / dem;
  }
  // 2 / sqrt(pi), rounded to T as ATen does.
  const T two_over_sqrt_pi = static_cast<T>(2.0) / static_cast<T>(1.7724538509055160273);
  x = x - (op_erf(x) - y) / (two_over_sqrt_pi * op_exp(-x * x));
  x = x - (op_erf(x) - y) / (two_over_sqrt_pi * op_exp(-x * x));
  return x;
}

}  // namespace detail
}  // namespace stax
