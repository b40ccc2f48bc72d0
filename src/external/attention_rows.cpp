// The vectorized row loops of attention's forward and backward (attention_internal.h): the
// mask, the row maximum, exp with its sum and the rounding of P to bfloat16, the stores.
// exp: a Cody-Waite reduction and Cephes's degree-5 polynomial (about 1 ulp), branch free so
// that GCC vectorizes the loops, compiled for AVX-512, AVX2 and baseline x86-64
// (target_clones: the loader picks one per machine). exp_row, a third of a bfloat16 forward's
// time on AMX (where the products take little), has a hand-vectorized AVX-512 form that computes
// exp, the sum and the bfloat16 rounding (AVX512-BF16's conversion) in one pass.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "external/attention_internal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STAX_ATTENTION_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define STAX_ATTENTION_AVX512_ROWS 1
#include <immintrin.h>
#else
#define STAX_ATTENTION_CLONES
#endif

namespace stax::external {
namespace detail {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

inline float bf16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// Round to nearest even; NaN stays a quiet NaN. Branch free.
inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// exp(x) in float32: x = n ln2 + r, |r| <= ln2 / 2 (ln2 in two parts), exp(r) by Cephes's
// polynomial, 2^n through the exponent bits. Below ln(FLT_MIN) (-inf included) gives 0 (no
// denormals), above 88.37 the largest power; NaN stays NaN.
constexpr float kExpLo = -87.3365478515625f, kExpHi = 88.3762626647949f;

inline float exp_poly(float x) {
  constexpr float kLo = kExpLo, kHi = kExpHi;
  constexpr float kLog2e = 1.44269504088896341f, kShifter = 12582912.0f;  // 1.5 * 2^23
  // Below the range the result is 0 whatever xc is: 0 there keeps y * 2^n away from the
  // denormals that kLo would give (a microcode assist per lane: masked scores, -inf, made a
  // causal forward's exp 4x slower).
  float xc = x < kLo ? 0.0f : x;
  xc = xc > kHi ? kHi : xc;
  const float t = xc * kLog2e + kShifter;  // round to nearest integer in the low bits
  const float n = t - kShifter;
  const int32_t ni = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kShifter);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const float two_n = std::bit_cast<float>(static_cast<uint32_t>(ni + 127) << 23);
  const float result = x < kLo ? 0.0f : y * two_n;
  return x != x ? x : result;
}

}  // namespace

STAX_ATTENTION_CLONES
void add_mask_row(float* s, int64_t n, const void* mask, bool mask_is_16bit, int64_t stride) {
  if (mask_is_16bit) {
    const auto* m = static_cast<const uint16_t*>(mask);
    if (stride == 1) {
      for (int64_t j = 0; j < n; ++j) s[j] += bf16_bits_to_float(m[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) s[j] += bf16_bits_to_float(m[j * stride]);
    }
  } else {
    const auto* m = static_cast<const float*>(mask);
    if (stride == 1) {
      for (int64_t j = 0; j < n; ++j) s[j] += m[j];
    } else {
      for (int64_t j = 0; j < n; ++j) s[j] += m[j * stride];
    }
  }
}

STAX_ATTENTION_CLONES
float row_max(const float* s, int64_t n) {
  constexpr int kLanes = 16;
  float lane[kLanes];
  for (float& l : lane) l = -kInf;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
#pragma GCC unroll 1  // unrolled, the lanes would become scalars the vectorizer leaves alone
    for (int l = 0; l < kLanes; ++l) lane[l] = s[j + l] > lane[l] ? s[j + l] : lane[l];
  }
  float m = -kInf;
  for (; j < n; ++j) m = s[j] > m ? s[j] : m;
  for (float l : lane) m = l > m ? l : m;
  return m;
}

namespace {

// The sum's order, the same on every ISA: element j goes to lane j mod 16 (the lanes summed in
// element order), then the lanes halve: lane l += lane l + k for k = 8, 4, 2, 1.
constexpr int kSumLanes = 16;

float sum_lanes(float* lane) {
  for (int k = kSumLanes / 2; k >= 1; k /= 2) {
    for (int l = 0; l < k; ++l) lane[l] += lane[l + k];
  }
  return lane[0];
}

STAX_ATTENTION_CLONES
float exp_row_portable(float* s, int64_t n, float ref, uint16_t* p16, bool /*keep_float*/) {
  if (p16 != nullptr) {
    for (int64_t j = 0; j < n; ++j) {
      const float e = exp_poly(s[j] - ref);
      s[j] = e;
      p16[j] = float_to_bf16_bits(e);
    }
  } else {
    for (int64_t j = 0; j < n; ++j) s[j] = exp_poly(s[j] - ref);
  }
  // A second pass over a row in L1: with the exp in one loop GCC 12 does not vectorize the
  // AVX2 clone.
  float lane[kSumLanes] = {};
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes) {
#pragma GCC unroll 1
    for (int l = 0; l < kSumLanes; ++l) lane[l] += s[j + l];
  }
  for (int l = 0; j + l < n; ++l) lane[l] += s[j + l];
  return sum_lanes(lane);
}

#ifdef STAX_ATTENTION_AVX512_ROWS
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized
// reports once inlined at -O3 (a false positive: every lane is written).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// exp_poly on 16 lanes, with the same steps.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,fma"))) inline __m512 exp_poly16(
    __m512 x) {
  const __m512 lo = _mm512_set1_ps(kExpLo), hi = _mm512_set1_ps(kExpHi);
  const __mmask16 below = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  // min(hi, xc) keeps a NaN xc (vminps returns its second operand then), which the steps below
  // carry to the result: NaN stays NaN without a select of its own.
  const __m512 xc = _mm512_min_ps(hi, _mm512_mask_blend_ps(below, x, _mm512_setzero_ps()));
  const __m512 shifter = _mm512_set1_ps(12582912.0f);  // 1.5 * 2^23
  const __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), shifter);
  const __m512 n = _mm512_sub_ps(t, shifter);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  // y * 2^n in one instruction: exact for the normal results, as the exponent bits' product.
  return _mm512_mask_mov_ps(_mm512_scalef_ps(y, n), below, _mm512_setzero_ps());
}

// exp, its sum and the rounding to bfloat16 in one pass (AVX512-BF16's conversion rounds to
// nearest even as float_to_bf16_bits; exp_poly gives no denormals, which it would flush).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,fma"))) float exp_row_avx512(
    float* s, int64_t n, float ref, uint16_t* p16, bool keep_float) {
  const __m512 vref = _mm512_set1_ps(ref);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += kSumLanes) {
    const __mmask16 k = n - j >= kSumLanes ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1);
    const __m512 e = exp_poly16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + j), vref));
    if (keep_float || p16 == nullptr) _mm512_mask_storeu_ps(s + j, k, e);
    if (p16 != nullptr) {
      _mm256_mask_storeu_epi16(p16 + j, k, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(e)));
    }
    acc = _mm512_mask_add_ps(acc, k, acc, e);
  }
  alignas(64) float lane[kSumLanes];
  _mm512_store_ps(lane, acc);
  return sum_lanes(lane);
}
#pragma GCC diagnostic pop
#endif

}  // namespace

std::vector<std::pair<std::string, ExpRowFn>> exp_row_forms() {
  std::vector<std::pair<std::string, ExpRowFn>> forms = {{"portable", exp_row_portable}};
#ifdef STAX_ATTENTION_AVX512_ROWS
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16")) {
    forms.emplace_back("avx512-bf16", exp_row_avx512);
  }
#endif
  return forms;
}

float exp_row(float* s, int64_t n, float ref, uint16_t* p16, bool keep_float) {
  static const ExpRowFn fn = exp_row_forms().back().second;  // the widest this CPU runs
  return fn(s, n, ref, p16, keep_float);
}

STAX_ATTENTION_CLONES
void softmax_grad_row(float* dp, const float* p, int64_t n, float d, uint16_t* ds16) {
  if (ds16 != nullptr) {
    for (int64_t j = 0; j < n; ++j) {
      const float v = p[j] * (dp[j] - d);
      dp[j] = v;
      ds16[j] = float_to_bf16_bits(v);
    }
  } else {
    for (int64_t j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - d);
  }
}

STAX_ATTENTION_CLONES
void scale_row(float* x, int64_t n, float factor) {
  for (int64_t j = 0; j < n; ++j) x[j] *= factor;
}

float dot_row(const void* x, int64_t xs, const void* y, int64_t ys, int64_t n, bool is_16bit) {
  float sum = 0.0f;
  if (is_16bit) {
    const auto* a = static_cast<const uint16_t*>(x);
    const auto* b = static_cast<const uint16_t*>(y);
    for (int64_t c = 0; c < n; ++c) {
      sum += bf16_bits_to_float(a[c * xs]) * bf16_bits_to_float(b[c * ys]);
    }
  } else {
    const auto* a = static_cast<const float*>(x);
    const auto* b = static_cast<const float*>(y);
    for (int64_t c = 0; c < n; ++c) sum += a[c * xs] * b[c * ys];
  }
  return sum;
}

STAX_ATTENTION_CLONES
void store_row(const float* src, int64_t n, float factor, void* dst, int64_t stride,
               bool is_16bit) {
  if (is_16bit) {
    auto* d = static_cast<uint16_t*>(dst);
    if (src == nullptr) {
      const uint16_t fill = float_to_bf16_bits(factor);
      for (int64_t c = 0; c < n; ++c) d[c * stride] = fill;
    } else if (stride == 1) {
      for (int64_t c = 0; c < n; ++c) d[c] = float_to_bf16_bits(src[c] * factor);
    } else {
      for (int64_t c = 0; c < n; ++c) d[c * stride] = float_to_bf16_bits(src[c] * factor);
    }
  } else {
    auto* d = static_cast<float*>(dst);
    if (src == nullptr) {
      for (int64_t c = 0; c < n; ++c) d[c * stride] = factor;
    } else if (stride == 1) {
      for (int64_t c = 0; c < n; ++c) d[c] = src[c] * factor;
    } else {
      for (int64_t c = 0; c < n; ++c) d[c * stride] = src[c] * factor;
    }
  }
}

float exp_scalar(float x) {
  return std::exp(x);
}

}  // namespace detail
}  // namespace stax::external
