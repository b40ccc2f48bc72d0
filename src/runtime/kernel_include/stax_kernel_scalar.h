// Scalar math helpers for scalar-form kernels. Each matches the element semantics of the
// Vectorized<float> function of the same name (stax_kernel_vec_*.h): transcendental
// functions use SLEEF u10 (scalar entry points), comparisons follow IEEE, and
// maximum/minimum/relu propagate NaN. Also: Python-semantics index helpers.
// Included by stax_kernel.h; not meant to be included directly.
#pragma once

#include <sleef.h>

#include <cmath>
#include <cstdint>

// Floor division and modulo with Python semantics (the result of stax_mod has the sign of
// b). Global scope: generated index expressions call them unqualified.
inline int64_t stax_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

inline int64_t stax_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

namespace stax {

inline float abs_f(float x) {
  return std::fabs(x);
}
inline float neg_f(float x) {
  return -x;
}
inline float exp_f(float x) {
  return Sleef_expf_u10(x);
}
inline float log_f(float x) {
  return Sleef_logf_u10(x);
}
inline float sqrt_f(float x) {
  return std::sqrt(x);
}
// Exactly 1 / sqrt(x) (two correctly rounded steps), never an approximation.
inline float rsqrt_f(float x) {
  return 1.0f / std::sqrt(x);
}
inline float tanh_f(float x) {
  return Sleef_tanhf_u10(x);
}
inline float sigmoid_f(float x) {
  return 1.0f / (1.0f + exp_f(-x));
}
// x > 0 ? x : +0, NaN stays NaN.
inline float relu_f(float x) {
  return !(x <= 0.0f) ? x : 0.0f;
}
// NaN if either input is NaN (like torch.maximum / torch.minimum).
inline float maximum_f(float a, float b) {
  if (a != a || b != b) return a + b;
  return a > b ? a : b;
}
inline float minimum_f(float a, float b) {
  if (a != a || b != b) return a + b;
  return a < b ? a : b;
}
// Adds a block sum of a blocked float sum into its double outer accumulator and restarts the
// block at +0 (see codegen/cascade_sum.h).
inline void cascade_fold(double& outer, float& block) {
  outer += block;
  block = 0.0f;
}
// x ** e with PyTorch's special-cased exponents, else SLEEF powf (u10).
inline float pow_f(float x, float e) {
  if (e == 2.0f) return x * x;
  if (e == 3.0f) return x * x * x;
  if (e == 0.5f) return sqrt_f(x);
  if (e == -0.5f) return rsqrt_f(x);
  if (e == -1.0f) return 1.0f / x;
  if (e == -2.0f) return 1.0f / (x * x);
  if (e == 1.0f) return x;
  if (e == 0.0f) return 1.0f;
  return Sleef_powf_u10(x, e);
}

}  // namespace stax
