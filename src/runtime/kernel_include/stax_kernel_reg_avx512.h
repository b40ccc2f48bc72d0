// AVX-512 (F/BW/DQ/VL) registers under stax::Vec: Reg<float, 16>, Reg<double, 8>,
// Reg<int32_t, 16>, Reg<int64_t, 8>, Reg<int16_t, 32>, Reg<int8_t, 64>, Reg<uint8_t, 64> in
// one zmm each, with masked loads/stores for tails and opmask compares. Every overload here
// computes exactly what the scalar op of stax_kernel_scalar_ops.h computes per lane; the
// ops not overloaded fall back to its lane loops (stax_kernel_reg_generic.h). Half-width
// registers come from stax_kernel_reg_avx2.h.
// Included by stax_kernel.h when STAX_SIMD_AVX512 is the selected level.
#pragma once

#include <immintrin.h>
#include <sleef.h>

#include <cstdint>

#include "stax_kernel_reg_generic.h"

namespace stax {
namespace detail {

// Lanes [0, count) of an L-lane register, as an opmask (count clamped to [0, L]).
inline uint64_t avx512_count_mask(int64_t count, int lanes) {
  return count <= 0 ? 0 : count >= lanes ? low_bits(lanes) : low_bits(static_cast<int>(count));
}

// One zmm register of T. SUFFIX names the element in the masked load/store intrinsics.
#define STAX_AVX512_REG(T, L, RAW, ZERO, SET1, LOAD, STORE, MLOAD, MSTORE, MASK) \
  template <>                                                                    \
  struct Reg<T, L> {                                                             \
    using Elem = T;                                                              \
    static constexpr int kLanes = L;                                             \
    RAW v;                                                                       \
    static Reg make(RAW x) {                                                     \
      Reg r;                                                                     \
      r.v = x;                                                                   \
      return r;                                                                  \
    }                                                                            \
    static Reg zero() { return make(ZERO()); }                                   \
    static Reg broadcast(T x) { return make(SET1(x)); }                          \
    static Reg load(const T* p) { return make(LOAD(p)); }                        \
    static Reg load_partial(const T* p, int64_t count) {                         \
      return make(MLOAD(static_cast<MASK>(avx512_count_mask(count, L)), p));     \
    }                                                                            \
    void store(T* p) const { STORE(p, v); }                                      \
    void store_partial(T* p, int64_t count) const {                              \
      MSTORE(p, static_cast<MASK>(avx512_count_mask(count, L)), v);              \
    }                                                                            \
  };

inline __m512i avx512_loadu_si(const void* p) {
  return _mm512_loadu_si512(p);
}
inline void avx512_storeu_si(void* p, __m512i v) {
  _mm512_storeu_si512(p, v);
}
STAX_AVX512_REG(float, 16, __m512, _mm512_setzero_ps, _mm512_set1_ps, _mm512_loadu_ps,
                _mm512_storeu_ps, _mm512_maskz_loadu_ps, _mm512_mask_storeu_ps, __mmask16)
STAX_AVX512_REG(double, 8, __m512d, _mm512_setzero_pd, _mm512_set1_pd, _mm512_loadu_pd,
                _mm512_storeu_pd, _mm512_maskz_loadu_pd, _mm512_mask_storeu_pd, __mmask8)
STAX_AVX512_REG(int32_t, 16, __m512i, _mm512_setzero_si512, _mm512_set1_epi32, avx512_loadu_si,
                avx512_storeu_si, _mm512_maskz_loadu_epi32, _mm512_mask_storeu_epi32, __mmask16)
STAX_AVX512_REG(int64_t, 8, __m512i, _mm512_setzero_si512, _mm512_set1_epi64, avx512_loadu_si,
                avx512_storeu_si, _mm512_maskz_loadu_epi64, _mm512_mask_storeu_epi64, __mmask8)
STAX_AVX512_REG(int16_t, 32, __m512i, _mm512_setzero_si512, _mm512_set1_epi16, avx512_loadu_si,
                avx512_storeu_si, _mm512_maskz_loadu_epi16, _mm512_mask_storeu_epi16, __mmask32)
STAX_AVX512_REG(int8_t, 64, __m512i, _mm512_setzero_si512, _mm512_set1_epi8, avx512_loadu_si,
                avx512_storeu_si, _mm512_maskz_loadu_epi8, _mm512_mask_storeu_epi8, __mmask64)
STAX_AVX512_REG(uint8_t, 64, __m512i, _mm512_setzero_si512, _mm512_set1_epi8, avx512_loadu_si,
                avx512_storeu_si, _mm512_maskz_loadu_epi8, _mm512_mask_storeu_epi8, __mmask64)
#undef STAX_AVX512_REG

using F16 = Reg<float, 16>;
using D8 = Reg<double, 8>;
using I32x16 = Reg<int32_t, 16>;
using I64x8 = Reg<int64_t, 8>;
using I16x32 = Reg<int16_t, 32>;
using I8x64 = Reg<int8_t, 64>;
using U8x64 = Reg<uint8_t, 64>;

// ---- Helpers shared by the op macros below ----
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
#define STAX_R3(R, name, expr)                              \
  inline R reg_##name(const R& a, const R& b, const R& c) { \
    const auto x = a.v;                                     \
    const auto y = b.v;                                     \
    const auto z = c.v;                                     \
    return R::make(expr);                                   \
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

// ---- Floating registers: the same op set for float (ps) and double (pd) ----
#define STAX_AVX512_FLOAT_OPS(R, S, SL, MASK)                                                      \
  STAX_R2(R, add, _mm512_add_##S(x, y))                                                            \
  STAX_R2(R, sub, _mm512_sub_##S(x, y))                                                            \
  STAX_R2(R, mul, _mm512_mul_##S(x, y))                                                            \
  STAX_R2(R, div, _mm512_div_##S(x, y))                                                            \
  STAX_R1(R, neg, _mm512_xor_##S(x, _mm512_set1_##S(-0.0)))                                        \
  STAX_R1(R, abs, _mm512_andnot_##S(_mm512_set1_##S(-0.0), x))                                     \
  STAX_R1(R, sqrt, _mm512_sqrt_##S(x))                                                             \
  STAX_R1(R, rsqrt, _mm512_div_##S(_mm512_set1_##S(1.0), _mm512_sqrt_##S(x)))                      \
  STAX_R1(R, reciprocal, _mm512_div_##S(_mm512_set1_##S(1.0), x))                                  \
  STAX_R1(R, floor, _mm512_roundscale_##S(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC))           \
  STAX_R1(R, ceil, _mm512_roundscale_##S(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC))            \
  STAX_R1(R, trunc, _mm512_roundscale_##S(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC))              \
  STAX_R1(R, round, _mm512_roundscale_##S(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))       \
  /* NaN-propagating: a NaN lane gets x + y (a NaN); else the max/min instruction, which */        \
  /* returns the second operand on equal inputs like the scalar op */                              \
  STAX_R2(                                                                                         \
      R, maximum,                                                                                  \
      _mm512_mask_add_##S(_mm512_max_##S(x, y), _mm512_cmp_##S##_mask(x, y, _CMP_UNORD_Q), x, y))  \
  STAX_R2(                                                                                         \
      R, minimum,                                                                                  \
      _mm512_mask_add_##S(_mm512_min_##S(x, y), _mm512_cmp_##S##_mask(x, y, _CMP_UNORD_Q), x, y))  \
  /* NaN-ignoring: max(x, y) returns y when either is NaN; then lanes where y is NaN take x */     \
  STAX_R2(R, fmax,                                                                                 \
          _mm512_mask_mov_##S(_mm512_max_##S(x, y), _mm512_cmp_##S##_mask(y, y, _CMP_UNORD_Q), x)) \
  STAX_R2(R, fmin,                                                                                 \
          _mm512_mask_mov_##S(_mm512_min_##S(x, y), _mm512_cmp_##S##_mask(y, y, _CMP_UNORD_Q), x)) \
  STAX_R2(R, copysign,                                                                             \
          _mm512_or_##S(_mm512_andnot_##S(_mm512_set1_##S(-0.0), x),                               \
                        _mm512_and_##S(_mm512_set1_##S(-0.0), y)))                                 \
  /* x > 0 ? x : +0; NaN stays ("not less-or-equal" is true for NaN) */                            \
  STAX_R1(R, relu,                                                                                 \
          _mm512_maskz_mov_##S(_mm512_cmp_##S##_mask(x, _mm512_setzero_##S(), _CMP_NLE_UQ), x))    \
  STAX_M2(R, eq, _mm512_cmp_##S##_mask(x, y, _CMP_EQ_OQ))                                          \
  STAX_M2(R, ne, _mm512_cmp_##S##_mask(x, y, _CMP_NEQ_UQ))                                         \
  STAX_M2(R, lt, _mm512_cmp_##S##_mask(x, y, _CMP_LT_OQ))                                          \
  STAX_M2(R, le, _mm512_cmp_##S##_mask(x, y, _CMP_LE_OQ))                                          \
  STAX_M2(R, gt, _mm512_cmp_##S##_mask(x, y, _CMP_GT_OQ))                                          \
  STAX_M2(R, ge, _mm512_cmp_##S##_mask(x, y, _CMP_GE_OQ))                                          \
  STAX_M1(R, isnan, _mm512_cmp_##S##_mask(x, x, _CMP_UNORD_Q))                                     \
  STAX_M1(R, isinf,                                                                                \
          _mm512_cmp_##S##_mask(_mm512_andnot_##S(_mm512_set1_##S(-0.0), x),                       \
                                _mm512_set1_##S(__builtin_huge_val()), _CMP_EQ_OQ))                \
  STAX_R1(R, exp2, Sleef_finz_exp2##SL##_u10avx512f(x))                                            \
  STAX_R1(R, asinh, Sleef_finz_asinh##SL##_u10avx512f(x))                                          \
  STAX_R1(R, acosh, Sleef_finz_acosh##SL##_u10avx512f(x))                                          \
  STAX_R2(R, atan2, Sleef_finz_atan2##SL##_u10avx512f(x, y))                                       \
  STAX_R2(R, hypot, Sleef_finz_hypot##SL##_u05avx512f(x, y))                                       \
  inline R reg_select(uint64_t bits, const R& a, const R& b) {                                     \
    return R::make(_mm512_mask_blend_##S(static_cast<MASK>(bits), b.v, a.v));                      \
  }

STAX_AVX512_FLOAT_OPS(F16, ps, f16, __mmask16)
STAX_AVX512_FLOAT_OPS(D8, pd, d8, __mmask8)
#undef STAX_AVX512_FLOAT_OPS

// The ops whose float form is Stax's own code: double is SLEEF's (stax_kernel_reg_generic.h).
STAX_SLEEF_DOUBLE_REG_OPS(D8, 8, avx512f)
inline void reg_log_split(const F16& y, F16* e, F16* f) {
  const auto ix =
      _mm512_sub_epi32(_mm512_castps_si512(y.v), _mm512_set1_epi32(LogCoefficients::kSqrtHalfBits));
  *e = F16::make(_mm512_cvtepi32_ps(_mm512_srai_epi32(ix, 23)));
  const auto m = _mm512_add_epi32(_mm512_and_si512(ix, _mm512_set1_epi32(0x7fffff)),
                                  _mm512_set1_epi32(LogCoefficients::kSqrtHalfBits));
  *f = F16::make(_mm512_sub_ps(_mm512_castsi512_ps(m), _mm512_set1_ps(1.0f)));
}
STAX_R3(F16, fma, _mm512_fmadd_ps(x, y, z))
STAX_R2(F16, max_keep_nan, _mm512_max_ps(x, y))
STAX_R2(F16, min_keep_nan, _mm512_min_ps(x, y))
STAX_R2(F16, scale_pow2, _mm512_scalef_ps(x, y))
struct F16TableIndex {
  __m512i v;
};
inline F16TableIndex reg_table_index(const F16& f) {
  return {_mm512_cvttps_epi32(f.v)};
}
// The table fills the low half of the permute's source; indices are below 8 (a NaN lane's
// index 0x80000000 selects lane 0 through its low four bits).
inline F16 reg_table_lookup8(const F16TableIndex& i, const float* table) {
  return F16::make(_mm512_permutexvar_ps(i.v, _mm512_castps256_ps512(_mm256_loadu_ps(table))));
}
}  // namespace detail
}  // namespace stax
#include "stax_kernel_float_math_reg.h"
namespace stax {
namespace detail {
STAX_FLOAT_MATH_REG_OPS(F16, D8)
// The lanes whose bit B is set (stax_kernel_float_trig_reg.h).
template <int B>
inline uint64_t reg_bit_set(const F16& v) {
  return _mm512_test_epi32_mask(_mm512_castps_si512(v.v),
                                _mm512_set1_epi32(static_cast<int>(1u << B)));
}
}  // namespace detail
}  // namespace stax
#include "stax_kernel_float_trig_reg.h"
namespace stax {
namespace detail {
STAX_FLOAT_TRIG_REG_OPS(F16)
}  // namespace detail
}  // namespace stax
#include "stax_kernel_float_composed_reg.h"
namespace stax {
namespace detail {
STAX_FLOAT_COMPOSED_REG_OPS(F16)

// pow: SLEEF with the exact special exponents of the scalar op_pow (2, 1, 0, -1).
#define STAX_AVX512_POW(R, S, SL)                                                                 \
  inline R reg_pow(const R& a, const R& b) {                                                      \
    const auto x = a.v, e = b.v;                                                                  \
    auto r = Sleef_finz_pow##SL##_u10avx512f(x, e);                                               \
    r = _mm512_mask_mul_##S(r, _mm512_cmp_##S##_mask(e, _mm512_set1_##S(2.0), _CMP_EQ_OQ), x, x); \
    r = _mm512_mask_mov_##S(r, _mm512_cmp_##S##_mask(e, _mm512_set1_##S(1.0), _CMP_EQ_OQ), x);    \
    r = _mm512_mask_mov_##S(r, _mm512_cmp_##S##_mask(e, _mm512_setzero_##S(), _CMP_EQ_OQ),        \
                            _mm512_set1_##S(1.0));                                                \
    r = _mm512_mask_div_##S(r, _mm512_cmp_##S##_mask(e, _mm512_set1_##S(-1.0), _CMP_EQ_OQ),       \
                            _mm512_set1_##S(1.0), x);                                             \
    return R::make(r);                                                                            \
  }
STAX_AVX512_POW(F16, ps, f16)
STAX_AVX512_POW(D8, pd, d8)
#undef STAX_AVX512_POW

// ---- Integer registers ----
// Wrapping add/sub/neg, bitwise ops, max/min, compares and select for one lane width.
#define STAX_AVX512_INT_OPS(R, E, MASK, CMP)                                  \
  STAX_R2(R, add, _mm512_add_##E(x, y))                                       \
  STAX_R2(R, sub, _mm512_sub_##E(x, y))                                       \
  STAX_R1(R, neg, _mm512_sub_##E(_mm512_setzero_si512(), x))                  \
  STAX_R2(R, bitwise_and, _mm512_and_si512(x, y))                             \
  STAX_R2(R, bitwise_or, _mm512_or_si512(x, y))                               \
  STAX_R2(R, bitwise_xor, _mm512_xor_si512(x, y))                             \
  STAX_R1(R, bitwise_not, _mm512_xor_si512(x, _mm512_set1_epi32(-1)))         \
  STAX_M2(R, eq, _mm512_cmp_##CMP##_mask(x, y, _MM_CMPINT_EQ))                \
  STAX_M2(R, ne, _mm512_cmp_##CMP##_mask(x, y, _MM_CMPINT_NE))                \
  STAX_M2(R, lt, _mm512_cmp_##CMP##_mask(x, y, _MM_CMPINT_LT))                \
  STAX_M2(R, le, _mm512_cmp_##CMP##_mask(x, y, _MM_CMPINT_LE))                \
  STAX_M2(R, gt, _mm512_cmp_##CMP##_mask(x, y, _MM_CMPINT_NLE))               \
  STAX_M2(R, ge, _mm512_cmp_##CMP##_mask(x, y, _MM_CMPINT_NLT))               \
  STAX_M1(R, isnan, 0)                                                        \
  STAX_M1(R, isinf, 0)                                                        \
  STAX_R1(R, floor, x)                                                        \
  STAX_R1(R, ceil, x)                                                         \
  STAX_R1(R, round, x)                                                        \
  STAX_R1(R, trunc, x)                                                        \
  STAX_R2(R, maximum, _mm512_max_##CMP(x, y))                                 \
  STAX_R2(R, minimum, _mm512_min_##CMP(x, y))                                 \
  STAX_R2(R, fmax, _mm512_max_##CMP(x, y))                                    \
  STAX_R2(R, fmin, _mm512_min_##CMP(x, y))                                    \
  STAX_R1(R, relu, _mm512_max_##CMP(x, _mm512_setzero_si512()))               \
  inline R reg_select(uint64_t bits, const R& a, const R& b) {                \
    return R::make(_mm512_mask_blend_##E(static_cast<MASK>(bits), b.v, a.v)); \
  }

STAX_AVX512_INT_OPS(I32x16, epi32, __mmask16, epi32)
STAX_AVX512_INT_OPS(I64x8, epi64, __mmask8, epi64)
STAX_AVX512_INT_OPS(I16x32, epi16, __mmask32, epi16)
STAX_AVX512_INT_OPS(I8x64, epi8, __mmask64, epi8)
STAX_AVX512_INT_OPS(U8x64, epi8, __mmask64, epu8)
#undef STAX_AVX512_INT_OPS

STAX_R1(I32x16, abs, _mm512_abs_epi32(x))
STAX_R1(I64x8, abs, _mm512_abs_epi64(x))
STAX_R1(I16x32, abs, _mm512_abs_epi16(x))
STAX_R1(I8x64, abs, _mm512_abs_epi8(x))
STAX_R1(U8x64, abs, x)
STAX_R2(I32x16, mul, _mm512_mullo_epi32(x, y))
STAX_R2(I64x8, mul, _mm512_mullo_epi64(x, y))
STAX_R2(I16x32, mul, _mm512_mullo_epi16(x, y))
// Variable shifts: counts >= the width (and negative counts, which are huge unsigned) give 0
// for sllv and the sign fill for srav, exactly the scalar shift semantics.
STAX_R2(I32x16, shift_left, _mm512_sllv_epi32(x, y))
STAX_R2(I64x8, shift_left, _mm512_sllv_epi64(x, y))
STAX_R2(I16x32, shift_left, _mm512_sllv_epi16(x, y))
STAX_R2(I32x16, shift_right, _mm512_srav_epi32(x, y))
STAX_R2(I64x8, shift_right, _mm512_srav_epi64(x, y))
STAX_R2(I16x32, shift_right, _mm512_srav_epi16(x, y))

#undef STAX_R1
#undef STAX_R2
#undef STAX_R3
#undef STAX_M1
#undef STAX_M2

// ---- Lane reductions of float registers: a log2(16)-step butterfly ----
template <class F>
inline float avx512_fold(__m512 v, F op) {
  v = op(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = op(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  v = op(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = op(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_cvtss_f32(v);
}
inline float reg_reduce_sum(const F16& a) {
  return avx512_fold(a.v, [](__m512 x, __m512 y) { return _mm512_add_ps(x, y); });
}
inline float reg_reduce_max(const F16& a) {
  return avx512_fold(a.v,
                     [](__m512 x, __m512 y) { return reg_maximum(F16::make(x), F16::make(y)).v; });
}
inline float reg_reduce_min(const F16& a) {
  return avx512_fold(a.v,
                     [](__m512 x, __m512 y) { return reg_minimum(F16::make(x), F16::make(y)).v; });
}

// ---- Half / BFloat16 storage <-> float registers (round to nearest even) ----
inline __m256i avx512_load_u16x16(const void* p, int64_t count) {
  if (count >= 16) return _mm256_loadu_si256(static_cast<const __m256i*>(p));
  return _mm256_maskz_loadu_epi16(static_cast<__mmask16>(avx512_count_mask(count, 16)), p);
}
inline void avx512_store_u16x16(void* p, __m256i v, int64_t count) {
  if (count >= 16) {
    _mm256_storeu_si256(static_cast<__m256i*>(p), v);
  } else {
    _mm256_mask_storeu_epi16(p, static_cast<__mmask16>(avx512_count_mask(count, 16)), v);
  }
}
inline F16 load16(Tag<F16>, const Half* p, int64_t count) {
  return F16::make(_mm512_cvtph_ps(avx512_load_u16x16(p, count)));
}
inline void store16(const F16& r, Half* p, int64_t count) {
  avx512_store_u16x16(p, _mm512_cvtps_ph(r.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                      count);
}
inline F16 load16(Tag<F16>, const BFloat16* p, int64_t count) {
  const __m512i wide = _mm512_cvtepu16_epi32(avx512_load_u16x16(p, count));
  return F16::make(_mm512_castsi512_ps(_mm512_slli_epi32(wide, 16)));
}
// The scalar float_to_bfloat16_bits per 32-bit lane: + 0x7FFF + lsb, NaN -> quiet NaN. With
// AVX512-BF16 (simd_compiler_flags adds -mavx512bf16 where the CPU has it) one vcvtneps2bf16
// gives the same bits (round to nearest even, NaN quieted by the same bit) for every float but
// subnormals, which it flushes to zero; a register holding a subnormal lane (fpclass) takes the
// integer rounding instead. Eight vector instructions fewer per 16 stored values.
inline void store16(const F16& r, BFloat16* p, int64_t count) {
#ifdef __AVX512BF16__
  if (__builtin_expect(_mm512_fpclass_ps_mask(r.v, 0x20) == 0, 1)) {
    avx512_store_u16x16(p, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(r.v)), count);
    return;
  }
#endif
  const __m512i u = _mm512_castps_si512(r.v);
  const __m512i high = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  rounded = _mm512_mask_mov_epi32(rounded, _mm512_cmp_ps_mask(r.v, r.v, _CMP_UNORD_Q),
                                  _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
  avx512_store_u16x16(p, _mm512_cvtepi32_epi16(rounded), count);
}
// round16: store16 then load16 without leaving the register (bit for bit the same lanes):
// the rounding above with the result kept in the high half, NaN quieted the same way.
inline F16 round16(const F16& r, Tag<BFloat16>) {
  const __m512i u = _mm512_castps_si512(r.v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
  rounded = _mm512_mask_or_epi32(rounded, _mm512_cmp_ps_mask(r.v, r.v, _CMP_UNORD_Q), u,
                                 _mm512_set1_epi32(0x400000));
  return F16::make(_mm512_castsi512_ps(
      _mm512_and_si512(rounded, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)))));
}
inline F16 round16(const F16& r, Tag<Half>) {
  return F16::make(
      _mm512_cvtph_ps(_mm512_cvtps_ph(r.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
}

// ---- Conversions between registers of equal lane counts (the scalar convert's results:
// cvtt* give the x86 "integer indefinite" MIN for NaN / out of range; narrowing wraps) ----
inline I32x16 convert_reg(Tag<I32x16>, const F16& r) {
  return I32x16::make(_mm512_cvttps_epi32(r.v));
}
inline F16 convert_reg(Tag<F16>, const I32x16& r) {
  return F16::make(_mm512_cvtepi32_ps(r.v));
}
inline I64x8 convert_reg(Tag<I64x8>, const D8& r) {
  return I64x8::make(_mm512_cvttpd_epi64(r.v));
}
inline D8 convert_reg(Tag<D8>, const I64x8& r) {
  return D8::make(_mm512_cvtepi64_pd(r.v));
}
// float -> int8 / uint8 / int16 through int32, wrapped (vpmovdb / vpmovdw truncate).
inline Reg<int8_t, 16> convert_reg(Tag<Reg<int8_t, 16>>, const F16& r) {
  Reg<int8_t, 16> out;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out.lane),
                   _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(r.v)));
  return out;
}
inline Reg<uint8_t, 16> convert_reg(Tag<Reg<uint8_t, 16>>, const F16& r) {
  Reg<uint8_t, 16> out;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out.lane),
                   _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(r.v)));
  return out;
}
inline F16 convert_reg(Tag<F16>, const Reg<int8_t, 16>& r) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r.lane));
  return F16::make(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)));
}
inline F16 convert_reg(Tag<F16>, const Reg<uint8_t, 16>& r) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r.lane));
  return F16::make(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)));
}
inline F16 convert_reg(Tag<F16>, const Reg<int16_t, 16>& r) {
  return F16::make(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(r.v)));
}
inline Reg<int16_t, 16> convert_reg(Tag<Reg<int16_t, 16>>, const F16& r) {
  return Reg<int16_t, 16>::make(_mm512_cvtepi32_epi16(_mm512_cvttps_epi32(r.v)));
}

// Streaming stores of whole registers (p aligned to 64 bytes).
inline void store_stream_reg(const F16& r, float* p) {
  _mm512_stream_ps(p, r.v);
}
inline void store_stream_reg(const D8& r, double* p) {
  _mm512_stream_pd(p, r.v);
}
template <class T, int L>
inline void store_stream_reg(const Reg<T, L>& r, T* p) {
  if constexpr (L * sizeof(T) == 64) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), r.v);
  } else {
    r.store(p);
  }
}

}  // namespace detail
}  // namespace stax
