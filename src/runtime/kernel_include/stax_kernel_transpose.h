// Register transposes behind stax::transpose_tile (Section 8.2 tiles). With AVX2 shuffles (AVX2
// and AVX-512 levels): 8 x 8 blocks of 32-bit elements, 4 x 4 of 64-bit, 16 x 16 of 16-bit and
// 16 x 16 of 8-bit ones; with AVX-512 shuffles: 16 x 16 of 32-bit and 8 x 8 of 64-bit. The
// element types are moved as bits (float and int32; double and int64; Half, BFloat16 and
// int16; int8, uint8 and bool). Each specializes detail::transpose_tile_registers of
// stax_kernel_data.h; other shapes and types take its plain loops.
// Included by stax_kernel.h after stax_kernel_data.h at the AVX2 and AVX-512 levels.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "stax_kernel_data.h"

namespace stax {
namespace detail {

inline void transpose_8x8_ps(const float* src, int64_t ss, float* dst, int64_t ds) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ss);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ds, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ds, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

template <>
inline bool transpose_tile_registers<float, 8, 8>(const float* src, int64_t ss, float* dst,
                                                  int64_t ds) {
  transpose_8x8_ps(src, ss, dst, ds);
  return true;
}
template <>
inline bool transpose_tile_registers<int32_t, 8, 8>(const int32_t* src, int64_t ss, int32_t* dst,
                                                    int64_t ds) {
  transpose_8x8_ps(reinterpret_cast<const float*>(src), ss, reinterpret_cast<float*>(dst), ds);
  return true;
}

// Rows of four doubles: pairs interleaved, then 128-bit halves exchanged.
inline void transpose_4x4_pd(const double* src, int64_t ss, double* dst, int64_t ds) {
  __m256d r[4], t[4];
  for (int i = 0; i < 4; ++i) r[i] = _mm256_loadu_pd(src + i * ss);
  t[0] = _mm256_unpacklo_pd(r[0], r[1]);
  t[1] = _mm256_unpackhi_pd(r[0], r[1]);
  t[2] = _mm256_unpacklo_pd(r[2], r[3]);
  t[3] = _mm256_unpackhi_pd(r[2], r[3]);
  _mm256_storeu_pd(dst, _mm256_permute2f128_pd(t[0], t[2], 0x20));
  _mm256_storeu_pd(dst + ds, _mm256_permute2f128_pd(t[1], t[3], 0x20));
  _mm256_storeu_pd(dst + 2 * ds, _mm256_permute2f128_pd(t[0], t[2], 0x31));
  _mm256_storeu_pd(dst + 3 * ds, _mm256_permute2f128_pd(t[1], t[3], 0x31));
}

// Rows of sixteen 16-bit elements (one 128-bit lane holds columns 0-7, the other 8-15):
// 16-, 32- and 64-bit interleaves within the lanes, then the lanes of rows 0-7 and 8-15 joined.
inline void transpose_16x16_epi16(const void* src, int64_t ss, void* dst, int64_t ds) {
  const auto* s = static_cast<const uint16_t*>(src);
  auto* d = static_cast<uint16_t*>(dst);
  __m256i r[16], t[16];
  for (int i = 0; i < 16; ++i) {
    r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i * ss));
  }
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm256_unpacklo_epi16(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi16(r[i], r[i + 1]);
  }
  // r[4g + j]: rows 4g .. 4g + 3, columns 2j, 2j + 1 (and 8 more in the upper lane).
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm256_unpacklo_epi32(t[g], t[g + 2]);
    r[g + 1] = _mm256_unpackhi_epi32(t[g], t[g + 2]);
    r[g + 2] = _mm256_unpacklo_epi32(t[g + 1], t[g + 3]);
    r[g + 3] = _mm256_unpackhi_epi32(t[g + 1], t[g + 3]);
  }
  // t[8h + c]: rows 8h .. 8h + 7 of column c (and of column 8 + c in the upper lane).
  for (int h = 0; h < 16; h += 8) {
    for (int j = 0; j < 4; ++j) {
      t[h + 2 * j] = _mm256_unpacklo_epi64(r[h + j], r[h + 4 + j]);
      t[h + 2 * j + 1] = _mm256_unpackhi_epi64(r[h + j], r[h + 4 + j]);
    }
  }
  for (int c = 0; c < 8; ++c) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + c * ds),
                        _mm256_permute2x128_si256(t[c], t[8 + c], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + (c + 8) * ds),
                        _mm256_permute2x128_si256(t[c], t[8 + c], 0x31));
  }
}

// Rows of sixteen bytes: 8-, 16-, 32- and 64-bit interleaves.
inline void transpose_16x16_epi8(const void* src, int64_t ss, void* dst, int64_t ds) {
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  __m128i r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i * ss));
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm_unpacklo_epi8(r[i], r[i + 1]);
    t[i + 1] = _mm_unpackhi_epi8(r[i], r[i + 1]);
  }
  // r[4g + j]: rows 4g .. 4g + 3 of columns 4j .. 4j + 3.
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm_unpacklo_epi16(t[g], t[g + 2]);
    r[g + 1] = _mm_unpackhi_epi16(t[g], t[g + 2]);
    r[g + 2] = _mm_unpacklo_epi16(t[g + 1], t[g + 3]);
    r[g + 3] = _mm_unpackhi_epi16(t[g + 1], t[g + 3]);
  }
  // t[8h + m]: rows 8h .. 8h + 7 of columns 2m and 2m + 1.
  for (int h = 0; h < 16; h += 8) {
    for (int j = 0; j < 4; ++j) {
      t[h + 2 * j] = _mm_unpacklo_epi32(r[h + j], r[h + 4 + j]);
      t[h + 2 * j + 1] = _mm_unpackhi_epi32(r[h + j], r[h + 4 + j]);
    }
  }
  for (int m = 0; m < 8; ++m) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * m * ds),
                     _mm_unpacklo_epi64(t[m], t[8 + m]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (2 * m + 1) * ds),
                     _mm_unpackhi_epi64(t[m], t[8 + m]));
  }
}

// One specialization per element type of a bit-moving transpose.
#define STAX_TRANSPOSE_REGISTERS(T, R, C, FN, AS)                                               \
  template <>                                                                                   \
  inline bool transpose_tile_registers<T, R, C>(const T* src, int64_t ss, T* dst, int64_t ds) { \
    FN(reinterpret_cast<const AS*>(src), ss, reinterpret_cast<AS*>(dst), ds);                   \
    return true;                                                                                \
  }
STAX_TRANSPOSE_REGISTERS(double, 4, 4, transpose_4x4_pd, double)
STAX_TRANSPOSE_REGISTERS(int64_t, 4, 4, transpose_4x4_pd, double)
STAX_TRANSPOSE_REGISTERS(Half, 16, 16, transpose_16x16_epi16, void)
STAX_TRANSPOSE_REGISTERS(BFloat16, 16, 16, transpose_16x16_epi16, void)
STAX_TRANSPOSE_REGISTERS(int16_t, 16, 16, transpose_16x16_epi16, void)
STAX_TRANSPOSE_REGISTERS(int8_t, 16, 16, transpose_16x16_epi8, void)
STAX_TRANSPOSE_REGISTERS(uint8_t, 16, 16, transpose_16x16_epi8, void)
STAX_TRANSPOSE_REGISTERS(bool, 16, 16, transpose_16x16_epi8, void)

#if defined(STAX_SIMD_AVX512)
inline void transpose_16x16_ps(const float* src, int64_t ss, float* dst, int64_t ds) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * ss);
  // Pairs of rows interleaved, then 4-element groups, then 128-bit lanes twice.
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 16; i += 8) {
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    _mm512_storeu_ps(dst + j * ds, _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88));
    _mm512_storeu_ps(dst + (j + 8) * ds, _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd));
  }
}

template <>
inline bool transpose_tile_registers<float, 16, 16>(const float* src, int64_t ss, float* dst,
                                                    int64_t ds) {
  transpose_16x16_ps(src, ss, dst, ds);
  return true;
}
template <>
inline bool transpose_tile_registers<int32_t, 16, 16>(const int32_t* src, int64_t ss, int32_t* dst,
                                                      int64_t ds) {
  transpose_16x16_ps(reinterpret_cast<const float*>(src), ss, reinterpret_cast<float*>(dst), ds);
  return true;
}

// Rows of eight doubles (128-bit lanes hold pairs): pairs interleaved, then lanes twice.
inline void transpose_8x8_pd(const double* src, int64_t ss, double* dst, int64_t ds) {
  __m512d r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_pd(src + i * ss);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
  }
  // r[4h + j]: rows 4h .. 4h + 3 of columns j, j + 4 (j even: from the low pairs).
  for (int h = 0; h < 8; h += 4) {
    r[h] = _mm512_shuffle_f64x2(t[h], t[h + 2], 0x88);
    r[h + 1] = _mm512_shuffle_f64x2(t[h], t[h + 2], 0xdd);
    r[h + 2] = _mm512_shuffle_f64x2(t[h + 1], t[h + 3], 0x88);
    r[h + 3] = _mm512_shuffle_f64x2(t[h + 1], t[h + 3], 0xdd);
  }
  // r[0]: columns 0, 4; r[1]: 2, 6; r[2]: 1, 5; r[3]: 3, 7.
  const int column[4] = {0, 2, 1, 3};
  for (int j = 0; j < 4; ++j) {
    _mm512_storeu_pd(dst + column[j] * ds, _mm512_shuffle_f64x2(r[j], r[j + 4], 0x88));
    _mm512_storeu_pd(dst + (column[j] + 4) * ds, _mm512_shuffle_f64x2(r[j], r[j + 4], 0xdd));
  }
}
STAX_TRANSPOSE_REGISTERS(double, 8, 8, transpose_8x8_pd, double)
STAX_TRANSPOSE_REGISTERS(int64_t, 8, 8, transpose_8x8_pd, double)
#endif
#undef STAX_TRANSPOSE_REGISTERS

}  // namespace detail
}  // namespace stax
