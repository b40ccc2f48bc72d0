// Scalar forms of float sin, cos, tan, asin, acos and atan (op_sin(float) ...): code of Stax's
// own, faster than SLEEF's u10 routines that double keeps, and within a small part of
// torch.testing.assert_close's default tolerance of eager's (float: rtol 1.3e-6, about 11 ulp).
// The register forms (stax_kernel_float_trig_reg.h) take exactly these steps with fused
// multiply-adds where these call fmaf, so every lane gives the scalar form's bits. Where a
// scalar form branches, each branch is a sequence of operations the register form computes for
// every lane and selects from. The polynomials were fitted for this header (least squares on
// Chebyshev nodes, reweighted towards minimax, weighted for relative error); each fit error is
// below 1e-8 relative, the coefficients rounded to float.
// Included at the end of stax_kernel_scalar_ops.h; not meant to be included directly.
#pragma once

#include "stax_kernel_scalar_ops.h"

namespace stax {
namespace detail {

// ---- sin, cos, tan: argument reduction by multiples of pi/2 ----
// r = |x| - j pi/2 for an integer j (below), with pi/2 in three floats (Cody and Waite's
// scheme): each fused step r - j P_k rounds once, and for j >= 1 the first is exact (|x| and
// j P1 are multiples of 2^-24 and differ by less than 2), so r keeps its relative accuracy near
// the zeros, where the result is small (and near tan's poles). (cos takes j = -1 only for
// |x| < 1e-7, where |x| + P1 rounds by up to 6e-8 and sin of it is flat.) j and the integers it
// is made from are taken with the shifter: fma(v, c, 1.5 * 2^23) rounds v c (< 2^22) to an integer
// plus 1.5 * 2^23, whose low bits are that integer's, so parities come from the bits without a
// conversion. Past kHuge the error of the constants 1/pi and 2/pi can move the integer off by one
// and r beyond the range the polynomials were fitted on; the few lanes there take SLEEF's u10
// routine, whose reduction is exact for every float (inf too: NaN). sin and tan are odd: they work
// on |x| and flip the sign where x's sign bit is set, which also keeps sin(-0) = -0.
struct TrigReduction {
  static constexpr float kOneOverPi = 0.31830987334251404f;
  static constexpr float kTwoOverPi = 0.6366197466850281f;
  static constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23
  // -pi/2 in three parts (negated: the steps are fma(j, -P_k, r)).
  static constexpr float kMinusPio2[3] = {-1.5707963705062866f, 4.371138828673793e-08f,
                                          1.7151245100058819e-15f};
  static constexpr float kHuge = 65536.0f;
};
// sin and cos: one polynomial, sin(y) = y + y^3 S(y^2) on |y| <= pi/2 + 0.01, S of degree 3
// (fit error 7e-9 relative, each coefficient rounded to float before the next was fitted).
// sin(|x|) = (-1)^n sin(y) with n = rint(|x| / pi), y = |x| - 2n pi/2;
// cos(|x|) = (-1)^n sin(y) with n = rint(|x| / pi + 1/2), y = |x| - (2n - 1) pi/2.
struct SinCoefficients {
  static constexpr float s[4] = {-0.16666659712791443f, 0.00833306647837162f,
                                 -0.00019809434888884425f, 2.605112740639015e-06f};
};
// tan: sin(r) = r + r^3 S(r^2) and cos(r) = 1 - r^2 / 2 + r^4 C(r^2) on |r| <= pi/4 (1 + 2^-6)
// for j = rint(|x| 2/pi), S and C of degree 2 (fit errors 6e-9 and 1e-9 relative).
struct TanCoefficients {
  static constexpr float s[3] = {-0.16666653752326965f, 0.00833208579570055f,
                                 -0.00019505027739796788f};
  static constexpr float c[3] = {0.04166664183139801f, -0.001388721400871873f,
                                 2.442143340886105e-05f};
};

// Bit `bit` of a float's representation.
inline bool float_bit(float v, int bit) {
  return ((__builtin_bit_cast(uint32_t, v) >> bit) & 1u) != 0;
}
inline float trig_shift(float v, float c) {
  return __builtin_fmaf(v, c, TrigReduction::kShifter);
}
// |x| - j pi/2.
inline float trig_reduce(float a, float j) {
  using C = TrigReduction;
  float r = __builtin_fmaf(j, C::kMinusPio2[0], a);
  r = __builtin_fmaf(j, C::kMinusPio2[1], r);
  return __builtin_fmaf(j, C::kMinusPio2[2], r);
}
inline float sin_poly(float y) {
  using C = SinCoefficients;
  const float s = y * y;
  float p = horner(C::s, s);
  return __builtin_fmaf(y * s, p, y);
}
inline float tan_sin_poly(float r) {
  using C = TanCoefficients;
  const float s = r * r;
  float p = horner(C::s, s);
  return __builtin_fmaf(r * s, p, r);
}
inline float tan_cos_poly(float r) {
  using C = TanCoefficients;
  const float s = r * r;
  float p = horner(C::c, s);
  return __builtin_fmaf(s * s, p, __builtin_fmaf(-0.5f, s, 1.0f));
}

inline float float_sin(float x) {
  const float a = float_fabs(x);
  if (a > TrigReduction::kHuge) return STAX_SLEEF1(sinf, u10)(x);
  const float shifted = trig_shift(a, TrigReduction::kOneOverPi);  // n + 1.5 * 2^23
  const float n = shifted - TrigReduction::kShifter;
  const float v = sin_poly(trig_reduce(a, n + n));
  return float_bit(shifted, 0) != float_bit(x, 31) ? -v : v;
}
inline float float_cos(float x) {
  const float a = float_fabs(x);
  if (a > TrigReduction::kHuge) return STAX_SLEEF1(cosf, u10)(x);
  const float shifted =
      __builtin_fmaf(a, TrigReduction::kOneOverPi, 0.5f) + TrigReduction::kShifter;
  const float n = shifted - TrigReduction::kShifter;
  const float v = sin_poly(trig_reduce(a, (n + n) - 1.0f));
  return float_bit(shifted, 0) ? -v : v;
}
// tan(j pi/2 + r) = sin r / cos r for even j, -cos r / sin r for odd j: one division of the
// two polynomials (within 2 ulp of the quotient of the exact values).
inline float float_tan(float x) {
  const float a = float_fabs(x);
  if (a > TrigReduction::kHuge) return STAX_SLEEF1(tanf, u10)(x);
  const float shifted = trig_shift(a, TrigReduction::kTwoOverPi);  // j + 1.5 * 2^23
  const float r = trig_reduce(a, shifted - TrigReduction::kShifter);
  const float sn = tan_sin_poly(r);
  const float cs = tan_cos_poly(r);
  const bool odd = float_bit(shifted, 0);
  const float t = (odd ? cs : sn) / (odd ? sn : cs);
  return odd != float_bit(x, 31) ? -t : t;
}

// ---- asin, acos: one polynomial on [0, 1/2] ----
// asin(w) = w + w z B(z), z = w^2, for w <= 1/2 (B of degree 4, fit error 6e-9). Past 1/2,
// asin(a) = pi/2 - 2 asin(w) with w = sqrt(z), z = (1 - a) / 2 (1 - a is exact there), and
// acos follows from the same w: acos(x) = pi/2 - asin(x) for |x| <= 1/2, 2 asin(w) for x > 1/2
// and pi - 2 asin(w) for x < -1/2 (pi/2 and pi in two parts). |x| > 1 makes z negative and the
// square root NaN; |x| = 1 gives z = 0 and asin = +-pi/2, acos(1) = +0 and acos(-1) = pi.
struct AsinCoefficients {
  static constexpr float b[5] = {0.16666752099990845f, 0.07495297491550446f, 0.04547036811709404f,
                                 0.02417956106364727f, 0.04216621816158295f};
  static constexpr float kPio2Hi = 1.5707963705062866f;
  static constexpr float kPio2Lo = -4.371138828673793e-08f;
  static constexpr float kPiHi = 3.1415927410125732f;
  static constexpr float kPiLo = -8.742277657347586e-08f;
};
// asin(w) for w = the reduced argument, z = w^2 (or (1 - a) / 2).
inline float asin_poly(float w, float z) {
  using C = AsinCoefficients;
  float p = horner(C::b, z);
  return __builtin_fmaf(w * z, p, w);
}
inline float float_asin(float x) {
  using C = AsinCoefficients;
  const float a = float_fabs(x);
  float r;
  if (a > 0.5f) {
    const float z = (1.0f - a) * 0.5f;
    const float p = asin_poly(float_sqrt(z), z);
    r = C::kPio2Hi - __builtin_fmaf(2.0f, p, -C::kPio2Lo);
  } else {
    r = asin_poly(a, a * a);  // NaN takes this branch
  }
  return float_copysign(r, x);
}
// acos(x) = pi/2 - sign(x) p for |x| <= 1/2, 2 p for x > 1/2, pi - 2 p for x < -1/2, the
// constants' low parts subtracted from the product first.
inline float float_acos(float x) {
  using C = AsinCoefficients;
  const float a = float_fabs(x);
  if (a > 0.5f) {
    const float z = (1.0f - a) * 0.5f;
    const float p = asin_poly(float_sqrt(z), z);
    if (x > 0.0f) return 2.0f * p;
    return C::kPiHi - __builtin_fmaf(2.0f, p, -C::kPiLo);
  }
  const float p = asin_poly(a, a * a);
  return C::kPio2Hi - (float_copysign(p, x) - C::kPio2Lo);  // p >= 0
}

// ---- atan: reduced to |u| <= tan(pi/8) ----
// atan(a) = base + atan(u): a <= tan(pi/8): u = a, base 0; a <= tan(3pi/8): u = (a - 1) / (a + 1),
// base pi/4; beyond: u = -1 / a, base pi/2 (inf gives u = -0 and pi/2); one division of the
// selected numerator and denominator. atan(u) = u + u^3 A(u^2), A of degree 3 (fit error 2e-8;
// base rounded to float adds at most 4e-8 absolute, within 3 ulp overall: the division is the
// bottleneck here, so every other operation counts). The sign of x is copied last
// (atan(-0) = -0); NaN fails both comparisons and stays NaN.
struct AtanCoefficients {
  static constexpr float t[4] = {-0.3333294987678528f, 0.19977706670761108f, -0.13877642154693604f,
                                 0.08053604513406754f};
  static constexpr float kTanPi8 = 0.4142135679721832f;
  static constexpr float kTan3Pi8 = 2.4142136573791504f;
  static constexpr float kPio4 = 0.7853981852531433f;
  static constexpr float kPio2 = 1.5707963705062866f;
};
inline float float_atan(float x) {
  using C = AtanCoefficients;
  const float a = float_fabs(x);
  float num = a, den = 1.0f, base = 0.0f;
  if (a > C::kTan3Pi8) {
    num = -1.0f;
    den = a;
    base = C::kPio2;
  } else if (a > C::kTanPi8) {
    num = a - 1.0f;
    den = a + 1.0f;
    base = C::kPio4;
  }
  const float u = num / den;
  const float s = u * u;
  float p = horner(C::t, s);
  return float_copysign(base + __builtin_fmaf(u * s, p, u), x);
}

}  // namespace detail
}  // namespace stax
