// Register transposes behind stax::transpose_tile (Section 8.2 tiles): 8 x 8 blocks of 32-bit
// elements with AVX2 shuffles (AVX2 and AVX-512 levels) and 16 x 16 blocks with AVX-512
// shuffles. Each specializes detail::transpose_tile_registers of stax_kernel_data.h; other
// shapes and types take its plain loops.
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
#endif

}  // namespace detail
}  // namespace stax
