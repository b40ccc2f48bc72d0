// The register forms of float sin, cos, tan, asin, acos and atan of stax_kernel_float_trig.h
// (detail::float_sin ...): the same steps on every lane, in the same order, with fused
// multiply-adds where the scalar form calls fmaf, so a lane gives the scalar form's bits. Where
// the scalar form branches, every branch is computed and the lanes select theirs; the lanes with
// |x| past TrigReduction::kHuge (rare) go through the scalar form itself, lane by lane, and only
// when some lane needs it. R is a float register of a SIMD level that provides, besides the
// reg_<op> of every op:
//   reg_fma(a, b, c)     a * b + c, rounded once;
//   reg_bit_set<B>(v)    the lanes whose bit B (of the float's representation) is set.
// Included by the SIMD level headers after those functions; not meant to be included directly.
#pragma once

#include "stax_kernel_float_trig.h"
#include "stax_kernel_reg_generic.h"

namespace stax {
namespace detail {

template <class R>
inline R reg_trig_shift(const R& v, float c) {
  return reg_fma(v, R::broadcast(c), R::broadcast(TrigReduction::kShifter));
}
template <class R>
inline R reg_trig_reduce(const R& a, const R& j) {
  using C = TrigReduction;
  R r = reg_fma(j, R::broadcast(C::kMinusPio2[0]), a);
  r = reg_fma(j, R::broadcast(C::kMinusPio2[1]), r);
  return reg_fma(j, R::broadcast(C::kMinusPio2[2]), r);
}
template <class R>
inline R reg_sin_poly(const R& y) {
  using C = SinCoefficients;
  const R s = reg_mul(y, y);
  R p = reg_horner(C::s, s);
  return reg_fma(reg_mul(y, s), p, y);
}
template <class R>
inline R reg_tan_sin_poly(const R& r) {
  using C = TanCoefficients;
  const R s = reg_mul(r, r);
  R p = reg_horner(C::s, s);
  return reg_fma(reg_mul(r, s), p, r);
}
template <class R>
inline R reg_tan_cos_poly(const R& r) {
  using C = TanCoefficients;
  const R s = reg_mul(r, r);
  R p = reg_horner(C::c, s);
  return reg_fma(reg_mul(s, s), p, reg_fma(R::broadcast(-0.5f), s, R::broadcast(1.0f)));
}
// The scalar form on the lanes of `huge` (r elsewhere); out of line, so that the common path
// keeps its registers.
template <class R, class F>
[[gnu::noinline]] R reg_trig_huge_lanes(R x, R r, uint64_t huge, F scalar_form) {
  return reg_select(huge, map1(x, scalar_form), r);
}
template <class R>
inline uint64_t reg_trig_huge(const R& a) {
  return reg_gt(a, R::broadcast(TrigReduction::kHuge));
}

template <class R>
inline R reg_float_sin(const R& x) {
  using C = TrigReduction;
  const R a = reg_abs(x);
  const R shifted = reg_trig_shift(a, C::kOneOverPi);
  const R n = reg_sub(shifted, R::broadcast(C::kShifter));
  const R v = reg_sin_poly(reg_trig_reduce(a, reg_add(n, n)));
  const R y = reg_select(reg_bit_set<0>(shifted) ^ reg_bit_set<31>(x), reg_neg(v), v);
  const uint64_t huge = reg_trig_huge(a);
  if (huge == 0) return y;
  return reg_trig_huge_lanes(x, y, huge, [](float z) { return float_sin(z); });
}
template <class R>
inline R reg_float_cos(const R& x) {
  using C = TrigReduction;
  const R a = reg_abs(x);
  const R shifted = reg_add(reg_fma(a, R::broadcast(C::kOneOverPi), R::broadcast(0.5f)),
                            R::broadcast(C::kShifter));
  const R n = reg_sub(shifted, R::broadcast(C::kShifter));
  const R v = reg_sin_poly(reg_trig_reduce(a, reg_sub(reg_add(n, n), R::broadcast(1.0f))));
  const R y = reg_select(reg_bit_set<0>(shifted), reg_neg(v), v);
  const uint64_t huge = reg_trig_huge(a);
  if (huge == 0) return y;
  return reg_trig_huge_lanes(x, y, huge, [](float z) { return float_cos(z); });
}
template <class R>
inline R reg_float_tan(const R& x) {
  using C = TrigReduction;
  const R a = reg_abs(x);
  const R shifted = reg_trig_shift(a, C::kTwoOverPi);
  const R r = reg_trig_reduce(a, reg_sub(shifted, R::broadcast(C::kShifter)));
  const R sn = reg_tan_sin_poly(r);
  const R cs = reg_tan_cos_poly(r);
  const uint64_t odd = reg_bit_set<0>(shifted);
  const R t = reg_div(reg_select(odd, cs, sn), reg_select(odd, sn, cs));
  const R y = reg_select(odd ^ reg_bit_set<31>(x), reg_neg(t), t);
  const uint64_t huge = reg_trig_huge(a);
  if (huge == 0) return y;
  return reg_trig_huge_lanes(x, y, huge, [](float z) { return float_tan(z); });
}

template <class R>
inline R reg_asin_poly(const R& w, const R& z) {
  using C = AsinCoefficients;
  R p = reg_horner(C::b, z);
  return reg_fma(reg_mul(w, z), p, w);
}
// asin_poly of both ranges of float_asin / float_acos: a > 1/2 takes w = sqrt((1 - a) / 2).
template <class R>
inline R reg_asin_reduced(const R& a, uint64_t upper) {
  const R z_upper = reg_mul(reg_sub(R::broadcast(1.0f), a), R::broadcast(0.5f));
  const R z = reg_select(upper, z_upper, reg_mul(a, a));
  const R w = reg_select(upper, reg_sqrt(z_upper), a);
  return reg_asin_poly(w, z);
}
template <class R>
inline R reg_float_asin(const R& x) {
  using C = AsinCoefficients;
  const R a = reg_abs(x);
  const uint64_t upper = reg_gt(a, R::broadcast(0.5f));
  const R p = reg_asin_reduced(a, upper);
  const R r = reg_select(
      upper,
      reg_sub(R::broadcast(C::kPio2Hi), reg_fma(R::broadcast(2.0f), p, R::broadcast(-C::kPio2Lo))),
      p);
  return reg_copysign(r, x);
}
template <class R>
inline R reg_float_acos(const R& x) {
  using C = AsinCoefficients;
  const R a = reg_abs(x);
  const uint64_t upper = reg_gt(a, R::broadcast(0.5f));
  const R p = reg_asin_reduced(a, upper);
  const R central =
      reg_sub(R::broadcast(C::kPio2Hi), reg_sub(reg_copysign(p, x), R::broadcast(C::kPio2Lo)));
  if (upper == 0) return central;
  const R positive = reg_mul(R::broadcast(2.0f), p);
  const R negative =
      reg_sub(R::broadcast(C::kPiHi), reg_fma(R::broadcast(2.0f), p, R::broadcast(-C::kPiLo)));
  const R tail = reg_select(reg_gt(x, R::broadcast(0.0f)), positive, negative);
  return reg_select(upper, tail, central);
}

template <class R>
inline R reg_float_atan(const R& x) {
  using C = AtanCoefficients;
  const R a = reg_abs(x);
  const uint64_t far = reg_gt(a, R::broadcast(C::kTan3Pi8));
  const uint64_t mid = reg_gt(a, R::broadcast(C::kTanPi8)) & ~far;
  const R one = R::broadcast(1.0f);
  R num = reg_select(mid, reg_sub(a, one), a);
  R den = reg_select(mid, reg_add(a, one), one);
  R base = reg_select(mid, R::broadcast(C::kPio4), R::broadcast(0.0f));
  num = reg_select(far, R::broadcast(-1.0f), num);
  den = reg_select(far, a, den);
  base = reg_select(far, R::broadcast(C::kPio2), base);
  const R u = reg_div(num, den);
  const R s = reg_mul(u, u);
  R p = reg_horner(C::t, s);
  return reg_copysign(reg_add(base, reg_fma(reg_mul(u, s), p, u)), x);
}

}  // namespace detail
}  // namespace stax

// The reg_<op> entry points of float sin, cos, tan, asin, acos and atan for a level whose float
// register is F (double keeps SLEEF's, defined by the level). Each level header expands it
// once, inside namespace stax::detail.
#define STAX_FLOAT_TRIG_REG_OPS(F) \
  inline F reg_sin(const F& a) {   \
    return reg_float_sin(a);       \
  }                                \
  inline F reg_cos(const F& a) {   \
    return reg_float_cos(a);       \
  }                                \
  inline F reg_tan(const F& a) {   \
    return reg_float_tan(a);       \
  }                                \
  inline F reg_asin(const F& a) {  \
    return reg_float_asin(a);      \
  }                                \
  inline F reg_acos(const F& a) {  \
    return reg_float_acos(a);      \
  }                                \
  inline F reg_atan(const F& a) {  \
    return reg_float_atan(a);      \
  }
