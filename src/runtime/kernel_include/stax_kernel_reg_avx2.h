// AVX2 + FMA registers under stax::Vec: Reg<float, 8>, Reg<double, 4>, Reg<int32_t, 8>,
// Reg<int64_t, 4>, Reg<int16_t, 16>, Reg<int8_t, 32>, Reg<uint8_t, 32> in one ymm each. Used at
// the AVX2 level and, for vectors of half a zmm, at the AVX-512 level. Every overload computes
// exactly what the scalar op of stax_kernel_scalar_ops.h computes per lane; the ops not
// overloaded (integer division, int64 multiply, ...) fall back to its lane loops.
// Lane masks are bits; compares movemask them, select expands them back to lanes.
// Included by stax_kernel.h at the AVX2 and AVX-512 levels.
#pragma once

#include <immintrin.h>
#include <sleef.h>

#include <cstdint>
#include <cstring>

#include "stax_kernel_reg_generic.h"

namespace stax {
namespace detail {

// 32-bit lanes [0, count) all ones (count clamped to [0, 8]).
inline __m256i avx2_count_mask32(int64_t count) {
  const int c = count <= 0 ? 0 : (count >= 8 ? 8 : static_cast<int>(count));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// 64-bit lanes [0, count) all ones (count clamped to [0, 4]).
inline __m256i avx2_count_mask64(int64_t count) {
  const int64_t c = count <= 0 ? 0 : (count >= 4 ? 4 : count);
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(c), _mm256_setr_epi64x(0, 1, 2, 3));
}
// Lane masks from bits, for 32-, 64-, 16- and 8-bit lanes.
inline __m256i avx2_bits_to_lanes32(uint64_t bits) {
  const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), sel), sel);
}
inline __m256i avx2_bits_to_lanes64(uint64_t bits) {
  const __m256i sel = _mm256_setr_epi64x(1, 2, 4, 8);
  return _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(static_cast<int64_t>(bits)), sel),
                            sel);
}
inline __m256i avx2_bits_to_lanes8(uint64_t bits) {
  // Byte i of the result holds byte i / 8 of bits, then tests bit i % 8.
  const __m256i bytes =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i sel = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, sel), sel);
}
inline __m256i avx2_bits_to_lanes16(uint64_t bits) {
  const __m256i sel = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                        8192, 16384, -32768);
  return _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16(static_cast<int16_t>(bits)), sel),
                            sel);
}
// One bit per 16-bit lane of a lane mask.
inline uint64_t avx2_lanes16_to_bits(__m256i m) {
  const uint32_t bytes = static_cast<uint32_t>(_mm256_movemask_epi8(m));
  uint64_t bits = 0;
  for (int l = 0; l < 16; ++l) bits |= static_cast<uint64_t>((bytes >> (2 * l)) & 1u) << l;
  return bits;
}

// One ymm register of T; masked loads where AVX2 has them, else a bounded copy.
#define STAX_AVX2_REG(T, L, RAW, ZERO, SET1, LOAD, STORE, PARTIAL_LOAD, PARTIAL_STORE) \
  template <>                                                                          \
  struct Reg<T, L> {                                                                   \
    using Elem = T;                                                                    \
    static constexpr int kLanes = L;                                                   \
    RAW v;                                                                             \
    static Reg make(RAW x) {                                                           \
      Reg r;                                                                           \
      r.v = x;                                                                         \
      return r;                                                                        \
    }                                                                                  \
    static Reg zero() { return make(ZERO()); }                                         \
    static Reg broadcast(T x) { return make(SET1(x)); }                                \
    static Reg load(const T* p) { return make(LOAD(p)); }                              \
    static Reg load_partial(const T* p, int64_t count) { PARTIAL_LOAD }                \
    void store(T* p) const { STORE(p, v); }                                            \
    void store_partial(T* p, int64_t count) const { PARTIAL_STORE }                    \
  };

inline __m256i avx2_loadu_si(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
inline void avx2_storeu_si(void* p, __m256i v) {
  _mm256_storeu_si256(static_cast<__m256i*>(p), v);
}
#define STAX_COPY_LOAD(T, L)                                                \
  if (count >= L) return load(p);                                           \
  alignas(32) T x[L] = {};                                                  \
  if (count > 0) std::memcpy(x, p, static_cast<size_t>(count) * sizeof(T)); \
  return load(x);
#define STAX_COPY_STORE(T, L)      \
  if (count >= L) return store(p); \
  alignas(32) T x[L];              \
  store(x);                        \
  if (count > 0) std::memcpy(p, x, static_cast<size_t>(count) * sizeof(T));

STAX_AVX2_REG(float, 8, __m256, _mm256_setzero_ps, _mm256_set1_ps, _mm256_loadu_ps,
              _mm256_storeu_ps, return make(_mm256_maskload_ps(p, avx2_count_mask32(count)));
              , _mm256_maskstore_ps(p, avx2_count_mask32(count), v);)
STAX_AVX2_REG(double, 4, __m256d, _mm256_setzero_pd, _mm256_set1_pd, _mm256_loadu_pd,
              _mm256_storeu_pd, return make(_mm256_maskload_pd(p, avx2_count_mask64(count)));
              , _mm256_maskstore_pd(p, avx2_count_mask64(count), v);)
STAX_AVX2_REG(int32_t, 8, __m256i, _mm256_setzero_si256, _mm256_set1_epi32, avx2_loadu_si,
              avx2_storeu_si,
              return make(_mm256_maskload_epi32(reinterpret_cast<const int*>(p),
                                                avx2_count_mask32(count)));
              , _mm256_maskstore_epi32(reinterpret_cast<int*>(p), avx2_count_mask32(count), v);)
STAX_AVX2_REG(int64_t, 4, __m256i, _mm256_setzero_si256, _mm256_set1_epi64x, avx2_loadu_si,
              avx2_storeu_si,
              return make(_mm256_maskload_epi64(reinterpret_cast<const long long*>(p),
                                                avx2_count_mask64(count)));
              ,
              _mm256_maskstore_epi64(reinterpret_cast<long long*>(p), avx2_count_mask64(count), v);)
STAX_AVX2_REG(int16_t, 16, __m256i, _mm256_setzero_si256, _mm256_set1_epi16, avx2_loadu_si,
              avx2_storeu_si, STAX_COPY_LOAD(int16_t, 16), STAX_COPY_STORE(int16_t, 16))
STAX_AVX2_REG(int8_t, 32, __m256i, _mm256_setzero_si256, _mm256_set1_epi8, avx2_loadu_si,
              avx2_storeu_si, STAX_COPY_LOAD(int8_t, 32), STAX_COPY_STORE(int8_t, 32))
STAX_AVX2_REG(uint8_t, 32, __m256i, _mm256_setzero_si256, _mm256_set1_epi8, avx2_loadu_si,
              avx2_storeu_si, STAX_COPY_LOAD(uint8_t, 32), STAX_COPY_STORE(uint8_t, 32))
#undef STAX_AVX2_REG
#undef STAX_COPY_LOAD
#undef STAX_COPY_STORE

using F8 = Reg<float, 8>;
using D4 = Reg<double, 4>;
using I32x8 = Reg<int32_t, 8>;
using I64x4 = Reg<int64_t, 4>;
using I16x16 = Reg<int16_t, 16>;
using I8x32 = Reg<int8_t, 32>;
using U8x32 = Reg<uint8_t, 32>;

#define STAX_R1(R, name, expr)      \
  inline R reg_##name(const R& a) { \
    const auto x = a.v;             \
    return R::make(expr);           \
  }
#define STAX_R2(R, name, expr)                  \
  inline R reg_##name(const R& a, const R& b) { \
    const auto x = a.v;                         \
    const auto y = b.v;                         \
    return R::make(expr);                       \
  }
#define STAX_M2(R, name, expr)                         \
  inline uint64_t reg_##name(const R& a, const R& b) { \
    const auto x = a.v;                                \
    const auto y = b.v;                                \
    return static_cast<uint64_t>(expr);                \
  }
#define STAX_M1(R, name, expr)             \
  inline uint64_t reg_##name(const R& a) { \
    const auto x = a.v;                    \
    (void)x;                               \
    return static_cast<uint64_t>(expr);    \
  }

// ---- Floating registers ----
#define STAX_AVX2_FLOAT_OPS(R, S, SL, BITS_TO_LANES, CAST)                                         \
  STAX_R2(R, add, _mm256_add_##S(x, y))                                                            \
  STAX_R2(R, sub, _mm256_sub_##S(x, y))                                                            \
  STAX_R2(R, mul, _mm256_mul_##S(x, y))                                                            \
  STAX_R2(R, div, _mm256_div_##S(x, y))                                                            \
  STAX_R1(R, neg, _mm256_xor_##S(x, _mm256_set1_##S(-0.0)))                                        \
  STAX_R1(R, abs, _mm256_andnot_##S(_mm256_set1_##S(-0.0), x))                                     \
  STAX_R1(R, sqrt, _mm256_sqrt_##S(x))                                                             \
  STAX_R1(R, rsqrt, _mm256_div_##S(_mm256_set1_##S(1.0), _mm256_sqrt_##S(x)))                      \
  STAX_R1(R, reciprocal, _mm256_div_##S(_mm256_set1_##S(1.0), x))                                  \
  STAX_R1(R, floor, _mm256_round_##S(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC))                \
  STAX_R1(R, ceil, _mm256_round_##S(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC))                 \
  STAX_R1(R, trunc, _mm256_round_##S(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC))                   \
  STAX_R1(R, round, _mm256_round_##S(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))            \
  STAX_R2(R, maximum,                                                                              \
          _mm256_blendv_##S(_mm256_max_##S(x, y), _mm256_add_##S(x, y),                            \
                            _mm256_cmp_##S(x, y, _CMP_UNORD_Q)))                                   \
  STAX_R2(R, minimum,                                                                              \
          _mm256_blendv_##S(_mm256_min_##S(x, y), _mm256_add_##S(x, y),                            \
                            _mm256_cmp_##S(x, y, _CMP_UNORD_Q)))                                   \
  STAX_R2(R, fmax, _mm256_blendv_##S(_mm256_max_##S(x, y), x, _mm256_cmp_##S(y, y, _CMP_UNORD_Q))) \
  STAX_R2(R, fmin, _mm256_blendv_##S(_mm256_min_##S(x, y), x, _mm256_cmp_##S(y, y, _CMP_UNORD_Q))) \
  STAX_R2(R, copysign,                                                                             \
          _mm256_or_##S(_mm256_andnot_##S(_mm256_set1_##S(-0.0), x),                               \
                        _mm256_and_##S(_mm256_set1_##S(-0.0), y)))                                 \
  STAX_R1(R, relu, _mm256_and_##S(x, _mm256_cmp_##S(x, _mm256_setzero_##S(), _CMP_NLE_UQ)))        \
  STAX_M2(R, eq, _mm256_movemask_##S(_mm256_cmp_##S(x, y, _CMP_EQ_OQ)))                            \
  STAX_M2(R, ne, _mm256_movemask_##S(_mm256_cmp_##S(x, y, _CMP_NEQ_UQ)))                           \
  STAX_M2(R, lt, _mm256_movemask_##S(_mm256_cmp_##S(x, y, _CMP_LT_OQ)))                            \
  STAX_M2(R, le, _mm256_movemask_##S(_mm256_cmp_##S(x, y, _CMP_LE_OQ)))                            \
  STAX_M2(R, gt, _mm256_movemask_##S(_mm256_cmp_##S(x, y, _CMP_GT_OQ)))                            \
  STAX_M2(R, ge, _mm256_movemask_##S(_mm256_cmp_##S(x, y, _CMP_GE_OQ)))                            \
  STAX_M1(R, isnan, _mm256_movemask_##S(_mm256_cmp_##S(x, x, _CMP_UNORD_Q)))                       \
  STAX_M1(R, isinf,                                                                                \
          _mm256_movemask_##S(_mm256_cmp_##S(_mm256_andnot_##S(_mm256_set1_##S(-0.0), x),          \
                                             _mm256_set1_##S(__builtin_huge_val()), _CMP_EQ_OQ)))  \
  STAX_R1(R, exp2, Sleef_finz_exp2##SL##_u10avx2(x))                                               \
  STAX_R1(R, asinh, Sleef_finz_asinh##SL##_u10avx2(x))                                             \
  STAX_R1(R, acosh, Sleef_finz_acosh##SL##_u10avx2(x))                                             \
  STAX_R2(R, atan2, Sleef_finz_atan2##SL##_u10avx2(x, y))                                          \
  STAX_R2(R, hypot, Sleef_finz_hypot##SL##_u05avx2(x, y))                                          \
  inline R reg_select(uint64_t bits, const R& a, const R& b) {                                     \
    return R::make(_mm256_blendv_##S(b.v, a.v, CAST(BITS_TO_LANES(bits))));                        \
  }

STAX_AVX2_FLOAT_OPS(F8, ps, f8, avx2_bits_to_lanes32, _mm256_castsi256_ps)
STAX_AVX2_FLOAT_OPS(D4, pd, d4, avx2_bits_to_lanes64, _mm256_castsi256_pd)
#undef STAX_AVX2_FLOAT_OPS

// The ops whose float form is Stax's own code: double is SLEEF's (stax_kernel_reg_generic.h).
STAX_SLEEF_DOUBLE_REG_OPS(D4, 4, avx2)
inline void reg_log_split(const F8& y, F8* e, F8* f) {
  const auto ix =
      _mm256_sub_epi32(_mm256_castps_si256(y.v), _mm256_set1_epi32(LogCoefficients::kSqrtHalfBits));
  *e = F8::make(_mm256_cvtepi32_ps(_mm256_srai_epi32(ix, 23)));
  const auto m = _mm256_add_epi32(_mm256_and_si256(ix, _mm256_set1_epi32(0x7fffff)),
                                  _mm256_set1_epi32(LogCoefficients::kSqrtHalfBits));
  *f = F8::make(_mm256_sub_ps(_mm256_castsi256_ps(m), _mm256_set1_ps(1.0f)));
}
inline F8 reg_fma(const F8& a, const F8& b, const F8& c) {
  return F8::make(_mm256_fmadd_ps(a.v, b.v, c.v));
}
struct F8TableIndex {
  __m256i v;
};
inline F8TableIndex reg_table_index(const F8& f) {
  return {_mm256_cvttps_epi32(f.v)};
}
inline F8 reg_table_lookup8(const F8TableIndex& i, const float* table) {
  return F8::make(_mm256_permutevar8x32_ps(_mm256_loadu_ps(table), i.v));
}
STAX_R2(F8, max_keep_nan, _mm256_max_ps(x, y))
STAX_R2(F8, min_keep_nan, _mm256_min_ps(x, y))
// float_scale_pow2: p * 2^half * 2^(n - half), 2^k built from its exponent bits.
inline __m256 avx2_pow2(__m256 k) {
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23));
}
inline F8 reg_scale_pow2(const F8& p, const F8& n) {
  const __m256 half = _mm256_round_ps(_mm256_mul_ps(n.v, _mm256_set1_ps(0.5f)),
                                      _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  return F8::make(
      _mm256_mul_ps(_mm256_mul_ps(p.v, avx2_pow2(half)), avx2_pow2(_mm256_sub_ps(n.v, half))));
}
}  // namespace detail
}  // namespace stax
#include "stax_kernel_float_math_reg.h"
namespace stax {
namespace detail {
STAX_FLOAT_MATH_REG_OPS(F8, D4)
// The lanes whose bit B is set (stax_kernel_float_trig_reg.h).
template <int B>
inline uint64_t reg_bit_set(const F8& v) {
  return static_cast<uint32_t>(
      _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(v.v), 31 - B))));
}
}  // namespace detail
}  // namespace stax
#include "stax_kernel_float_trig_reg.h"
namespace stax {
namespace detail {
STAX_FLOAT_TRIG_REG_OPS(F8)
}  // namespace detail
}  // namespace stax
#include "stax_kernel_float_composed_reg.h"
namespace stax {
namespace detail {
STAX_FLOAT_COMPOSED_REG_OPS(F8)

// ---- Integer registers ----
// GT(x, y): signed (or, for uint8, bias-flipped) x > y as a lane mask; MOVEMASK: lane mask
// to bits.
#define STAX_AVX2_INT_OPS(R, E, GT, MAX, MIN, MOVEMASK, BITS_TO_LANES)   \
  STAX_R2(R, add, _mm256_add_##E(x, y))                                  \
  STAX_R2(R, sub, _mm256_sub_##E(x, y))                                  \
  STAX_R1(R, neg, _mm256_sub_##E(_mm256_setzero_si256(), x))             \
  STAX_R2(R, bitwise_and, _mm256_and_si256(x, y))                        \
  STAX_R2(R, bitwise_or, _mm256_or_si256(x, y))                          \
  STAX_R2(R, bitwise_xor, _mm256_xor_si256(x, y))                        \
  STAX_R1(R, bitwise_not, _mm256_xor_si256(x, _mm256_set1_epi32(-1)))    \
  STAX_M2(R, eq, MOVEMASK(_mm256_cmpeq_##E(x, y)))                       \
  STAX_M2(R, ne, MOVEMASK(_mm256_cmpeq_##E(x, y)) ^ low_bits(R::kLanes)) \
  STAX_M2(R, gt, MOVEMASK(GT(x, y)))                                     \
  STAX_M2(R, lt, MOVEMASK(GT(y, x)))                                     \
  STAX_M2(R, le, MOVEMASK(GT(x, y)) ^ low_bits(R::kLanes))               \
  STAX_M2(R, ge, MOVEMASK(GT(y, x)) ^ low_bits(R::kLanes))               \
  STAX_M1(R, isnan, 0)                                                   \
  STAX_M1(R, isinf, 0)                                                   \
  STAX_R1(R, floor, x)                                                   \
  STAX_R1(R, ceil, x)                                                    \
  STAX_R1(R, round, x)                                                   \
  STAX_R1(R, trunc, x)                                                   \
  STAX_R2(R, maximum, MAX(x, y))                                         \
  STAX_R2(R, minimum, MIN(x, y))                                         \
  STAX_R2(R, fmax, MAX(x, y))                                            \
  STAX_R2(R, fmin, MIN(x, y))                                            \
  STAX_R1(R, relu, MAX(x, _mm256_setzero_si256()))                       \
  inline R reg_select(uint64_t bits, const R& a, const R& b) {           \
    return R::make(_mm256_blendv_epi8(b.v, a.v, BITS_TO_LANES(bits)));   \
  }

inline uint64_t avx2_movemask32(__m256i m) {
  return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(m)));
}
inline uint64_t avx2_movemask64(__m256i m) {
  return static_cast<uint32_t>(_mm256_movemask_pd(_mm256_castsi256_pd(m)));
}
inline uint64_t avx2_movemask8(__m256i m) {
  return static_cast<uint32_t>(_mm256_movemask_epi8(m));
}
inline __m256i avx2_gt_u8(__m256i x, __m256i y) {
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  return _mm256_cmpgt_epi8(_mm256_xor_si256(x, bias), _mm256_xor_si256(y, bias));
}
// int64 has no max / min instruction before AVX-512: select on the compare.
inline __m256i avx2_max_epi64(__m256i x, __m256i y) {
  return _mm256_blendv_epi8(y, x, _mm256_cmpgt_epi64(x, y));
}
inline __m256i avx2_min_epi64(__m256i x, __m256i y) {
  return _mm256_blendv_epi8(y, x, _mm256_cmpgt_epi64(y, x));
}
STAX_AVX2_INT_OPS(I32x8, epi32, _mm256_cmpgt_epi32, _mm256_max_epi32, _mm256_min_epi32,
                  avx2_movemask32, avx2_bits_to_lanes32)
STAX_AVX2_INT_OPS(I64x4, epi64, _mm256_cmpgt_epi64, avx2_max_epi64, avx2_min_epi64, avx2_movemask64,
                  avx2_bits_to_lanes64)
STAX_AVX2_INT_OPS(I16x16, epi16, _mm256_cmpgt_epi16, _mm256_max_epi16, _mm256_min_epi16,
                  avx2_lanes16_to_bits, avx2_bits_to_lanes16)
STAX_AVX2_INT_OPS(I8x32, epi8, _mm256_cmpgt_epi8, _mm256_max_epi8, _mm256_min_epi8, avx2_movemask8,
                  avx2_bits_to_lanes8)
STAX_AVX2_INT_OPS(U8x32, epi8, avx2_gt_u8, _mm256_max_epu8, _mm256_min_epu8, avx2_movemask8,
                  avx2_bits_to_lanes8)
#undef STAX_AVX2_INT_OPS

STAX_R1(I32x8, abs, _mm256_abs_epi32(x))
STAX_R1(I16x16, abs, _mm256_abs_epi16(x))
STAX_R1(I8x32, abs, _mm256_abs_epi8(x))
STAX_R1(U8x32, abs, x)
STAX_R2(I32x8, mul, _mm256_mullo_epi32(x, y))
STAX_R2(I16x16, mul, _mm256_mullo_epi16(x, y))
// Variable shifts: counts >= the width (negative counts are huge unsigned) give 0 for sllv
// and the sign fill for srav, exactly the scalar semantics.
STAX_R2(I32x8, shift_left, _mm256_sllv_epi32(x, y))
STAX_R2(I64x4, shift_left, _mm256_sllv_epi64(x, y))
STAX_R2(I32x8, shift_right, _mm256_srav_epi32(x, y))

#undef STAX_R1
#undef STAX_R2
#undef STAX_M1
#undef STAX_M2

// Lane reductions of float registers: a log2(8)-step butterfly.
template <class F>
inline float avx2_fold(__m256 v, F op) {
  v = op(v, _mm256_permute2f128_ps(v, v, 1));
  v = op(v, _mm256_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = op(v, _mm256_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm256_cvtss_f32(v);
}
inline float reg_reduce_sum(const F8& a) {
  return avx2_fold(a.v, [](__m256 x, __m256 y) { return _mm256_add_ps(x, y); });
}
inline float reg_reduce_max(const F8& a) {
  return avx2_fold(a.v, [](__m256 x, __m256 y) { return reg_maximum(F8::make(x), F8::make(y)).v; });
}
inline float reg_reduce_min(const F8& a) {
  return avx2_fold(a.v, [](__m256 x, __m256 y) { return reg_minimum(F8::make(x), F8::make(y)).v; });
}

// ---- Half (F16C) / BFloat16 storage <-> float registers (round to nearest even) ----
inline __m128i avx2_load_u16x8(const void* p, int64_t count) {
  if (count >= 8) return _mm_loadu_si128(static_cast<const __m128i*>(p));
  alignas(16) uint16_t x[8] = {};
  if (count > 0) std::memcpy(x, p, static_cast<size_t>(count) * 2);
  return _mm_load_si128(reinterpret_cast<const __m128i*>(x));
}
inline void avx2_store_u16x8(void* p, __m128i v, int64_t count) {
  if (count >= 8) {
    _mm_storeu_si128(static_cast<__m128i*>(p), v);
    return;
  }
  alignas(16) uint16_t x[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(x), v);
  if (count > 0) std::memcpy(p, x, static_cast<size_t>(count) * 2);
}
#if defined(__F16C__)
inline F8 load16(Tag<F8>, const Half* p, int64_t count) {
  return F8::make(_mm256_cvtph_ps(avx2_load_u16x8(p, count)));
}
inline void store16(const F8& r, Half* p, int64_t count) {
  avx2_store_u16x8(p, _mm256_cvtps_ph(r.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), count);
}
#endif
inline F8 load16(Tag<F8>, const BFloat16* p, int64_t count) {
  const __m256i wide = _mm256_cvtepu16_epi32(avx2_load_u16x8(p, count));
  return F8::make(_mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
}
// The scalar float_to_bfloat16_bits per 32-bit lane: + 0x7FFF + lsb, NaN -> quiet NaN.
inline void store16(const F8& r, BFloat16* p, int64_t count) {
  const __m256i u = _mm256_castps_si256(r.v);
  const __m256i high = _mm256_srli_epi32(u, 16);
  const __m256i lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
  __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(r.v, r.v, _CMP_UNORD_Q));
  rounded = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, _mm256_set1_epi32(0x40)), nan);
  // Values fit 16 bits: an unsigned-saturating pack, then the two 64-bit halves together.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(rounded, rounded), 0xD8);
  avx2_store_u16x8(p, _mm256_castsi256_si128(packed), count);
}
// round16: store16 then load16 without leaving the register (bit for bit the same lanes):
// the rounding above with the result kept in the high half, NaN quieted the same way.
inline F8 round16(const F8& r, Tag<BFloat16>) {
  const __m256i u = _mm256_castps_si256(r.v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(r.v, r.v, _CMP_UNORD_Q));
  rounded = _mm256_blendv_epi8(rounded, _mm256_or_si256(u, _mm256_set1_epi32(0x400000)), nan);
  return F8::make(_mm256_castsi256_ps(
      _mm256_and_si256(rounded, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)))));
}
#if defined(__F16C__)
inline F8 round16(const F8& r, Tag<Half>) {
  return F8::make(
      _mm256_cvtph_ps(_mm256_cvtps_ph(r.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
}
#endif

// ---- Conversions between registers of equal lane counts ----
inline I32x8 convert_reg(Tag<I32x8>, const F8& r) {
  return I32x8::make(_mm256_cvttps_epi32(r.v));
}
inline F8 convert_reg(Tag<F8>, const I32x8& r) {
  return F8::make(_mm256_cvtepi32_ps(r.v));
}

#if !defined(STAX_SIMD_AVX512)
// Streaming stores of whole registers (p aligned to 32 bytes).
inline void store_stream_reg(const F8& r, float* p) {
  _mm256_stream_ps(p, r.v);
}
inline void store_stream_reg(const D4& r, double* p) {
  _mm256_stream_pd(p, r.v);
}
template <class T, int L>
inline void store_stream_reg(const Reg<T, L>& r, T* p) {
  if constexpr (L * sizeof(T) == 32) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), r.v);
  } else {
    r.store(p);
  }
}
#endif

}  // namespace detail
}  // namespace stax
