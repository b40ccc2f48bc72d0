// Vectorized<float> and VecMask<float> for AVX2 + FMA: 8 lanes in a __m256. A mask lane is
// all ones (true) or all zeros (false) in a __m256, so blendv can select on it directly.
// Included by stax_kernel.h when STAX_SIMD_AVX2 is the selected level.
#pragma once

#include <immintrin.h>
#include <sleef.h>

#include <cstdint>
#include <cstring>

namespace stax {

namespace detail {

// Lanes [0, count) all ones, the rest zero; count is clamped to [0, 8].
inline __m256i avx2_lane_mask(int64_t count) {
  const int c = count <= 0 ? 0 : (count >= 8 ? 8 : static_cast<int>(count));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace detail

template <>
struct Vectorized<float> {
  __m256 v;

  static constexpr int size() { return 8; }
  Vectorized() : v(_mm256_setzero_ps()) {}
  Vectorized(float s) : v(_mm256_set1_ps(s)) {}
  explicit Vectorized(__m256 raw) : v(raw) {}

  static Vectorized loadu(const float* p) { return Vectorized(_mm256_loadu_ps(p)); }
  // Lanes [0, count) from p, the rest 0; never touches p[count] and beyond.
  static Vectorized loadu(const float* p, int64_t count) {
    if (count >= 8) return loadu(p);
    return Vectorized(_mm256_maskload_ps(p, detail::avx2_lane_mask(count)));
  }
  void store(float* p) const { _mm256_storeu_ps(p, v); }
  // Writes lanes [0, count) only.
  void store(float* p, int64_t count) const {
    if (count >= 8) {
      store(p);
      return;
    }
    _mm256_maskstore_ps(p, detail::avx2_lane_mask(count), v);
  }
  // Lane l = f(l) for l in [0, 8) (gathers, index-dependent values).
  template <class F>
  static Vectorized from_lanes(F f) {
    alignas(32) float lanes[8];
    for (int64_t l = 0; l < 8; ++l) lanes[l] = static_cast<float>(f(l));
    return Vectorized(_mm256_load_ps(lanes));
  }
  // Lane l = f(l) for l < count, else 0; f is not called for l >= count.
  template <class F>
  static Vectorized from_lanes(F f, int64_t count) {
    alignas(32) float lanes[8] = {};
    for (int64_t l = 0; l < 8 && l < count; ++l) lanes[l] = static_cast<float>(f(l));
    return Vectorized(_mm256_load_ps(lanes));
  }
  // Lanes [0, count) from b, the rest from a.
  static Vectorized set(const Vectorized& a, const Vectorized& b, int64_t count) {
    return Vectorized(
        _mm256_blendv_ps(a.v, b.v, _mm256_castsi256_ps(detail::avx2_lane_mask(count))));
  }

  friend Vectorized operator+(const Vectorized& a, const Vectorized& b) {
    return Vectorized(_mm256_add_ps(a.v, b.v));
  }
  friend Vectorized operator-(const Vectorized& a, const Vectorized& b) {
    return Vectorized(_mm256_sub_ps(a.v, b.v));
  }
  friend Vectorized operator*(const Vectorized& a, const Vectorized& b) {
    return Vectorized(_mm256_mul_ps(a.v, b.v));
  }
  friend Vectorized operator/(const Vectorized& a, const Vectorized& b) {
    return Vectorized(_mm256_div_ps(a.v, b.v));
  }
  friend Vectorized operator-(const Vectorized& a) {
    return Vectorized(_mm256_xor_ps(a.v, _mm256_set1_ps(-0.0f)));
  }
  Vectorized& operator+=(const Vectorized& o) { return *this = *this + o; }
  Vectorized& operator-=(const Vectorized& o) { return *this = *this - o; }
  Vectorized& operator*=(const Vectorized& o) { return *this = *this * o; }
  Vectorized& operator/=(const Vectorized& o) { return *this = *this / o; }
};

template <>
struct VecMask<float> {
  __m256 m;

  static constexpr int size() { return 8; }
  VecMask() : m(_mm256_setzero_ps()) {}
  explicit VecMask(bool b) : m(_mm256_castsi256_ps(_mm256_set1_epi32(b ? -1 : 0))) {}
  explicit VecMask(__m256 raw) : m(raw) {}

  // Bytes p[0..8) (bool, 0 or 1) -> lanes.
  static VecMask load_bytes(const bool* p) {
    int64_t bytes;
    std::memcpy(&bytes, p, 8);
    return from_byte_lanes(bytes);
  }
  // Lanes [0, count) from p, the rest false; never touches p[count] and beyond.
  static VecMask load_bytes(const bool* p, int64_t count) {
    if (count >= 8) return load_bytes(p);
    int64_t bytes = 0;
    if (count > 0) std::memcpy(&bytes, p, static_cast<size_t>(count));
    return from_byte_lanes(bytes);
  }
  // Lanes -> bytes p[0..8), each 0 or 1.
  void store_bytes(bool* p) const {
    const int64_t bytes = to_byte_lanes();
    std::memcpy(p, &bytes, 8);
  }
  // Writes p[0..count) only.
  void store_bytes(bool* p, int64_t count) const {
    if (count <= 0) return;
    const int64_t bytes = to_byte_lanes();
    std::memcpy(p, &bytes, static_cast<size_t>(count >= 8 ? 8 : count));
  }
  template <class F>
  static VecMask from_lanes(F f) {
    alignas(32) int32_t lanes[8];
    for (int64_t l = 0; l < 8; ++l) lanes[l] = static_cast<bool>(f(l)) ? -1 : 0;
    return VecMask(_mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(lanes))));
  }
  template <class F>
  static VecMask from_lanes(F f, int64_t count) {
    alignas(32) int32_t lanes[8] = {};
    for (int64_t l = 0; l < 8 && l < count; ++l) lanes[l] = static_cast<bool>(f(l)) ? -1 : 0;
    return VecMask(_mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(lanes))));
  }

  friend VecMask operator&(const VecMask& a, const VecMask& b) {
    return VecMask(_mm256_and_ps(a.m, b.m));
  }
  friend VecMask operator|(const VecMask& a, const VecMask& b) {
    return VecMask(_mm256_or_ps(a.m, b.m));
  }
  friend VecMask operator^(const VecMask& a, const VecMask& b) {
    return VecMask(_mm256_xor_ps(a.m, b.m));
  }
  friend VecMask operator!(const VecMask& a) {
    return VecMask(_mm256_xor_ps(a.m, _mm256_castsi256_ps(_mm256_set1_epi32(-1))));
  }

 private:
  static VecMask from_byte_lanes(int64_t bytes) {
    const __m256i wide = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes));
    return VecMask(_mm256_castsi256_ps(_mm256_cmpgt_epi32(wide, _mm256_setzero_si256())));
  }
  int64_t to_byte_lanes() const {
    const __m256i ones = _mm256_and_si256(_mm256_castps_si256(m), _mm256_set1_epi32(1));
    const __m128i words =
        _mm_packs_epi32(_mm256_castsi256_si128(ones), _mm256_extracti128_si256(ones, 1));
    return _mm_cvtsi128_si64(_mm_packus_epi16(words, words));
  }
};

// ---- Comparisons (IEEE: ordered, false with NaN; ne is unordered, true with NaN) ----
inline VecMask<float> cmp_gt(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm256_cmp_ps(a.v, b.v, _CMP_GT_OQ));
}
inline VecMask<float> cmp_lt(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ));
}
inline VecMask<float> cmp_ge(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm256_cmp_ps(a.v, b.v, _CMP_GE_OQ));
}
inline VecMask<float> cmp_le(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm256_cmp_ps(a.v, b.v, _CMP_LE_OQ));
}
inline VecMask<float> cmp_eq(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm256_cmp_ps(a.v, b.v, _CMP_EQ_OQ));
}
inline VecMask<float> cmp_ne(const Vectorized<float>& a, const Vectorized<float>& b) {
  return VecMask<float>(_mm256_cmp_ps(a.v, b.v, _CMP_NEQ_UQ));
}

// Lane-wise mask ? a : b.
inline Vectorized<float> where(const VecMask<float>& mask, const Vectorized<float>& a,
                               const Vectorized<float>& b) {
  return Vectorized<float>(_mm256_blendv_ps(b.v, a.v, mask.m));
}
inline VecMask<float> where(const VecMask<float>& mask, const VecMask<float>& a,
                            const VecMask<float>& b) {
  return VecMask<float>(_mm256_blendv_ps(b.m, a.m, mask.m));
}

// ---- Element-wise math ----
inline Vectorized<float> abs(const Vectorized<float>& x) {
  return Vectorized<float>(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x.v));
}
inline Vectorized<float> neg(const Vectorized<float>& x) {
  return -x;
}
inline Vectorized<float> exp(const Vectorized<float>& x) {
  return Vectorized<float>(Sleef_expf8_u10avx2(x.v));
}
inline Vectorized<float> log(const Vectorized<float>& x) {
  return Vectorized<float>(Sleef_logf8_u10avx2(x.v));
}
inline Vectorized<float> tanh(const Vectorized<float>& x) {
  return Vectorized<float>(Sleef_tanhf8_u10avx2(x.v));
}
inline Vectorized<float> sqrt(const Vectorized<float>& x) {
  return Vectorized<float>(_mm256_sqrt_ps(x.v));
}
// Element-wise SLEEF powf u10 (no special-cased exponents).
inline Vectorized<float> pow(const Vectorized<float>& x, const Vectorized<float>& e) {
  return Vectorized<float>(Sleef_powf8_u10avx2(x.v, e.v));
}
// x > 0 ? x : +0, NaN stays NaN ("not less-or-equal" is true for NaN).
inline Vectorized<float> relu(const Vectorized<float>& x) {
  return Vectorized<float>(
      _mm256_and_ps(_mm256_cmp_ps(x.v, _mm256_setzero_ps(), _CMP_NLE_UQ), x.v));
}
// NaN-propagating: a NaN input yields a + b (a NaN) in that lane.
inline Vectorized<float> maximum(const Vectorized<float>& a, const Vectorized<float>& b) {
  const __m256 unordered = _mm256_cmp_ps(a.v, b.v, _CMP_UNORD_Q);
  return Vectorized<float>(
      _mm256_blendv_ps(_mm256_max_ps(a.v, b.v), _mm256_add_ps(a.v, b.v), unordered));
}
inline Vectorized<float> minimum(const Vectorized<float>& a, const Vectorized<float>& b) {
  const __m256 unordered = _mm256_cmp_ps(a.v, b.v, _CMP_UNORD_Q);
  return Vectorized<float>(
      _mm256_blendv_ps(_mm256_min_ps(a.v, b.v), _mm256_add_ps(a.v, b.v), unordered));
}

// ---- Reductions across lanes: a log2(8)-step butterfly, result read from lane 0 ----
namespace detail {
template <class Op>
inline float avx2_reduce(__m256 v, Op op) {
  v = op(Vectorized<float>(v), Vectorized<float>(_mm256_permute2f128_ps(v, v, 1))).v;
  v = op(Vectorized<float>(v), Vectorized<float>(_mm256_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2))))
          .v;
  v = op(Vectorized<float>(v), Vectorized<float>(_mm256_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1))))
          .v;
  return _mm256_cvtss_f32(v);
}
}  // namespace detail

inline float vec_reduce_sum(const Vectorized<float>& x) {
  return detail::avx2_reduce(
      x.v, [](const Vectorized<float>& a, const Vectorized<float>& b) { return a + b; });
}
inline float vec_reduce_max(const Vectorized<float>& x) {
  return detail::avx2_reduce(
      x.v, [](const Vectorized<float>& a, const Vectorized<float>& b) { return maximum(a, b); });
}
inline float vec_reduce_min(const Vectorized<float>& x) {
  return detail::avx2_reduce(
      x.v, [](const Vectorized<float>& a, const Vectorized<float>& b) { return minimum(a, b); });
}

}  // namespace stax
