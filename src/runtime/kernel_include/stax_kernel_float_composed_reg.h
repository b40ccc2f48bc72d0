// The register forms of float log1p, atanh, sinh and cosh of stax_kernel_float_composed.h: the
// same steps on every lane in the same order, with fused multiply-adds where the scalar form
// calls fmaf, so a lane gives the scalar form's bits. Where the scalar form branches, every
// branch is computed and the lanes select theirs. R is a float register of a SIMD level with the
// reg_<op> of every op, reg_fma and the float exp and log of stax_kernel_float_math_reg.h.
// Included by the SIMD level headers after those functions; not meant to be included directly.
#pragma once

#include "stax_kernel_float_composed.h"
#include "stax_kernel_float_math_reg.h"

namespace stax {
namespace detail {

template <class R>
inline R reg_float_log1p(const R& x) {
  const R one = R::broadcast(1.0f);
  const R u = reg_add(one, x);
  const R l = reg_float_log<LogBase::E>(u);
  R r = reg_sub(l, reg_div(reg_sub(reg_sub(u, one), x), u));
  const uint64_t log_alone =
      reg_eq(u, R::broadcast(0.0f)) | reg_eq(u, R::broadcast(__builtin_huge_valf()));
  r = reg_select(log_alone, l, r);
  return reg_select(reg_eq(u, one), x, r);
}

template <class R>
inline R reg_float_atanh(const R& x) {
  const R a = reg_abs(x);
  const R q = reg_div(reg_mul(R::broadcast(2.0f), a), reg_sub(R::broadcast(1.0f), a));
  return reg_copysign(reg_mul(R::broadcast(0.5f), reg_float_log1p(q)), x);
}

template <class R>
inline R reg_float_cosh(const R& x) {
  const R e = reg_float_exp(reg_abs(x));
  return reg_add(reg_mul(R::broadcast(0.5f), e), reg_div(R::broadcast(0.5f), e));
}

template <class R>
inline R reg_float_sinh(const R& x) {
  using C = HyperbolicCoefficients;
  const R a = reg_abs(x);
  const R s = reg_mul(x, x);
  R q = reg_horner(C::taylor, s);
  const R small = reg_fma(reg_mul(x, s), q, x);
  const R e = reg_float_exp(a);
  const R large =
      reg_copysign(reg_sub(reg_mul(R::broadcast(0.5f), e), reg_div(R::broadcast(0.5f), e)), x);
  return reg_select(reg_lt(a, R::broadcast(C::kSmall)), small, large);
}

}  // namespace detail
}  // namespace stax

// The reg_<op> entry points of a level whose float register is F. Each level header expands it
// once, inside namespace stax::detail, after STAX_FLOAT_MATH_REG_OPS.
#define STAX_FLOAT_COMPOSED_REG_OPS(F) \
  inline F reg_log1p(const F& a) {     \
    return reg_float_log1p(a);         \
  }                                    \
  inline F reg_atanh(const F& a) {     \
    return reg_float_atanh(a);         \
  }                                    \
  inline F reg_sinh(const F& a) {      \
    return reg_float_sinh(a);          \
  }                                    \
  inline F reg_cosh(const F& a) {      \
    return reg_float_cosh(a);          \
  }
