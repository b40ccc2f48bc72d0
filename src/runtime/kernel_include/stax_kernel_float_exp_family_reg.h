// The register forms of float_expm1, float_tanh and float_erfc (stax_kernel_float_exp_family.h):
// the same steps on every lane, in the same order, with a fused multiply-add where the scalar
// form calls fmaf, so a lane gives the scalar form's bits. R is a float register of a SIMD
// level providing the primitives listed in stax_kernel_float_math_reg.h.
// Included by stax_kernel_float_math_reg.h; not meant to be included directly.
#pragma once

#include "stax_kernel_float_exp_family.h"

namespace stax {
namespace detail {

template <class R>
inline R reg_float_expm1(const R& x) {
  using C = ExpCoefficients;
  using M = Expm1Constants;
  const R y = reg_min_keep_nan(R::broadcast(C::kHigh), reg_max_keep_nan(R::broadcast(M::kLow), x));
  const R n = reg_round(reg_mul(y, R::broadcast(C::kLog2e)));
  const R minus_n = reg_neg(n);
  R r = reg_fma(minus_n, R::broadcast(C::kLn2Hi), y);
  r = reg_fma(minus_n, R::broadcast(C::kLn2Lo), r);
  R q = reg_horner(C::q, r);
  const R u = reg_fma(reg_mul(r, r), q, r);
  // max(-n, kMinExponent) with a NaN -n giving the bound, like the scalar form's ?: (maxps
  // returns its second operand when either is NaN).
  const R k = reg_max_keep_nan(minus_n, R::broadcast(M::kMinExponent));
  const R one = R::broadcast(1.0f);
  const R result = reg_scale_pow2(reg_add(u, reg_sub(one, reg_scale_pow2(one, k))), n);
  const uint64_t zero = reg_eq(x, R::broadcast(0.0f));
  if (zero == 0) return result;
  return reg_select(zero, x, result);
}

template <class R>
inline R reg_float_tanh(const R& x) {
  using C = TanhCoefficients;
  const R one = R::broadcast(1.0f);
  const R a = reg_min_keep_nan(R::broadcast(C::kSaturation), reg_abs(x));
  const R s = reg_mul(a, a);
  R p = R::broadcast(C::p[4]);
  R q = R::broadcast(C::q[4]);
  for (int k = 3; k >= 0; --k) {
    p = reg_fma(p, s, R::broadcast(C::p[k]));
    q = reg_fma(q, s, R::broadcast(C::q[k]));
  }
  const R capped = reg_min_keep_nan(one, reg_div(reg_mul(a, p), q));
  return reg_copysign(reg_select(reg_eq(a, R::broadcast(C::kSaturation)), one, capped), x);
}

template <class R>
inline R reg_float_erfc(const R& x) {
  using C = ErfcCoefficients;
  using E = ExpCoefficients;
  const R a = reg_min_keep_nan(R::broadcast(C::kClamp), reg_abs(x));
  const R t = reg_div(R::broadcast(1.0f), reg_fma(a, R::broadcast(0.5f), R::broadcast(1.0f)));
  R g = reg_horner(C::g, t);
  const R hi = reg_mul(a, a);
  const R lo = reg_fma(a, a, reg_neg(hi));
  const R n = reg_round(reg_mul(hi, R::broadcast(C::kMinusLog2e)));
  R minus_r = reg_fma(n, R::broadcast(E::kLn2Hi), hi);
  minus_r = reg_fma(n, R::broadcast(E::kLn2Lo), minus_r);
  minus_r = reg_add(minus_r, lo);
  R q = reg_horner(C::q_neg, minus_r);
  const R e = reg_fma(reg_mul(minus_r, minus_r), q, reg_sub(R::broadcast(1.0f), minus_r));
  const R y = reg_scale_pow2(reg_mul(reg_mul(t, g), e), n);
  return reg_select(reg_lt(x, R::broadcast(0.0f)), reg_sub(R::broadcast(2.0f), y), y);
}

}  // namespace detail
}  // namespace stax
