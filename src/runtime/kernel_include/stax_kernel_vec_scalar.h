// Vectorized<float> and VecMask<float> with one lane, for kernels built without a SIMD
// level: the same API as the AVX2/AVX-512 versions, implemented with the scalar helpers
// of stax_kernel_scalar.h so vector-form and scalar-form code agree exactly.
// Included by stax_kernel.h when no STAX_SIMD_* macro is defined.
#pragma once

#include <cstdint>

namespace stax {

template <>
struct Vectorized<float> {
  float v;

  static constexpr int size() { return 1; }
  Vectorized() : v(0.0f) {}
  Vectorized(float s) : v(s) {}

  static Vectorized loadu(const float* p) { return Vectorized(*p); }
  static Vectorized loadu(const float* p, int64_t count) {
    return Vectorized(count >= 1 ? *p : 0.0f);
  }
  void store(float* p) const { *p = v; }
  void store(float* p, int64_t count) const {
    if (count >= 1) *p = v;
  }
  template <class F>
  static Vectorized from_lanes(F f) {
    return Vectorized(static_cast<float>(f(int64_t{0})));
  }
  template <class F>
  static Vectorized from_lanes(F f, int64_t count) {
    return Vectorized(count >= 1 ? static_cast<float>(f(int64_t{0})) : 0.0f);
  }
  static Vectorized set(const Vectorized& a, const Vectorized& b, int64_t count) {
    return count >= 1 ? b : a;
  }

  friend Vectorized operator+(const Vectorized& a, const Vectorized& b) { return a.v + b.v; }
  friend Vectorized operator-(const Vectorized& a, const Vectorized& b) { return a.v - b.v; }
  friend Vectorized operator*(const Vectorized& a, const Vectorized& b) { return a.v * b.v; }
  friend Vectorized operator/(const Vectorized& a, const Vectorized& b) { return a.v / b.v; }
  friend Vectorized operator-(const Vectorized& a) { return -a.v; }
  Vectorized& operator+=(const Vectorized& o) { return *this = *this + o; }
  Vectorized& operator-=(const Vectorized& o) { return *this = *this - o; }
  Vectorized& operator*=(const Vectorized& o) { return *this = *this * o; }
  Vectorized& operator/=(const Vectorized& o) { return *this = *this / o; }
};

template <>
struct VecMask<float> {
  bool m;

  static constexpr int size() { return 1; }
  VecMask() : m(false) {}
  explicit VecMask(bool b) : m(b) {}

  static VecMask load_bytes(const bool* p) { return VecMask(*p); }
  static VecMask load_bytes(const bool* p, int64_t count) { return VecMask(count >= 1 && *p); }
  void store_bytes(bool* p) const { *p = m; }
  void store_bytes(bool* p, int64_t count) const {
    if (count >= 1) *p = m;
  }
  template <class F>
  static VecMask from_lanes(F f) {
    return VecMask(static_cast<bool>(f(int64_t{0})));
  }
  template <class F>
  static VecMask from_lanes(F f, int64_t count) {
    return VecMask(count >= 1 && static_cast<bool>(f(int64_t{0})));
  }

  friend VecMask operator&(const VecMask& a, const VecMask& b) { return VecMask(a.m && b.m); }
  friend VecMask operator|(const VecMask& a, const VecMask& b) { return VecMask(a.m || b.m); }
  friend VecMask operator^(const VecMask& a, const VecMask& b) { return VecMask(a.m != b.m); }
  friend VecMask operator!(const VecMask& a) { return VecMask(!a.m); }
};

inline VecMask<float> cmp_gt(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(a.v > b.v);
}
inline VecMask<float> cmp_lt(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(a.v < b.v);
}
inline VecMask<float> cmp_ge(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(a.v >= b.v);
}
inline VecMask<float> cmp_le(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(a.v <= b.v);
}
inline VecMask<float> cmp_eq(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(a.v == b.v);
}
inline VecMask<float> cmp_ne(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(a.v != b.v);
}

inline Vectorized<float> where(const VecMask<float>& mask, const Vectorized<float>& a,
                               const Vectorized<float>& b) {
  return mask.m ? a : b;
}
inline VecMask<float> where(const VecMask<float>& mask, const VecMask<float>& a,
                            const VecMask<float>& b) {
  return mask.m ? a : b;
}

inline Vectorized<float> abs(const Vectorized<float>& x) {
  return abs_f(x.v);
}
inline Vectorized<float> neg(const Vectorized<float>& x) {
  return -x;
}
inline Vectorized<float> exp(const Vectorized<float>& x) {
  return exp_f(x.v);
}
inline Vectorized<float> log(const Vectorized<float>& x) {
  return log_f(x.v);
}
inline Vectorized<float> tanh(const Vectorized<float>& x) {
  return tanh_f(x.v);
}
inline Vectorized<float> sqrt(const Vectorized<float>& x) {
  return sqrt_f(x.v);
}
inline Vectorized<float> pow(const Vectorized<float>& x, const Vectorized<float>& e) {
  return Sleef_powf_u10(x.v, e.v);
}
inline Vectorized<float> relu(const Vectorized<float>& x) {
  return relu_f(x.v);
}
inline Vectorized<float> maximum(const Vectorized<float>& a, const Vectorized<float>& b) {
  return maximum_f(a.v, b.v);
}
inline Vectorized<float> minimum(const Vectorized<float>& a, const Vectorized<float>& b) {
  return minimum_f(a.v, b.v);
}

inline float vec_reduce_sum(const Vectorized<float>& x) {
  return x.v;
}
inline float vec_reduce_max(const Vectorized<float>& x) {
  return x.v;
}
inline float vec_reduce_min(const Vectorized<float>& x) {
  return x.v;
}

}  // namespace stax
