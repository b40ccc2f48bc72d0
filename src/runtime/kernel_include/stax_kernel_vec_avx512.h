// Vectorized<float> and VecMask<float> for AVX-512 (F, BW, DQ, VL): 16 lanes in a __m512;
// a mask is an opmask register (__mmask16, bit l = lane l).
// Included by stax_kernel.h when STAX_SIMD_AVX512 is the selected level.
#pragma once

#include <immintrin.h>
#include <sleef.h>

#include <cstdint>

namespace stax {

namespace detail {

// Bits [0, count) set; count is clamped to [0, 16].
inline __mmask16 avx512_lane_mask(int64_t count) {
  if (count <= 0) return 0;
  if (count >= 16) return static_cast<__mmask16>(0xFFFF);
  return static_cast<__mmask16>((1u << count) - 1u);
}

}  // namespace detail

template <>
struct Vectorized<float> {
  __m512 v;

  static constexpr int size() { return 16; }
  Vectorized() : v(_mm512_setzero_ps()) {}
  Vectorized(float s) : v(_mm512_set1_ps(s)) {}
  explicit Vectorized(__m512 raw) : v(raw) {}

  static Vectorized loadu(const float* p) { return Vectorized(_mm512_loadu_ps(p)); }
  // Lanes [0, count) from p, the rest 0; never touches p[count] and beyond.
  static Vectorized loadu(const float* p, int64_t count) {
    return Vectorized(_mm512_maskz_loadu_ps(detail::avx512_lane_mask(count), p));
  }
  void store(float* p) const { _mm512_storeu_ps(p, v); }
  // Writes lanes [0, count) only.
  void store(float* p, int64_t count) const {
    _mm512_mask_storeu_ps(p, detail::avx512_lane_mask(count), v);
  }
  // Lane l = f(l) for l in [0, 16) (gathers, index-dependent values).
  template <class F>
  static Vectorized from_lanes(F f) {
    alignas(64) float lanes[16];
    for (int64_t l = 0; l < 16; ++l) lanes[l] = static_cast<float>(f(l));
    return Vectorized(_mm512_load_ps(lanes));
  }
  // Lane l = f(l) for l < count, else 0; f is not called for l >= count.
  template <class F>
  static Vectorized from_lanes(F f, int64_t count) {
    alignas(64) float lanes[16] = {};
    for (int64_t l = 0; l < 16 && l < count; ++l) lanes[l] = static_cast<float>(f(l));
    return Vectorized(_mm512_load_ps(lanes));
  }
  // Lanes [0, count) from b, the rest from a.
  static Vectorized set(const Vectorized& a, const Vectorized& b, int64_t count) {
    return Vectorized(_mm512_mask_blend_ps(detail::avx512_lane_mask(count), a.v, b.v));
  }

  friend Vectorized operator+(const Vectorized& a, const Vectorized& b) {
    return Vectorized(_mm512_add_ps(a.v, b.v));
  }
  friend Vectorized operator-(const Vectorized& a, const Vectorized& b) {
    return Vectorized(_mm512_sub_ps(a.v, b.v));
  }
  friend Vectorized operator*(const Vectorized& a, const Vectorized& b) {
    return Vectorized(_mm512_mul_ps(a.v, b.v));
  }
  friend Vectorized operator/(const Vectorized& a, const Vectorized& b) {
    return Vectorized(_mm512_div_ps(a.v, b.v));
  }
  friend Vectorized operator-(const Vectorized& a) {
    return Vectorized(_mm512_xor_ps(a.v, _mm512_set1_ps(-0.0f)));
  }
  Vectorized& operator+=(const Vectorized& o) { return *this = *this + o; }
  Vectorized& operator-=(const Vectorized& o) { return *this = *this - o; }
  Vectorized& operator*=(const Vectorized& o) { return *this = *this * o; }
  Vectorized& operator/=(const Vectorized& o) { return *this = *this / o; }
};

template <>
struct VecMask<float> {
  __mmask16 m;

  static constexpr int size() { return 16; }
  VecMask() : m(0) {}
  explicit VecMask(bool b) : m(static_cast<__mmask16>(b ? 0xFFFF : 0)) {}
  explicit VecMask(__mmask16 raw) : m(raw) {}

  // Bytes p[0..16) (bool, 0 or 1) -> lanes.
  static VecMask load_bytes(const bool* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return VecMask(_mm_test_epi8_mask(bytes, bytes));
  }
  // Lanes [0, count) from p, the rest false; never touches p[count] and beyond.
  static VecMask load_bytes(const bool* p, int64_t count) {
    const __m128i bytes = _mm_maskz_loadu_epi8(detail::avx512_lane_mask(count), p);
    return VecMask(_mm_test_epi8_mask(bytes, bytes));
  }
  // Lanes -> bytes p[0..16), each 0 or 1.
  void store_bytes(bool* p) const {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_maskz_set1_epi8(m, 1));
  }
  // Writes p[0..count) only.
  void store_bytes(bool* p, int64_t count) const {
    _mm_mask_storeu_epi8(p, detail::avx512_lane_mask(count), _mm_maskz_set1_epi8(m, 1));
  }
  template <class F>
  static VecMask from_lanes(F f) {
    unsigned bits = 0;
    for (int64_t l = 0; l < 16; ++l) bits |= static_cast<bool>(f(l)) ? (1u << l) : 0u;
    return VecMask(static_cast<__mmask16>(bits));
  }
  template <class F>
  static VecMask from_lanes(F f, int64_t count) {
    unsigned bits = 0;
    for (int64_t l = 0; l < 16 && l < count; ++l) bits |= static_cast<bool>(f(l)) ? (1u << l) : 0u;
    return VecMask(static_cast<__mmask16>(bits));
  }

  friend VecMask operator&(const VecMask& a, const VecMask& b) {
    return VecMask(static_cast<__mmask16>(a.m & b.m));
  }
  friend VecMask operator|(const VecMask& a, const VecMask& b) {
    return VecMask(static_cast<__mmask16>(a.m | b.m));
  }
  friend VecMask operator^(const VecMask& a, const VecMask& b) {
    return VecMask(static_cast<__mmask16>(a.m ^ b.m));
  }
  friend VecMask operator!(const VecMask& a) { return VecMask(static_cast<__mmask16>(~a.m)); }
};

// ---- Comparisons (IEEE: ordered, false with NaN; ne is unordered, true with NaN) ----
inline VecMask<float> cmp_gt(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm512_cmp_ps_mask(a.v, b.v, _CMP_GT_OQ));
}
inline VecMask<float> cmp_lt(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ));
}
inline VecMask<float> cmp_ge(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm512_cmp_ps_mask(a.v, b.v, _CMP_GE_OQ));
}
inline VecMask<float> cmp_le(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm512_cmp_ps_mask(a.v, b.v, _CMP_LE_OQ));
}
inline VecMask<float> cmp_eq(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm512_cmp_ps_mask(a.v, b.v, _CMP_EQ_OQ));
}
inline VecMask<float> cmp_ne(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm512_cmp_ps_mask(a.v, b.v, _CMP_NEQ_UQ));
}

// Lane-wise mask ? a : b.
inline Vectorized<float> where(const VecMask<float>& mask, const Vectorized<float>& a,
                               const Vectorized<float>& b) {
  return Vectorized<float>(_mm512_mask_blend_ps(mask.m, b.v, a.v));
}
inline VecMask<float> where(const VecMask<float>& mask, const VecMask<float>& a,
                            const VecMask<float>& b) {
  return VecMask<float>(static_cast<__mmask16>((mask.m & a.m) | (~mask.m & b.m)));
}

// ---- Element-wise math ----
inline Vectorized<float> abs(const Vectorized<float>& x) {
  return Vectorized<float>(_mm512_andnot_ps(_mm512_set1_ps(-0.0f), x.v));
}
inline Vectorized<float> neg(const Vectorized<float>& x) {
  return -x;
}
inline Vectorized<float> exp(const Vectorized<float>& x) {
  return Vectorized<float>(Sleef_expf16_u10avx512f(x.v));
}
inline Vectorized<float> log(const Vectorized<float>& x) {
  return Vectorized<float>(Sleef_logf16_u10avx512f(x.v));
}
inline Vectorized<float> tanh(const Vectorized<float>& x) {
  return Vectorized<float>(Sleef_tanhf16_u10avx512f(x.v));
}
inline Vectorized<float> sqrt(const Vectorized<float>& x) {
  return Vectorized<float>(_mm512_sqrt_ps(x.v));
}
// Element-wise SLEEF powf u10 (no special-cased exponents).
inline Vectorized<float> pow(const Vectorized<float>& x, const Vectorized<float>& e) {
  return Vectorized<float>(Sleef_powf16_u10avx512f(x.v, e.v));
}
// x > 0 ? x : +0, NaN stays NaN ("not less-or-equal" is true for NaN).
inline Vectorized<float> relu(const Vectorized<float>& x) {
  return Vectorized<float>(
      _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x.v, _mm512_setzero_ps(), _CMP_NLE_UQ), x.v));
}
// NaN-propagating: a NaN input yields a + b (a NaN) in that lane.
inline Vectorized<float> maximum(const Vectorized<float>& a, const Vectorized<float>& b) {
  const __mmask16 unordered = _mm512_cmp_ps_mask(a.v, b.v, _CMP_UNORD_Q);
  return Vectorized<float>(_mm512_mask_add_ps(_mm512_max_ps(a.v, b.v), unordered, a.v, b.v));
}
inline Vectorized<float> minimum(const Vectorized<float>& a, const Vectorized<float>& b) {
  const __mmask16 unordered = _mm512_cmp_ps_mask(a.v, b.v, _CMP_UNORD_Q);
  return Vectorized<float>(_mm512_mask_add_ps(_mm512_min_ps(a.v, b.v), unordered, a.v, b.v));
}

// ---- Reductions across lanes: a log2(16)-step butterfly, result read from lane 0 ----
namespace detail {
template <class Op>
inline float avx512_reduce(__m512 v, Op op) {
  using V = Vectorized<float>;
  v = op(V(v), V(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)))).v;
  v = op(V(v), V(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)))).v;
  v = op(V(v), V(_mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)))).v;
  v = op(V(v), V(_mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)))).v;
  return _mm512_cvtss_f32(v);
}
}  // namespace detail

inline float vec_reduce_sum(const Vectorized<float>& x) {
  return detail::avx512_reduce(
      x.v, [](const Vectorized<float>& a, const Vectorized<float>& b) { return a + b; });
}
inline float vec_reduce_max(const Vectorized<float>& x) {
  return detail::avx512_reduce(
      x.v, [](const Vectorized<float>& a, const Vectorized<float>& b) { return maximum(a, b); });
}
inline float vec_reduce_min(const Vectorized<float>& x) {
  return detail::avx512_reduce(
      x.v, [](const Vectorized<float>& a, const Vectorized<float>& b) { return minimum(a, b); });
}

}  // namespace stax
