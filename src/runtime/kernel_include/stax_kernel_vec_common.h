// Level-independent Vectorized<float> functions, written on top of the per-level
// primitives: rsqrt, sigmoid, pow with a scalar exponent, the compensated fold of blocked
// sums, named logical mask operations.
// Included by stax_kernel.h after the level-specific header.
#pragma once

namespace stax {

// Exactly 1 / sqrt(x) (not the approximate rsqrt instruction).
inline Vectorized<float> rsqrt(const Vectorized<float>& x) {
  return Vectorized<float>(1.0f) / sqrt(x);
}

// 1 / (1 + exp(-x)).
inline Vectorized<float> sigmoid(const Vectorized<float>& x) {
  const Vectorized<float> one(1.0f);
  return one / (one + exp(-x));
}

// x ** e for a uniform exponent, with PyTorch's special cases (same as stax::pow_f).
inline Vectorized<float> pow(const Vectorized<float>& x, float e) {
  if (e == 2.0f) return x * x;
  if (e == 3.0f) return x * x * x;
  if (e == 0.5f) return sqrt(x);
  if (e == -0.5f) return rsqrt(x);
  if (e == -1.0f) return Vectorized<float>(1.0f) / x;
  if (e == -2.0f) return Vectorized<float>(1.0f) / (x * x);
  if (e == 1.0f) return x;
  if (e == 0.0f) return Vectorized<float>(1.0f);
  return pow(x, Vectorized<float>(e));
}

// Lane by lane, the compensated fold of a block accumulator (stax::cascade_fold for float).
inline void cascade_fold(Vectorized<float>& sum, Vectorized<float>& comp,
                         Vectorized<float>& block) {
  const Vectorized<float> zero(0.0f);
  const Vectorized<float> t = sum + block;
  const Vectorized<float> err =
      where(cmp_ge(abs(sum), abs(block)), (sum - t) + block, (block - t) + sum);
  comp = comp + where(cmp_eq(t - t, zero), err, zero);
  sum = t;
  block = zero;
}

inline VecMask<float> logical_and(const VecMask<float>& a, const VecMask<float>& b) {
  return a & b;
}
inline VecMask<float> logical_or(const VecMask<float>& a, const VecMask<float>& b) {
  return a | b;
}
inline VecMask<float> logical_xor(const VecMask<float>& a, const VecMask<float>& b) {
  return a ^ b;
}
inline VecMask<float> logical_not(const VecMask<float>& a) {
  return !a;
}

}  // namespace stax
