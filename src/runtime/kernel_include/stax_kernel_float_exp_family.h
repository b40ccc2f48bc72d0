// The scalar forms of float expm1, tanh and erfc (detail::float_expm1, float_tanh, float_erfc):
// Stax's own code, fitted for Stax (expm1 and erfc built from float_exp's range reduction in
// stax_kernel_scalar_ops.h), because SLEEF's u10 expm1 and u15 erfc cost 2.5x and 4.6x what
// eager's do and the former two-range tanh (odd polynomial, else 1 - 2 / (e^(2|x|) + 1)) cost
// 1.6x. double keeps SLEEF. The register forms (stax_kernel_float_exp_family_reg.h) take exactly
// these steps in the same order, with a fused multiply-add wherever this file calls fmaf, so
// every lane gives these bits.
// Included at the end of stax_kernel_scalar_ops.h; not meant to be included directly.
#pragma once

#include "stax_kernel_scalar_ops.h"

namespace stax {
namespace detail {

// float expm1 within about 1 ulp, in "minus one" form throughout: x = n ln2 + r as in
// float_exp (|r| <= ln2 / 2, ln2 in two parts), u = e^r - 1 = r + r^2 Q(r) with float_exp's Q
// (fitted to e^r's relative error 3e-9, so u's relative error is below 1e-8 at every r), and
// e^x - 1 = 2^n (u + (1 - 2^-n)): 1 - 2^-n is exact for |n| <= 24, the sum rounds once and the
// scaling is exact, so the result is the exact one rounded about once. Near 0 (n = 0) this is
// u itself, so small arguments keep their relative accuracy (expm1(1e-30) = 1e-30); only the
// sign of -0 is lost in r + r^2 Q (an exact +0 sum) and is put back at the end.
// x is clamped to [kLow, ExpCoefficients::kHigh]: e^-18 is below half an ulp of 1, so
// everything below gives exactly -1 (-inf included); e^89 overflows to inf (+inf included).
// 2^-n (float_scale_pow2(1, -n), exact) is taken for -n >= kMinExponent only (2^-30 is below
// half an ulp of 1, and 2^-n is no normal float for n > 126); a NaN n takes that bound too,
// and NaN stays NaN. float_scale_pow2 is exact here for any p, not only [0.7, 1.42]: the
// first half-scaling of p = u + (1 - 2^-n) (which lies in [-2^26, 1.42]) stays normal.
struct Expm1Constants {
  static constexpr float kLow = -18.0f;
  static constexpr float kMinExponent = -30.0f;
};

inline float float_expm1(float x) {
  using C = ExpCoefficients;
  using M = Expm1Constants;
  float y = x < M::kLow ? M::kLow : x;  // NaN stays NaN
  y = y > C::kHigh ? C::kHigh : y;
  const float n = float_rint(y * C::kLog2e);
  float r = __builtin_fmaf(-n, C::kLn2Hi, y);
  r = __builtin_fmaf(-n, C::kLn2Lo, r);
  float q = horner(C::q, r);
  const float u = __builtin_fmaf(r * r, q, r);
  const float minus_n = -n;
  const float k = minus_n > M::kMinExponent ? minus_n : M::kMinExponent;  // NaN: the bound
  const float result = float_scale_pow2(u + (1.0f - float_scale_pow2(1.0f, k)), n);
  return x == 0.0f ? x : result;
}

// float tanh as one rational function, for a = |x| below kSaturation:
//   tanh(a) = a P(a^2) / Q(a^2),
// P and Q of degree 4 with P(0) = Q(0) = 1, fitted for this header to relative minimax over
// [0, 9.25] (2.8e-8; 4.6e-8 with float coefficients; within 5.3 ulp with the roundings of the
// evaluation, worst near 8.8 where the ulp of a result just below 1 is 6e-8; 0.9 ulp on average
// beyond |x| = 1, where the former 1 - 2 / (e^(2|x|) + 1) averaged 0.25: the price of the speed,
// 0.03 of assert_close's tolerance at worst). No exponential:
// the register form's chain of dependent steps is two short polynomials side by side and one
// division, so it hides under the memory traffic (the exp-based forms did not). P(0) = Q(0) = 1
// makes small arguments exact (tanh(1e-7) = 1e-7: a * 1 / 1), and the sign is copied last
// (tanh(-0) = -0). From kSaturation on, tanh rounds to 1 (tanh(kSaturation) >= 1 - 2^-25, and
// it does not for the float below): a is clamped there and the clamped lanes give exactly 1,
// where the rational's roundings could give an ulp less; below, the result is capped at 1,
// which they could exceed by an ulp. NaN stays NaN.
struct TanhCoefficients {
  static constexpr float p[5] = {1.0f, 0.13367748260498047f, 0.0034797186963260174f,
                                 2.034433236985933e-05f, 1.2981829833336178e-08f};
  static constexpr float q[5] = {1.0f, 0.4670106768608093f, 0.025816863402724266f,
                                 0.0003259521326981485f, 7.625185389770195e-07f};
  static constexpr float kSaturation = 9.01091385f;
};

inline float float_tanh(float x) {
  using C = TanhCoefficients;
  const float abs_x = float_fabs(x);
  const float a = abs_x > C::kSaturation ? C::kSaturation : abs_x;  // NaN stays NaN
  const float s = a * a;
  float p = C::p[4];
  float q = C::q[4];
  for (int k = 3; k >= 0; --k) {
    p = __builtin_fmaf(p, s, C::p[k]);
    q = __builtin_fmaf(q, s, C::q[k]);
  }
  const float r = a * p / q;
  const float capped = r > 1.0f ? 1.0f : r;  // NaN stays NaN
  return float_copysign(a == C::kSaturation ? 1.0f : capped, x);
}

// float erfc with relative accuracy down to the subnormal tail (within a few ulp), for a = |x|:
//   erfc(a) = t G(t) e^(-a^2), t = 1 / (1 + a / 2) in [0.165, 1],
// G of degree 8 in t fitted for this header to relative minimax (4.3e-8 with the float
// coefficients, rounded one by one with the rest refitted) over a in [0, kClamp];
// G(t) = erfc(a) e^(a^2) / t falls smoothly from 1 to 0.34. e^(-a^2) is taken without rounding
// a^2 to float (its ulp is 7.6e-6 at a = 10, an error e^(-a^2) would amplify): a^2 = hi + lo
// exactly (lo by fmaf), and with n = rint(-hi log2(e)) the reduced argument is
// r = -(hi + n ln2 + lo): hi + n ln2hi is exact, n ln2lo and lo are added to it, so only
// roundings at the scale of |r| <= 0.35 remain. e^r is float_exp's polynomial written in
// -r (its odd coefficients negated: QNeg(s) = Q(-s), the same value), as (1 - (-r)) + r^2 QNeg,
// which spares the negations. t G e^r lies in [0.039, 1.42], so the scaling by 2^n rounds once
// (once also for subnormal results). The polynomial in t and the exponential do not depend on
// each other, which keeps the register form's chain of dependent steps short. erfc(kClamp) is
// below half the smallest subnormal, so the clamp gives 0 beyond (inf included); NaN stays NaN;
// negative x gives 2 - erfc(|x|), which cannot cancel (the result is in [1, 2]).
struct ErfcCoefficients {
  static constexpr float g[9] = {0.28208622336387634f, 0.2823787033557892f,  0.24307915568351746f,
                                 0.2027839869260788f,  -0.0268548596650362f, 0.27839964628219604f,
                                 -0.4874905049800873f, 0.28471535444259644f, -0.05909774824976921f};
  static constexpr float kClamp = 10.1f;
  // float_exp's q[k] times (-1)^k.
  static constexpr float q_neg[5] = {ExpCoefficients::q[0], -ExpCoefficients::q[1],
                                     ExpCoefficients::q[2], -ExpCoefficients::q[3],
                                     ExpCoefficients::q[4]};
  static constexpr float kMinusLog2e = -ExpCoefficients::kLog2e;
};

inline float float_erfc(float x) {
  using C = ErfcCoefficients;
  using E = ExpCoefficients;
  const float abs_x = float_fabs(x);
  const float a = abs_x > C::kClamp ? C::kClamp : abs_x;  // NaN stays NaN
  const float t = 1.0f / __builtin_fmaf(a, 0.5f, 1.0f);
  float g = horner(C::g, t);
  const float hi = a * a;
  const float lo = __builtin_fmaf(a, a, -hi);
  const float n = float_rint(hi * C::kMinusLog2e);
  float minus_r = __builtin_fmaf(n, E::kLn2Hi, hi);
  minus_r = __builtin_fmaf(n, E::kLn2Lo, minus_r);
  minus_r = minus_r + lo;
  float q = horner(C::q_neg, minus_r);
  const float e = __builtin_fmaf(minus_r * minus_r, q, 1.0f - minus_r);
  const float y = float_scale_pow2(t * g * e, n);
  return x < 0.0f ? 2.0f - y : y;
}

}  // namespace detail
}  // namespace stax
