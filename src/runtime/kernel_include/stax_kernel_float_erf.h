// float erf: piecewise polynomials looked up per lane (see below); the register form is
// reg_float_erf in stax_kernel_float_math_reg.h.
// Included at the end of stax_kernel_scalar_ops.h; not meant to be included directly.
#pragma once

namespace stax {
namespace detail {

// float erf, faster than eager's vectorized one and within a small part of assert_close's
// tolerance of eager's (absolute error below 1.4e-7, 0.013 of the tolerance, on a dense sweep;
// relative error below 2.7e-7 for normal results, so erf(tiny) keeps eager's relative accuracy).
// Piecewise polynomials, no exp and no division: t = min(|x|, the float below 4) is split into
// eight intervals of width 1/2, u = 2t, i = floor(u), s = u - i in [0, 1) (all exact), and
// erf(t) = P_i(s) with P_i of degree 6, fitted for this header (least squares reweighted
// towards minimax; P_0 has no constant term and is fitted for relative error). A register looks
// its coefficients up by lane (a permute from a table of eight per degree) instead of blending
// ranges, so every lane costs the same and no branch follows the data. erf(4) rounds to 1 in
// float and P_7 gives exactly 1 at the clamp, so everything beyond (inf included) is 1; the sign
// is copied; NaN stays NaN.
// The polynomial uses fused multiply-adds at every level (the scalar form calls fmaf), so the
// register form (stax_kernel_float_math_reg.h), which takes exactly these steps, gives the same
// bits.
struct ErfCoefficients {
  static constexpr float kBelowFour = 3.99999976f;
  static constexpr int kDegree = 6;
  // c[k][i]: the coefficient of s^k on interval i.
  static constexpr float c[kDegree + 1][8] = {
      {0.0f, 0.520499885f, 0.842700779f, 0.966105163f, 0.995322287f, 0.999593019f, 0.999977887f,
       0.999999285f},
      {0.564189672f, 0.439389646f, 0.207553357f, 0.0594657026f, 0.0103335688f, 0.00108908233f,
       6.96096831e-05f, 2.69801694e-06f},
      {-5.25159521e-06f, -0.109821819f, -0.103769951f, -0.0446078181f, -0.0103348214f,
       -0.00136046403f, -0.000104160397f, -4.69587712e-06f},
      {-0.0469526835f, -0.0184609704f, 0.0172500443f, 0.0173980091f, 0.00603672955f, 0.00103794108f,
       9.68876629e-05f, 5.10389054e-06f},
      {-0.000279437198f, 0.0118663749f, 0.00447376212f, -0.00294219865f, -0.00218174234f,
       -0.000522165035f, -5.9978971e-05f, -3.66206859e-06f},
      {0.00409337785f, -0.000357553858f, -0.00242338306f, -0.000238121022f, 0.000460241165f,
       0.000166545709f, 2.3286555e-05f, 1.60982847e-06f},
      {-0.000545718474f, -0.000414793263f, 0.00032051673f, 0.000141558849f, -4.31909975e-05f,
       -2.6079686e-05f, -4.29746933e-06f, -3.26141816e-07f},
  };
};

inline float float_erf(float x) {
  using C = ErfCoefficients;
  if (x != x) return x;
  const float a = float_fabs(x);
  const float t = a > C::kBelowFour ? C::kBelowFour : a;
  const float u = t * 2.0f;
  const float f = float_floor(u);
  const float s = u - f;
  const int i = static_cast<int>(f);
  float p = C::c[C::kDegree][i];
  for (int k = C::kDegree - 1; k >= 0; --k) p = __builtin_fmaf(p, s, C::c[k][i]);
  return float_copysign(p, x);
}

}  // namespace detail
}  // namespace stax
