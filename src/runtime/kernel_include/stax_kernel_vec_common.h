// Level-independent Vectorized<float> functions, written on top of the per-level
// primitives: rsqrt, sigmoid, pow with a scalar exponent, the outer accumulator of blocked
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

// The outer accumulator of a blocked vector sum: one double per lane (codegen/cascade_sum.h).
struct VecSumOuter {
  static constexpr int kLanes = Vectorized<float>::size();
  double lane[kLanes] = {};

  // Adds the block accumulator in and restarts it at +0.
  void fold(Vectorized<float>& block) {
    alignas(64) float b[kLanes];
    block.store(b);
    for (int l = 0; l < kLanes; ++l) lane[l] += b[l];
    block = Vectorized<float>(0.0f);
  }
  // The sum of all lanes, rounded once to float.
  float total() const {
    double s = 0.0;
    for (int l = 0; l < kLanes; ++l) s += lane[l];
    return static_cast<float>(s);
  }
  // Each lane rounded to float (one output per lane).
  Vectorized<float> lanes() const {
    alignas(64) float f[kLanes];
    for (int l = 0; l < kLanes; ++l) f[l] = static_cast<float>(lane[l]);
    return Vectorized<float>::loadu(f);
  }
};

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
