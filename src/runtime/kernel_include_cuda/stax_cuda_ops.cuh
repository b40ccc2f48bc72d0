// Scalar ops of generated CUDA kernels: stax::op_<name>(x...) for every PointwiseOp of
// src/lowering/ops_handler.h (`name` is op_info's, src/lowering/pointwise_ops.cpp) and every
// value element type the op accepts (bool, i8, u8, i16, i32, i64, float, double; all arguments
// one type, as the kernel IR guarantees).
//
// Why a header of its own: the CPU forms (src/runtime/kernel_include/stax_kernel_scalar_ops.h)
// are built on SLEEF and Stax's own float polynomials, which a GPU neither has nor wants. Here
// the semantics are PyTorch's CUDA kernels': float math in float and double math in double
// through the CUDA math library's accurate functions (expf, erff, tanhf, ...; never the
// __expf-style intrinsics), which is what eager CUDA calls, with the same NaN, signed-zero,
// integer-wrapping and shift rules as the CPU header. Differences from the CPU header, each
// following eager CUDA: maximum / minimum use fmaxf / fminf after the NaN checks (so on +0 vs -0
// the result is fmaxf's, not "the second operand"), rsqrt is rsqrtf / rsqrt, and float pow is
// powf / pow for every exponent (lowering emits the special exponents of a scalar pow as their
// own ops).
//
// Integer division by zero (truncdiv, floordiv, remainder, fmod): the CPU kernel sets an error
// flag; here the op returns 0 and never traps. The device error word comes later (§4.6), and
// the kernel checks divisors separately, so the value computed for a zero divisor is not used.
// Included by stax_cuda.cuh; not meant to be included directly.
#pragma once

#include "stax_cuda_types.cuh"

namespace stax {

namespace detail {

// Two's-complement wrapping arithmetic (signed overflow is undefined behaviour in C++):
// computed as unsigned long long and truncated to the type, since the narrow unsigned types
// would promote to (signed) int.
template <class T>
STAX_DEVICE T wrap_add(T a, T b) {
  return static_cast<T>(
      static_cast<Unsigned<T>>(static_cast<unsigned long long>(static_cast<Unsigned<T>>(a)) +
                               static_cast<unsigned long long>(static_cast<Unsigned<T>>(b))));
}
template <class T>
STAX_DEVICE T wrap_sub(T a, T b) {
  return static_cast<T>(
      static_cast<Unsigned<T>>(static_cast<unsigned long long>(static_cast<Unsigned<T>>(a)) -
                               static_cast<unsigned long long>(static_cast<Unsigned<T>>(b))));
}
template <class T>
STAX_DEVICE T wrap_mul(T a, T b) {
  return static_cast<T>(
      static_cast<Unsigned<T>>(static_cast<unsigned long long>(static_cast<Unsigned<T>>(a)) *
                               static_cast<unsigned long long>(static_cast<Unsigned<T>>(b))));
}

// The float / double CUDA math functions by type.
#define STAX_CUDA_MATH1(name, f_fn, d_fn) \
  STAX_DEVICE float name(float x) {       \
    return ::f_fn(x);                     \
  }                                       \
  STAX_DEVICE double name(double x) {     \
    return ::d_fn(x);                     \
  }
#define STAX_CUDA_MATH2(name, f_fn, d_fn)       \
  STAX_DEVICE float name(float a, float b) {    \
    return ::f_fn(a, b);                        \
  }                                             \
  STAX_DEVICE double name(double a, double b) { \
    return ::d_fn(a, b);                        \
  }
STAX_CUDA_MATH1(math_floor, floorf, floor)
STAX_CUDA_MATH1(math_ceil, ceilf, ceil)
STAX_CUDA_MATH1(math_trunc, truncf, trunc)
STAX_CUDA_MATH1(math_nearbyint, nearbyintf, nearbyint)
STAX_CUDA_MATH1(math_fabs, fabsf, fabs)
STAX_CUDA_MATH2(math_fmod, fmodf, fmod)
STAX_CUDA_MATH2(math_copysign, copysignf, copysign)
STAX_CUDA_MATH2(math_fmax, fmaxf, fmax)
STAX_CUDA_MATH2(math_fmin, fminf, fmin)
STAX_CUDA_MATH2(math_pow, powf, pow)
#undef STAX_CUDA_MATH1
#undef STAX_CUDA_MATH2

// torch.div(a, b, rounding_mode="floor") on floats (c10::div_floor_floating).
template <class T>
STAX_DEVICE T float_floordiv(T a, T b) {
  if (b == T(0)) return a / b;
  const T mod = math_fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && (b < T(0)) != (mod < T(0))) div -= T(1);
  if (div == T(0)) return math_copysign(T(0), a / b);
  T floordiv = math_floor(div);
  if (div - floordiv > T(0.5)) floordiv += T(1);
  return floordiv;
}

// Integer truncating division: a zero divisor gives 0 (see the top of this file), MIN / -1
// wraps to MIN.
template <class T>
STAX_DEVICE T int_truncdiv(T a, T b) {
  if (b == T(0)) return T(0);
  if constexpr (kIsSigned<T>) {
    if (b == T(-1)) return wrap_sub(T(0), a);
  }
  return static_cast<T>(a / b);
}
// C's %: the sign of the dividend; a zero divisor gives 0, MIN % -1 is 0.
template <class T>
STAX_DEVICE T int_fmod(T a, T b) {
  if (b == T(0)) return T(0);
  if constexpr (kIsSigned<T>) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}
// c10::div_floor_integer: truncation, minus one when the signs differ and the division is
// inexact.
template <class T>
STAX_DEVICE T int_floordiv(T a, T b) {
  const T q = int_truncdiv(a, b);
  if constexpr (kIsSigned<T>) {
    if (b != T(0) && b != T(-1) && (a % b) != T(0) && ((a < T(0)) != (b < T(0)))) {
      return static_cast<T>(q - 1);
    }
  }
  return q;
}
// torch.remainder: the sign of the divisor.
template <class T>
STAX_DEVICE T int_remainder(T a, T b) {
  T r = int_fmod(a, b);
  if constexpr (kIsSigned<T>) {
    if (r != T(0) && ((r < T(0)) != (b < T(0)))) r = wrap_add(r, b);
  }
  return r;
}

// ATen's powi: exact repeated squaring, wrapping; a negative exponent gives 1 for base 1,
// +-1 for base -1 and 0 otherwise.
template <class T>
STAX_DEVICE T int_pow(T base, T exp) {
  if constexpr (kIsSigned<T>) {
    if (exp < T(0)) {
      if (base == T(1)) return T(1);
      if (base == T(-1)) return (exp % 2) != 0 ? T(-1) : T(1);
      return T(0);
    }
  }
  T result = T(1);
  Unsigned<T> e = static_cast<Unsigned<T>>(exp);
  while (e != 0) {
    if (e & 1u) result = wrap_mul(result, base);
    e = static_cast<Unsigned<T>>(e >> 1);
    base = wrap_mul(base, base);
  }
  return result;
}

// ATen reads a shift count as signed (a uint8 count as int8).
template <class T>
STAX_DEVICE i64 shift_count(T b) {
  if constexpr (kSame<T, u8>) {
    return static_cast<i64>(static_cast<i8>(b));
  } else {
    return static_cast<i64>(b);
  }
}

}  // namespace detail

// ---- Arithmetic ----
template <class T>
STAX_DEVICE detail::Scalar<T> op_add(T a, T b) {
  if constexpr (detail::kIsInt<T>) {
    return detail::wrap_add(a, b);
  } else {
    return a + b;
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_sub(T a, T b) {
  if constexpr (detail::kIsInt<T>) {
    return detail::wrap_sub(a, b);
  } else {
    return a - b;
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_mul(T a, T b) {
  if constexpr (detail::kIsInt<T>) {
    return detail::wrap_mul(a, b);
  } else {
    return a * b;
  }
}
// Floating only (IEEE division; NVRTC's default -prec-div=true).
STAX_DEVICE float op_div(float a, float b) {
  return a / b;
}
STAX_DEVICE double op_div(double a, double b) {
  return a / b;
}
// Floats: trunc(a / b) (ATen's div_trunc).
template <class T>
STAX_DEVICE detail::Scalar<T> op_truncdiv(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_trunc(a / b);
  } else {
    return detail::int_truncdiv(a, b);
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_floordiv(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::float_floordiv(a, b);
  } else {
    return detail::int_floordiv(a, b);
  }
}
// torch.remainder: the sign of the divisor (ATen: fmod, then + b when the signs differ).
template <class T>
STAX_DEVICE detail::Scalar<T> op_remainder(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    T mod = detail::math_fmod(a, b);
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) mod += b;
    return mod;
  } else {
    return detail::int_remainder(a, b);
  }
}
// torch.fmod: the sign of the dividend.
template <class T>
STAX_DEVICE detail::Scalar<T> op_fmod(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_fmod(a, b);
  } else {
    return detail::int_fmod(a, b);
  }
}
// torch.pow of two tensors: powf / pow on floats (eager CUDA's pow_), exact powi on integers.
template <class T>
STAX_DEVICE detail::Scalar<T> op_pow(T x, T e) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_pow(x, e);
  } else {
    return detail::int_pow(x, e);
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_neg(T a) {
  if constexpr (detail::kIsInt<T>) {
    return detail::wrap_sub(T(0), a);
  } else {
    return -a;
  }
}
// Integers: |MIN| wraps to MIN.
template <class T>
STAX_DEVICE detail::Scalar<T> op_abs(T a) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_fabs(a);
  } else if constexpr (detail::kIsSigned<T>) {
    return a < T(0) ? detail::wrap_sub(T(0), a) : a;
  } else {
    return a;
  }
}
// (0 < x) - (x < 0): NaN and -0.0 give +0 (ATen's sign kernel).
template <class T>
STAX_DEVICE detail::Scalar<T> op_sign(T a) {
  if constexpr (detail::kIsSigned<T>) {
    return static_cast<T>(static_cast<int>(T(0) < a) - static_cast<int>(a < T(0)));
  } else {
    return static_cast<T>(a != T(0));
  }
}
// Floating only.
STAX_DEVICE float op_reciprocal(float a) {
  return 1.0f / a;
}
STAX_DEVICE double op_reciprocal(double a) {
  return 1.0 / a;
}
// NaN-propagating (torch.maximum on CUDA: a if a is NaN, else b if b is NaN, else max).
template <class T>
STAX_DEVICE detail::Scalar<T> op_maximum(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    if (a != a) return a;
    if (b != b) return b;
    return detail::math_fmax(a, b);
  } else if constexpr (detail::kIsBool<T>) {
    return a || b;
  } else {
    return a > b ? a : b;
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_minimum(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    if (a != a) return a;
    if (b != b) return b;
    return detail::math_fmin(a, b);
  } else if constexpr (detail::kIsBool<T>) {
    return a && b;
  } else {
    return a < b ? a : b;
  }
}
// NaN-ignoring (NaN only when both are): fmaxf / fmax; integers max.
template <class T>
STAX_DEVICE detail::Scalar<T> op_fmax(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_fmax(a, b);
  } else {
    return a > b ? a : b;
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_fmin(T a, T b) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_fmin(a, b);
  } else {
    return a < b ? a : b;
  }
}

// ---- Floating binary math ----
STAX_DEVICE float op_atan2(float a, float b) {
  return ::atan2f(a, b);
}
STAX_DEVICE double op_atan2(double a, double b) {
  return ::atan2(a, b);
}
STAX_DEVICE float op_hypot(float a, float b) {
  return ::hypotf(a, b);
}
STAX_DEVICE double op_hypot(double a, double b) {
  return ::hypot(a, b);
}
STAX_DEVICE float op_copysign(float a, float b) {
  return ::copysignf(a, b);
}
STAX_DEVICE double op_copysign(double a, double b) {
  return ::copysign(a, b);
}

// ---- Bitwise (integers and bool) and shifts (integers) ----
template <class T>
STAX_DEVICE detail::Scalar<T> op_bitwise_and(T a, T b) {
  return static_cast<T>(a & b);
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_bitwise_or(T a, T b) {
  return static_cast<T>(a | b);
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_bitwise_xor(T a, T b) {
  return static_cast<T>(a ^ b);
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_bitwise_not(T a) {
  if constexpr (detail::kIsBool<T>) {
    return !a;
  } else {
    return static_cast<T>(~a);
  }
}
// ATen's shifts: a count < 0 or >= the bit width gives 0 for <<; for >> a count < 0 or >= the
// width (signed: width - 1) gives the value shifted by width - 1 (0 or -1; unsigned: 0).
template <class T>
STAX_DEVICE detail::Scalar<T> op_shift_left(T a, T b) {
  const i64 count = detail::shift_count(b);
  if (count < 0 || count >= detail::kBits<T>) return T(0);
  using U = detail::Unsigned<T>;
  return static_cast<T>(
      static_cast<U>(static_cast<unsigned long long>(static_cast<U>(a)) << count));
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_shift_right(T a, T b) {
  const i64 count = detail::shift_count(b);
  constexpr int max_shift = detail::kBits<T> - (detail::kIsSigned<T> ? 1 : 0);
  if (count < 0 || count >= max_shift) return static_cast<T>(a >> max_shift);
  return static_cast<T>(a >> count);
}

// ---- Logical (nonzero is true) and comparisons: bool results ----
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_logical_and(T a, T b) {
  return a != T(0) && b != T(0);
}
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_logical_or(T a, T b) {
  return a != T(0) || b != T(0);
}
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_logical_xor(T a, T b) {
  return (a != T(0)) != (b != T(0));
}
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_logical_not(T a) {
  return a == T(0);
}
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_eq(T a, T b) {
  return a == b;
}
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_ne(T a, T b) {
  return a != b;
}
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_lt(T a, T b) {
  return a < b;
}
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_le(T a, T b) {
  return a <= b;
}
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_gt(T a, T b) {
  return a > b;
}
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_ge(T a, T b) {
  return a >= b;
}

// ---- Classification: bool results, false for integers and bool ----
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_isnan(T a) {
  if constexpr (detail::kIsFloat<T>) {
    return a != a;
  } else {
    return false;
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T, bool> op_isinf(T a) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_fabs(a) == detail::infinity<T>();
  } else {
    return false;
  }
}

// ---- Floating math: the CUDA math library, float in float, double in double ----
#define STAX_CUDA_FLOAT_OP(name, f_fn, d_fn) \
  STAX_DEVICE float op_##name(float x) {     \
    return ::f_fn(x);                        \
  }                                          \
  STAX_DEVICE double op_##name(double x) {   \
    return ::d_fn(x);                        \
  }
STAX_CUDA_FLOAT_OP(exp, expf, exp)
STAX_CUDA_FLOAT_OP(exp2, exp2f, exp2)
STAX_CUDA_FLOAT_OP(expm1, expm1f, expm1)
STAX_CUDA_FLOAT_OP(log, logf, log)
STAX_CUDA_FLOAT_OP(log2, log2f, log2)
STAX_CUDA_FLOAT_OP(log10, log10f, log10)
STAX_CUDA_FLOAT_OP(log1p, log1pf, log1p)
STAX_CUDA_FLOAT_OP(sqrt, sqrtf, sqrt)     // correctly rounded (-prec-sqrt=true)
STAX_CUDA_FLOAT_OP(rsqrt, rsqrtf, rsqrt)  // eager CUDA's rsqrt_wrapper (::rsqrt)
STAX_CUDA_FLOAT_OP(sin, sinf, sin)
STAX_CUDA_FLOAT_OP(cos, cosf, cos)
STAX_CUDA_FLOAT_OP(tan, tanf, tan)
STAX_CUDA_FLOAT_OP(asin, asinf, asin)
STAX_CUDA_FLOAT_OP(acos, acosf, acos)
STAX_CUDA_FLOAT_OP(atan, atanf, atan)
STAX_CUDA_FLOAT_OP(sinh, sinhf, sinh)
STAX_CUDA_FLOAT_OP(cosh, coshf, cosh)
STAX_CUDA_FLOAT_OP(tanh, tanhf, tanh)
STAX_CUDA_FLOAT_OP(asinh, asinhf, asinh)
STAX_CUDA_FLOAT_OP(acosh, acoshf, acosh)
STAX_CUDA_FLOAT_OP(atanh, atanhf, atanh)
STAX_CUDA_FLOAT_OP(erf, erff, erf)
STAX_CUDA_FLOAT_OP(erfc, erfcf, erfc)
STAX_CUDA_FLOAT_OP(erfinv, erfinvf, erfinv)
#undef STAX_CUDA_FLOAT_OP

// 1 / (1 + exp(-x)), as eager CUDA's sigmoid.
STAX_DEVICE float op_sigmoid(float x) {
  return 1.0f / (1.0f + ::expf(-x));
}
STAX_DEVICE double op_sigmoid(double x) {
  return 1.0 / (1.0 + ::exp(-x));
}
// x > 0 ? x : +0; NaN stays NaN, -0 gives +0.
template <class T>
STAX_DEVICE detail::Scalar<T> op_relu(T x) {
  if constexpr (detail::kIsFloat<T>) {
    return !(x <= T(0)) ? x : T(0);
  } else {
    return x > T(0) ? x : T(0);
  }
}

// ---- Rounding: identity on integers ----
template <class T>
STAX_DEVICE detail::Scalar<T> op_floor(T x) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_floor(x);
  } else {
    return x;
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_ceil(T x) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_ceil(x);
  } else {
    return x;
  }
}
// Half to even (torch.round: nearbyint in the default rounding mode).
template <class T>
STAX_DEVICE detail::Scalar<T> op_round(T x) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_nearbyint(x);
  } else {
    return x;
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T> op_trunc(T x) {
  if constexpr (detail::kIsFloat<T>) {
    return detail::math_trunc(x);
  } else {
    return x;
  }
}

// ---- Selection: cond is bool, the branches one type ----
template <class T>
STAX_DEVICE detail::Scalar<T> op_where(bool c, T a, T b) {
  return c ? a : b;
}

}  // namespace stax
