// The register forms of the float exp, log, erfinv and erf of stax_kernel_scalar_ops.h
// (detail::float_exp, float_log, float_erfinv_poly, float_erf; those of expm1, tanh and erfc
// are in stax_kernel_float_exp_family_reg.h): the same steps on every
// lane, in the same order, with fused multiply-adds where the scalar form calls fmaf, so a lane
// gives the scalar form's bits. Where the scalar form branches on a range, both ranges are computed
// and blended (skipping the second when no lane needs it). R is a float register of a SIMD level
// that provides, besides the reg_<op> of every op:
//   reg_fma(a, b, c)            a * b + c, one rounding;
//   reg_max_keep_nan(bound, x)  max(bound, x), x when x is NaN (maxps returns its second
//   reg_min_keep_nan(bound, x)  operand when either is NaN), likewise min;
//   reg_log_split(y, &e, &f)    for y >= 2^-126: e = float(((bits(y) - kSqrtHalfBits) >> 23),
//                               arithmetic), f = float with bits ((bits(y) - kSqrtHalfBits) &
//                               0x7fffff) + kSqrtHalfBits, minus 1 (float_log's steps);
//   reg_table_index(f)          for integral float lanes f in [0, 8) (any lane for NaN), an index
//                               register for reg_table_lookup8;
//   reg_table_lookup8(i, t)     per lane, t[i] of an array of 8 floats (a permute);
//   reg_scale_pow2(p, n)        p * 2^n for integral float lanes n in [-150, 128] and p in
//                               [0.7, 1.42] (or any p whose product with 2^trunc(n / 2) is a
//                               normal float), rounded once (float_scale_pow2).
// Included by the SIMD level headers after those functions; not meant to be included directly.
#pragma once

#include "stax_kernel_scalar_ops.h"

namespace stax {
namespace detail {

template <class R>
inline R reg_float_exp(const R& in) {
  using C = ExpCoefficients;
  const R x = reg_min_keep_nan(R::broadcast(C::kHigh), reg_max_keep_nan(R::broadcast(C::kLow), in));
  const R n = reg_round(reg_mul(x, R::broadcast(C::kLog2e)));
  const R minus_n = reg_neg(n);
  R r = reg_fma(minus_n, R::broadcast(C::kLn2Hi), x);
  r = reg_fma(minus_n, R::broadcast(C::kLn2Lo), r);
  R q = reg_horner(C::q, r);
  const R p = reg_add(reg_fma(reg_mul(r, r), q, r), R::broadcast(1.0f));
  return reg_scale_pow2(p, n);
}

template <LogBase B, class R>
inline R reg_float_log(const R& x) {
  using C = LogCoefficients;
  const uint64_t subnormal = reg_lt(x, R::broadcast(C::kMinNormal));
  const R y = reg_select(subnormal, reg_mul(x, R::broadcast(C::kTwo23)), x);
  R e, f;
  reg_log_split(y, &e, &f);
  e = reg_sub(e, reg_select(subnormal, R::broadcast(23.0f), R::broadcast(0.0f)));
  const R s = reg_mul(f, f);
  R l = reg_horner(C::l, f);
  const R t = reg_fma(reg_mul(s, f), l, reg_fma(R::broadcast(-0.5f), s, f));
  R r;
  if constexpr (B == LogBase::E) {
    r = reg_fma(e, R::broadcast(C::kLn2Hi), reg_fma(e, R::broadcast(C::kLn2Lo), t));
  } else if constexpr (B == LogBase::Two) {
    r = reg_fma(t, R::broadcast(C::kLog2e), e);
  } else {
    r = reg_fma(e, R::broadcast(C::kLog10Of2Hi),
                reg_fma(e, R::broadcast(C::kLog10Of2Lo), reg_mul(t, R::broadcast(C::kLog10e))));
  }
  const uint64_t all = low_bits(R::kLanes);
  const uint64_t not_positive = reg_gt(x, R::broadcast(0.0f)) ^ all;  // NaN included
  if (not_positive != 0) {
    const R inf = R::broadcast(__builtin_huge_valf());
    const R special =
        reg_select(reg_eq(x, R::broadcast(0.0f)), reg_neg(inf), R::broadcast(__builtin_nanf("")));
    r = reg_select(not_positive, special, r);
  }
  return reg_select(reg_eq(x, R::broadcast(__builtin_huge_valf())), x, r);
}

template <class R>
inline R reg_float_erfinv(const R& y) {
  using C = ErfinvCoefficients;
  const R a = reg_abs(y);
  const R one = R::broadcast(1.0f);
  const R w = reg_neg(reg_float_log<LogBase::E>(reg_mul(reg_sub(one, a), reg_add(one, a))));
  const uint64_t central = reg_lt(w, R::broadcast(C::kSplit));
  const R u = reg_sub(w, R::broadcast(2.5f));
  R p = reg_horner(C::central, u);
  if (central != low_bits(R::kLanes)) {
    const R v = reg_sub(reg_sqrt(w), R::broadcast(3.0f));
    R q = reg_horner(C::tail, v);
    p = reg_select(central, p, q);
  }
  return reg_mul(y, p);
}

template <class R>
inline R reg_float_erf(const R& x) {
  using C = ErfCoefficients;
  // min keeps a NaN lane NaN; its table index is then arbitrary and its result NaN.
  const R t = reg_min_keep_nan(R::broadcast(C::kBelowFour), reg_abs(x));
  const R u = reg_mul(t, R::broadcast(2.0f));
  const R f = reg_floor(u);
  const R s = reg_sub(u, f);
  const auto i = reg_table_index(f);
  R p = reg_table_lookup8(i, C::c[C::kDegree]);
  // Unrolled, so that the tables are loaded once per kernel loop, not once per vector.
#pragma GCC unroll 8
  for (int k = C::kDegree - 1; k >= 0; --k) p = reg_fma(p, s, reg_table_lookup8(i, C::c[k]));
  return reg_copysign(p, x);
}

}  // namespace detail
}  // namespace stax

#include "stax_kernel_float_exp_family_reg.h"

// The reg_<op> entry points of a level whose float register is F and double register D:
// the float ops above, and sigmoid as 1 / (1 + exp(-x)) like the scalar op_sigmoid (through
// this level's reg_exp, so it is defined after it). Each level header expands it once, inside
// namespace stax::detail.
#define STAX_FLOAT_MATH_REG_OPS(F, D)                                                     \
  inline F reg_exp(const F& a) {                                                          \
    return reg_float_exp(a);                                                              \
  }                                                                                       \
  inline F reg_tanh(const F& a) {                                                         \
    return reg_float_tanh(a);                                                             \
  }                                                                                       \
  inline F reg_erf(const F& a) {                                                          \
    return reg_float_erf(a);                                                              \
  }                                                                                       \
  inline F reg_expm1(const F& a) {                                                        \
    return reg_float_expm1(a);                                                            \
  }                                                                                       \
  inline F reg_erfc(const F& a) {                                                         \
    return reg_float_erfc(a);                                                             \
  }                                                                                       \
  inline F reg_erfinv(const F& a) {                                                       \
    return reg_float_erfinv(a);                                                           \
  }                                                                                       \
  inline F reg_log(const F& a) {                                                          \
    return reg_float_log<LogBase::E>(a);                                                  \
  }                                                                                       \
  inline F reg_log2(const F& a) {                                                         \
    return reg_float_log<LogBase::Two>(a);                                                \
  }                                                                                       \
  inline F reg_log10(const F& a) {                                                        \
    return reg_float_log<LogBase::Ten>(a);                                                \
  }                                                                                       \
  inline F reg_sigmoid(const F& a) {                                                      \
    return reg_div(F::broadcast(1.0f), reg_add(F::broadcast(1.0f), reg_exp(reg_neg(a)))); \
  }                                                                                       \
  inline D reg_sigmoid(const D& a) {                                                      \
    return reg_div(D::broadcast(1.0), reg_add(D::broadcast(1.0), reg_exp(reg_neg(a))));   \
  }
