// float log1p, atanh, sinh and cosh composed from Stax's own float exp and log
// (detail::float_exp, float_log of stax_kernel_scalar_ops.h) instead of SLEEF's u10 routines,
// which double keeps: SLEEF's are several times slower than eager's vectorized forms, these are
// faster, and within a small part of assert_close's tolerance of eager's everywhere
// (python/tests/test_unary_accuracy.py). Each form is branch-free arithmetic plus selects, so the
// register forms (stax_kernel_float_composed_reg.h) take exactly these steps on every lane and
// give the same bits.
// Included at the end of stax_kernel_scalar_ops.h; not meant to be included directly.
#pragma once

namespace stax {
namespace detail {

// log1p(x) = log(u) - ((u - 1) - x) / u with u = 1 + x: (u - 1) - x is the rounding error of u
// (exact while |x| <= 1; beyond, it is below an ulp of u and the correction is negligible), and
// log(u + d) = log(u) + d / u to first order. Where u rounds to 1, |x| is below half an ulp of 1
// and log1p(x) = x in float (which keeps -0 and subnormals); where u is 0 or inf the log alone is
// the answer (-inf, inf); u < 0 and NaN give NaN through the log.
inline float float_log1p(float x) {
  const float u = 1.0f + x;
  if (u == 1.0f) return x;
  const float l = float_log<LogBase::E>(u);
  if (u == 0.0f || u == __builtin_huge_valf()) return l;
  return l - ((u - 1.0f) - x) / u;
}

// atanh(x) = sign(x) log1p(2a / (1 - a)) / 2, a = |x|: on the absolute value, 1 - a is exact
// near 1 (where the result is large) and the quotient is positive, so nothing cancels. a = 1
// gives inf, a > 1 a quotient below -1 (NaN), NaN stays NaN, -0 gives -0.
inline float float_atanh(float x) {
  const float a = float_fabs(x);
  return float_copysign(0.5f * float_log1p((2.0f * a) / (1.0f - a)), x);
}

// sinh and cosh from e = exp(|x|): (e -+ 1/e) / 2. Past 88.72 e overflows and so does the result,
// as eager's vectorized sinh and cosh do (its scalar path, for a single element, stays finite
// up to 89.4; the vectorized one is what tensors take).
struct HyperbolicCoefficients {
  // |x| < kSmall: sinh(x) = x + x^3 (c3 + x^2 (c5 + ...)), the Taylor series to x^11 (the next
  // term is 1.6e-10 at 1), where e - 1/e would cancel.
  static constexpr float kSmall = 1.0f;
  static constexpr float taylor[5] = {1.66666672e-01f, 8.33333377e-03f, 1.98412701e-04f,
                                      2.75573188e-06f, 2.50521084e-08f};
};

inline float float_cosh(float x) {
  const float e = float_exp(float_fabs(x));
  return 0.5f * e + 0.5f / e;
}

inline float float_sinh(float x) {
  using C = HyperbolicCoefficients;
  const float a = float_fabs(x);
  if (a < C::kSmall) {
    const float s = x * x;
    float q = horner(C::taylor, s);
    return __builtin_fmaf(x * s, q, x);
  }
  const float e = float_exp(a);
  return float_copysign(0.5f * e - 0.5f / e, x);
}

}  // namespace detail
}  // namespace stax
