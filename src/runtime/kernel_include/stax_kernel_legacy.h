// The names of the pre-kernel-IR code generator (src/codegen), kept as thin wrappers over the
// kernel-header API until the kernel IR replaces it: Vectorized<float> (= Vec<float, W>),
// VecMask<float> (= Vec<bool, W>), the free vector functions (exp, cmp_gt, where, ...), the
// scalar *_f helpers, vec_reduce_*, and the Python-semantics index helpers stax_floordiv /
// stax_mod (global scope: generated index expressions call them unqualified).
// Included by stax_kernel.h last; not meant to be included directly.
#pragma once

#include <cstdint>

#include "stax_kernel_reduce.h"

inline int64_t stax_floordiv(int64_t a, int64_t b) {
  return stax::op_floordiv(a, b);
}
inline int64_t stax_mod(int64_t a, int64_t b) {
  return stax::op_remainder(a, b);
}

namespace stax {

template <class T>
using Vectorized = Vec<T, native_lanes<T>()>;
template <class T>
using VecMask = Vec<bool, native_lanes<T>()>;

// ---- Scalar helpers ----
inline float abs_f(float x) {
  return op_abs(x);
}
inline float neg_f(float x) {
  return op_neg(x);
}
inline float exp_f(float x) {
  return op_exp(x);
}
inline float log_f(float x) {
  return op_log(x);
}
inline float sqrt_f(float x) {
  return op_sqrt(x);
}
inline float rsqrt_f(float x) {
  return op_rsqrt(x);
}
inline float tanh_f(float x) {
  return op_tanh(x);
}
inline float sigmoid_f(float x) {
  return op_sigmoid(x);
}
inline float relu_f(float x) {
  return op_relu(x);
}
inline float maximum_f(float a, float b) {
  return op_maximum(a, b);
}
inline float minimum_f(float a, float b) {
  return op_minimum(a, b);
}
// x ** e for a uniform (scalar) exponent with the special cases of ATen's
// pow_tensor_scalar_optimized_kernel, else elementwise pow.
inline float pow_f(float x, float e) {
  if (e == 3.0f) return x * x * x;
  if (e == 0.5f) return op_sqrt(x);
  if (e == -0.5f) return op_rsqrt(x);
  if (e == -2.0f) return 1.0f / (x * x);
  return op_pow(x, e);
}

// ---- Vector functions ----
template <int N>
inline Vec<float, N> abs(const Vec<float, N>& x) {
  return op_abs(x);
}
template <int N>
inline Vec<float, N> neg(const Vec<float, N>& x) {
  return op_neg(x);
}
template <int N>
inline Vec<float, N> exp(const Vec<float, N>& x) {
  return op_exp(x);
}
template <int N>
inline Vec<float, N> log(const Vec<float, N>& x) {
  return op_log(x);
}
template <int N>
inline Vec<float, N> tanh(const Vec<float, N>& x) {
  return op_tanh(x);
}
template <int N>
inline Vec<float, N> sqrt(const Vec<float, N>& x) {
  return op_sqrt(x);
}
template <int N>
inline Vec<float, N> rsqrt(const Vec<float, N>& x) {
  return op_rsqrt(x);
}
template <int N>
inline Vec<float, N> sigmoid(const Vec<float, N>& x) {
  return op_sigmoid(x);
}
template <int N>
inline Vec<float, N> relu(const Vec<float, N>& x) {
  return op_relu(x);
}
template <int N>
inline Vec<float, N> maximum(const Vec<float, N>& a, const Vec<float, N>& b) {
  return op_maximum(a, b);
}
template <int N>
inline Vec<float, N> minimum(const Vec<float, N>& a, const Vec<float, N>& b) {
  return op_minimum(a, b);
}
template <int N>
inline Vec<float, N> pow(const Vec<float, N>& x, const Vec<float, N>& e) {
  return op_pow(x, e);
}
// Uniform exponent: the special cases of pow_f.
template <int N>
inline Vec<float, N> pow(const Vec<float, N>& x, float e) {
  if (e == 3.0f) return x * x * x;
  if (e == 0.5f) return op_sqrt(x);
  if (e == -0.5f) return op_rsqrt(x);
  if (e == -2.0f) return Vec<float, N>(1.0f) / (x * x);
  return op_pow(x, Vec<float, N>(e));
}
#define STAX_LEGACY_COMPARE(name)                                                  \
  template <int N>                                                                 \
  inline Vec<bool, N> cmp_##name(const Vec<float, N>& a, const Vec<float, N>& b) { \
    return op_##name(a, b);                                                        \
  }
STAX_COMPARE_OPS(STAX_LEGACY_COMPARE)
#undef STAX_LEGACY_COMPARE
template <class T, int N>
inline Vec<T, N> where(const Vec<bool, N>& c, const Vec<T, N>& a, const Vec<T, N>& b) {
  return op_where(c, a, b);
}
template <int N>
inline Vec<bool, N> logical_and(const Vec<bool, N>& a, const Vec<bool, N>& b) {
  return a & b;
}
template <int N>
inline Vec<bool, N> logical_or(const Vec<bool, N>& a, const Vec<bool, N>& b) {
  return a | b;
}
template <int N>
inline Vec<bool, N> logical_xor(const Vec<bool, N>& a, const Vec<bool, N>& b) {
  return a ^ b;
}
template <int N>
inline Vec<bool, N> logical_not(const Vec<bool, N>& a) {
  return !a;
}
template <int N>
inline float vec_reduce_sum(const Vec<float, N>& x) {
  return reduce_sum(x);
}
template <int N>
inline float vec_reduce_max(const Vec<float, N>& x) {
  return reduce_max(x);
}
template <int N>
inline float vec_reduce_min(const Vec<float, N>& x) {
  return reduce_min(x);
}

}  // namespace stax
