// Level-independent Vectorized<float> functions, written on top of the per-level
// primitives: rsqrt, sigmoid, pow with a scalar exponent, named logical mask operations.
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
