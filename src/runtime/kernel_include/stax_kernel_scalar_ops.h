// Scalar forms of the kernel-header ops: stax::op_<name>(x...) for every PointwiseOp of
// src/lowering/ops_handler.h and every element type it accepts, with PyTorch's CPU semantics
// (docs/kernel_header_api.md). The vector forms (stax_kernel_vec_ops.h) compute exactly these
// results lane by lane, so a vectorized main loop and its scalar tail agree bit for bit:
// transcendentals use SLEEF's deterministic entry points (finz = with FMA at the AVX levels,
// cinz = without FMA at the scalar level), which return the same bits for the 1-lane and the
// 8/16-lane forms, except float exp, expm1, log, tanh, erf, erfc and erfinv, which are code of
// their own here and in stax_kernel_float_exp_family.h, float sin, cos, tan, asin, acos and
// atan (stax_kernel_float_trig.h) and float log1p, sinh, cosh and atanh
// (stax_kernel_float_composed.h), with register forms that follow the same steps
// (stax_kernel_float_math_reg.h, stax_kernel_float_exp_family_reg.h,
// stax_kernel_float_trig_reg.h, stax_kernel_float_composed_reg.h).
// Included by stax_kernel.h; not meant to be included directly.
#pragma once

#include <sleef.h>

#include <cstddef>
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

// erfinv within eager's tolerance up to the last representable value below 1: double by a
// rational first guess refined by Newton steps (double_erfinv), float by a polynomial in
// w = -log(1 - y^2) of its own (float_erfinv_poly, vectorized in stax_kernel_float_math_reg.h).
inline double double_erfinv(double y);
inline float float_erfinv_poly(float y);
template <class T>
inline T float_erfinv(T y) {
  if constexpr (kSame<T, float>) {
    return float_erfinv_poly(y);
  } else {
    return double_erfinv(y);
  }
}

}  // namespace detail

// ---- SLEEF-backed scalar math: one overload per floating type ----
#define STAX_SCALAR_SLEEF1(name, fn, acc) \
  inline float op_##name(float x) {       \
    return STAX_SLEEF1(fn##f, acc)(x);    \
  }                                       \
  inline double op_##name(double x) {     \
    return STAX_SLEEF1(fn##d, acc)(x);    \
  }
STAX_SCALAR_SLEEF1(exp2, exp2, u10)
// The ops whose float form is Stax's own code: exp, expm1, log, log2, log10, tanh, erf and erfc
// (and erfinv, below) here and in stax_kernel_float_exp_family.h / stax_kernel_float_erf.h; sin,
// cos, tan, asin, acos, atan in stax_kernel_float_trig.h; log1p (below the large-argument
// threshold), sinh, cosh, atanh in stax_kernel_float_composed.h, all included at the end of this
// file. Eager's float forms are faster than SLEEF's u10 and less exact, and Stax must not be
// slower than eager; double is SLEEF's.
namespace detail {
inline float float_exp(float x);
enum class LogBase { E, Two, Ten };
template <LogBase B>
inline float float_log(float x);
inline float float_expm1(float x);
inline float float_tanh(float x);
inline float float_erf(float x);
inline float float_erfc(float x);
inline float float_sin(float x);
inline float float_cos(float x);
inline float float_tan(float x);
inline float float_asin(float x);
inline float float_acos(float x);
inline float float_atan(float x);
inline float float_log1p(float x);
inline float float_sinh(float x);
inline float float_cosh(float x);
inline float float_atanh(float x);
}  // namespace detail
#define STAX_SCALAR_OWN_FLOAT(name, sleef, acc, own) \
  inline double op_##name(double x) {                \
    return STAX_SLEEF1(sleef##d, acc)(x);            \
  }                                                  \
  inline float op_##name(float x) {                  \
    return detail::own(x);                           \
  }
STAX_SCALAR_OWN_FLOAT(exp, exp, u10, float_exp)
STAX_SCALAR_OWN_FLOAT(expm1, expm1, u10, float_expm1)
STAX_SCALAR_OWN_FLOAT(log, log, u10, float_log<detail::LogBase::E>)
STAX_SCALAR_OWN_FLOAT(log2, log2, u10, float_log<detail::LogBase::Two>)
STAX_SCALAR_OWN_FLOAT(log10, log10, u10, float_log<detail::LogBase::Ten>)
STAX_SCALAR_OWN_FLOAT(log1p_core, log1p, u10, float_log1p)
STAX_SCALAR_OWN_FLOAT(sin, sin, u10, float_sin)
STAX_SCALAR_OWN_FLOAT(cos, cos, u10, float_cos)
STAX_SCALAR_OWN_FLOAT(tan, tan, u10, float_tan)
STAX_SCALAR_OWN_FLOAT(asin, asin, u10, float_asin)
STAX_SCALAR_OWN_FLOAT(acos, acos, u10, float_acos)
STAX_SCALAR_OWN_FLOAT(atan, atan, u10, float_atan)
STAX_SCALAR_OWN_FLOAT(sinh, sinh, u10, float_sinh)
STAX_SCALAR_OWN_FLOAT(cosh, cosh, u10, float_cosh)
STAX_SCALAR_OWN_FLOAT(tanh, tanh, u10, float_tanh)
STAX_SCALAR_OWN_FLOAT(atanh, atanh, u10, float_atanh)
STAX_SCALAR_OWN_FLOAT(erf, erf, u10, float_erf)
STAX_SCALAR_OWN_FLOAT(erfc, erfc, u15, float_erfc)
#undef STAX_SCALAR_OWN_FLOAT
STAX_SCALAR_SLEEF1(sleef_asinh, asinh, u10)
STAX_SCALAR_SLEEF1(sleef_acosh, acosh, u10)
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
    return x > detail::LargeArgument<T>::log1p ? op_log(x) : op_log1p_core(x);             \
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

// c[0] + x (c[1] + x (... + x c[N-1])): Horner's scheme from the highest coefficient, one fused
// multiply-add per step, as every float form of its own evaluates its polynomials (the register
// forms through reg_horner, stax_kernel_reg_generic.h, in the same order, so lanes and the
// scalar form agree bit for bit).
template <size_t N>
inline float horner(const float (&c)[N], float x) {
  float p = c[N - 1];
  for (size_t k = N - 1; k-- > 0;) p = __builtin_fmaf(p, x, c[k]);
  return p;
}

// A rational first guess (central: y times a ratio of polynomials in y^2 for |y| <= 0.7;
// tail: in sqrt(-log((1 - |y|) / 2))), then two Newton steps. In the tail the steps solve
// erfc(x) = 1 - |y| rather than erf(x) = |y|: 1 - |y| is exact there (|y| >= 0.5) while
// erf(x) - |y| cancels to nothing near 1 (erfinv(1 - 2^-53) is 5.86; erf(5.86) rounds to 1),
// and erfc keeps its relative accuracy, so the result stays within an ulp up to the last
// double below 1.
inline double double_erfinv(double y) {
  const double a[4] = {0.886226899, -1.645349621, 0.914624893, -0.140543331};
  const double b[4] = {-2.118377725, 1.442710462, -0.329097515, 0.012229801};
  const double c[4] = {-1.970840454, -1.624906493, 3.429567803, 1.641345311};
  const double d[2] = {3.543889200, 1.637067800};
  const double y_abs = float_fabs(y);
  if (!(y_abs <= 1.0)) return __builtin_nan("");  // NaN and |y| > 1
  if (y_abs == 1.0) return float_copysign(__builtin_huge_val(), y);
  const double two_over_sqrt_pi = 1.12837916709551257390;
  if (y_abs <= 0.7) {
    const double z = y * y;
    const double num = ((a[3] * z + a[2]) * z + a[1]) * z + a[0];
    const double dem = (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0;
    double x = y * num / dem;
    for (int step = 0; step < 2; ++step) {
      x = x - (op_erf(x) - y) / (two_over_sqrt_pi * op_exp(-x * x));
    }
    return x;
  }
  const double tail = 1.0 - y_abs;  // exact
  const double z = float_sqrt(-op_log(tail / 2.0));
  const double num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
  const double dem = (d[1] * z + d[0]) * z + 1.0;
  double x = num / dem;
  for (int step = 0; step < 2; ++step) {
    x = x + (op_erfc(x) - tail) / (two_over_sqrt_pi * op_exp(-x * x));
  }
  return float_copysign(x, y);
}

// float exp within 1 ulp (about 0.5 ulp of the polynomial plus the final roundings):
// x = n ln2 + r with n = rint(x / ln2) and |r| <= ln2 / 2 (ln2 in two parts, so r is exact
// to float precision), e^r = 1 + r + r^2 Q(r) with Q of degree 4 fitted to relative minimax
// for this header (fit error 3e-9), and e^x = e^r 2^n, the scaling in two halves so that
// every factor is a normal float and only the last multiplication rounds (gradual underflow
// to subnormals and overflow to inf come out right). x is clamped to [-104, 89] first
// (e^-104 is below half the smallest subnormal, e^89 above the largest float); NaN stays.
struct ExpCoefficients {
  static constexpr float q[5] = {0.4999999403953552f, 0.1666652113199234f, 0.04166838899254799f,
                                 0.008368710055947304f, 0.001381461275741458f};
  static constexpr float kLog2e = 1.44269502162933349609f;
  static constexpr float kLn2Hi = 0.693145751953125f;  // 11 significant bits: n * hi is exact
  static constexpr float kLn2Lo = 1.42860676533018704e-06f;
  static constexpr float kLow = -104.0f;
  static constexpr float kHigh = 89.0f;
};

// 2^k for an integral float k in [-126, 127].
inline float float_pow2(float k) {
  return __builtin_bit_cast(float, static_cast<uint32_t>(static_cast<int32_t>(k) + 127) << 23);
}

// p * 2^n for an integral n in [-150, 128] and p in [0.7, 1.42], rounded once: in two
// halves, each factor a normal float, so p * 2^half is exact and only the last product rounds
// (the AVX-512 form is one vscalefps, which rounds the same exact product once).
inline float float_scale_pow2(float p, float n) {
  const float half = float_trunc(n * 0.5f);
  return p * float_pow2(half) * float_pow2(n - half);
}

inline float float_exp(float x) {
  using C = ExpCoefficients;
  x = x < C::kLow ? C::kLow : x;  // NaN stays NaN
  x = x > C::kHigh ? C::kHigh : x;
  const float n = float_rint(x * C::kLog2e);
  float r = __builtin_fmaf(-n, C::kLn2Hi, x);
  r = __builtin_fmaf(-n, C::kLn2Lo, r);
  float q = horner(C::q, r);
  const float p = __builtin_fmaf(r * r, q, r) + 1.0f;
  return float_scale_pow2(p, n);
}

// float log, log2 and log10 within 1.5 ulp: x = 2^e m with m in [sqrt(1/2), sqrt(2)) (from
// the bits of x - sqrt(1/2)'s bits; subnormals scaled by 2^23 first), f = m - 1 exact, and
// log(1 + f) = f - f^2 / 2 + f^3 L(f), L of degree 7 fitted to relative minimax for this
// header (fit error 6e-9); then e ln2 + log(1 + f), e log10(2) + log10(e) log(1 + f) or
// e + log2(e) log(1 + f) (exact for powers of two). x <= 0 and inf are fixed up last.
struct LogCoefficients {
  static constexpr float l[8] = {0.3333333134651184f,   -0.250008225440979f,  0.20001226663589478f,
                                 -0.16623356938362122f, 0.14201758801937103f, -0.13160192966461182f,
                                 0.1276157647371292f,   -0.07634469121694565f};
  static constexpr int32_t kSqrtHalfBits = 0x3f3504f3;
  static constexpr float kMinNormal = 1.17549435e-38f;
  static constexpr float kTwo23 = 8388608.0f;
  static constexpr float kLn2Hi = 0.693145751953125f;  // as ExpCoefficients
  static constexpr float kLn2Lo = 1.42860676533018704e-06f;
  static constexpr float kLog2e = 1.44269502162933349609f;
  static constexpr float kLog10e = 0.434294481903251827651f;
  static constexpr float kLog10Of2Hi = 0.301025390625f;  // 12 significant bits
  static constexpr float kLog10Of2Lo = 4.605039066518657e-06f;
};

template <LogBase B>
inline float float_log(float x) {
  using C = LogCoefficients;
  const bool subnormal = x < C::kMinNormal;
  const float y = subnormal ? x * C::kTwo23 : x;
  const int32_t ix = __builtin_bit_cast(int32_t, y) - C::kSqrtHalfBits;
  const float e = static_cast<float>(ix >> 23) - (subnormal ? 23.0f : 0.0f);
  const float f = __builtin_bit_cast(float, (ix & 0x7fffff) + C::kSqrtHalfBits) - 1.0f;
  const float s = f * f;
  float l = horner(C::l, f);
  const float t = __builtin_fmaf(s * f, l, __builtin_fmaf(-0.5f, s, f));  // log(1 + f)
  float r;
  if constexpr (B == LogBase::E) {
    r = __builtin_fmaf(e, C::kLn2Hi, __builtin_fmaf(e, C::kLn2Lo, t));
  } else if constexpr (B == LogBase::Two) {
    r = __builtin_fmaf(t, C::kLog2e, e);
  } else {
    r = __builtin_fmaf(e, C::kLog10Of2Hi, __builtin_fmaf(e, C::kLog10Of2Lo, t * C::kLog10e));
  }
  if (!(x > 0.0f)) return x == 0.0f ? -__builtin_huge_valf() : __builtin_nanf("");  // NaN too
  return x == __builtin_huge_valf() ? x : r;
}

// float erfinv(y) = y P(w), w = -log((1 - |y|)(1 + |y|)) (1 - |y| exact for |y| >= 1/2, so w
// keeps its accuracy up to the last float below 1): w < 5: P = C(w - 2.5), else
// P = T(sqrt(w) - 3), C and T of degree 9 fitted to relative minimax for this header (fit
// errors 6e-9 and 1e-8; within 3 ulp of the exact value overall). |y| > 1 makes the log's
// argument negative (NaN), |y| = 1 makes w inf and the result +-inf, with no special case.
struct ErfinvCoefficients {
  static constexpr float central[10] = {1.5014094114303589f,      0.24664027988910675f,
                                        -0.004177386872470379f,   -0.0012527419021353126f,
                                        0.00021834444487467408f,  -4.963345872965874e-06f,
                                        -3.4627053082658676e-06f, 4.6617017801509064e-07f,
                                        2.323269043813525e-08f,   -8.791020356113677e-09f};
  static constexpr float tail[10] = {2.832976818084717f,       1.0016748905181885f,
                                     0.00944519229233265f,     -0.0076369550079107285f,
                                     0.005687809083610773f,    -0.003598988289013505f,
                                     0.0014828538987785578f,   -5.376237822929397e-05f,
                                     -0.00030774727929383516f, 0.000113639522169251f};
  static constexpr float kSplit = 5.0f;
};

inline float float_erfinv_poly(float y) {
  using C = ErfinvCoefficients;
  const float a = float_fabs(y);
  const float w = -float_log<LogBase::E>((1.0f - a) * (1.0f + a));
  float p;
  if (w < C::kSplit) {
    const float u = w - 2.5f;
    p = horner(C::central, u);
  } else {
    const float u = float_sqrt(w) - 3.0f;
    p = horner(C::tail, u);
  }
  return y * p;
}

}  // namespace detail
}  // namespace stax

// The float forms of its own that this file declares above: erf, expm1, tanh and erfc (built on
// float_exp's steps), sin, cos, tan, asin, acos, atan, and log1p, sinh, cosh, atanh (composed
// from float_exp and float_log).
#include "stax_kernel_float_composed.h"
#include "stax_kernel_float_erf.h"
#include "stax_kernel_float_exp_family.h"
#include "stax_kernel_float_trig.h"
