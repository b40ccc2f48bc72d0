// The data-movement, 16-bit storage, reduction and error-check parts of the kernel-header API
// at every SIMD level the CPU runs (kernel_sources/kernel_api_data_kernel.cpp; compile-only
// levels are covered by KernelApiData.EveryLevelCompiles): strided / gathered / masked loads
// and their stores, streaming stores, arange, set, lane access, Half / BFloat16 vector
// conversions against the scalar ones, lane reductions with masked tails, arg-reductions with
// NaN and ties, Welford, transpose_tile, any_zero and any_out_of_range.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/jit.h"
#include "test_util.h"

namespace stax::runtime {
namespace {

using testing::GuardedBuffer;
using testing::read_text;

enum Dt { kBool, kI8, kU8, kI16, kI32, kI64, kF32, kF64, kDtypeCount };
const size_t kSize[] = {1, 1, 1, 2, 4, 8, 4, 8};

struct Kernel {
  std::shared_ptr<SharedLibrary> library;
  int (*moves)(int, int, int, const void*, const int64_t*, const bool*, int64_t, void*);
  int (*arange)(int, int, int64_t, int64_t, int64_t, void*);
  int (*reduce)(int, int, int, const void*, int64_t, void*);
  int (*errors)(int, int, const void*, int64_t, int64_t, int64_t, int*);
  void (*storage16)(int, int, const float*, uint16_t*, float*, uint16_t*, float*, int64_t);
  void (*round16)(int, int, const float*, float*, float*, int64_t);
  int (*transpose)(int, const void*, int64_t, void*);
  int (*native_lanes)(int);
};

std::string kernel_source() {
  return read_text(STAX_TEST_KERNEL_DIR "/kernel_api_data_kernel.cpp");
}

JitOptions options_for(SimdLevel level) {
  JitOptions options;
  options.simd = level;
  return options;
}

const Kernel& kernel_for(SimdLevel level) {
  static std::mutex mutex;
  static std::map<SimdLevel, Kernel> kernels;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = kernels.find(level);
  if (it != kernels.end()) return it->second;
  Kernel k;
  k.library = compile_and_load(kernel_source(), options_for(level)).library;
  const SharedLibrary& lib = *k.library;
  k.moves = lib.function<decltype(k.moves)>("stax_data_moves");
  k.arange = lib.function<decltype(k.arange)>("stax_data_arange");
  k.reduce = lib.function<decltype(k.reduce)>("stax_data_reduce");
  k.errors = lib.function<decltype(k.errors)>("stax_data_errors");
  k.storage16 = lib.function<decltype(k.storage16)>("stax_data_storage16");
  k.round16 = lib.function<decltype(k.round16)>("stax_data_round16");
  k.transpose = lib.function<decltype(k.transpose)>("stax_data_transpose");
  k.native_lanes = lib.function<decltype(k.native_lanes)>("stax_data_native_lanes");
  return kernels.emplace(level, std::move(k)).first->second;
}

// n elements of dtype: small values (bool: 0/1), so sums and products stay exact.
std::vector<unsigned char> values(int dtype, int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> out(static_cast<size_t>(n) * kSize[dtype]);
  for (int64_t i = 0; i < n; ++i) {
    const int v = static_cast<int>(rng() % 7) - (dtype == kU8 || dtype == kBool ? 0 : 3);
    unsigned char* p = out.data() + i * kSize[dtype];
    switch (dtype) {
      case kBool:
        p[0] = v % 2;
        break;
      case kI8: {
        int8_t x = static_cast<int8_t>(v);
        std::memcpy(p, &x, 1);
        break;
      }
      case kU8: {
        uint8_t x = static_cast<uint8_t>(v);
        std::memcpy(p, &x, 1);
        break;
      }
      case kI16: {
        int16_t x = static_cast<int16_t>(v);
        std::memcpy(p, &x, 2);
        break;
      }
      case kI32: {
        int32_t x = v;
        std::memcpy(p, &x, 4);
        break;
      }
      case kI64: {
        int64_t x = v;
        std::memcpy(p, &x, 8);
        break;
      }
      case kF32: {
        float x = static_cast<float>(v) * 0.5f;
        std::memcpy(p, &x, 4);
        break;
      }
      case kF64: {
        double x = v * 0.25;
        std::memcpy(p, &x, 8);
        break;
      }
    }
  }
  return out;
}

// v wrapped to the integer dtype (two's complement), as the kernels' integer sums do.
double wrapped(int dtype, double v) {
  if (dtype == kF32 || dtype == kF64) return v;
  const int bits = static_cast<int>(kSize[dtype] * 8);
  const uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(v));
  if (bits == 64) return static_cast<double>(static_cast<int64_t>(u));
  const uint64_t low = u & ((uint64_t{1} << bits) - 1);
  if (dtype == kU8) return static_cast<double>(low);
  const bool negative = (low >> (bits - 1)) & 1;
  return negative ? static_cast<double>(static_cast<int64_t>(low) - (int64_t{1} << bits))
                  : static_cast<double>(low);
}

double as_double(int dtype, const unsigned char* p) {
  switch (dtype) {
    case kBool:
      return p[0];
    case kI8: {
      int8_t x;
      std::memcpy(&x, p, 1);
      return x;
    }
    case kU8:
      return p[0];
    case kI16: {
      int16_t x;
      std::memcpy(&x, p, 2);
      return x;
    }
    case kI32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case kI64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
    case kF32: {
      float x;
      std::memcpy(&x, p, 4);
      return x;
    }
    default: {
      double x;
      std::memcpy(&x, p, 8);
      return x;
    }
  }
}

int lanes_of(int width_kind, int native) {
  return width_kind == 0   ? 16
         : width_kind == 1 ? native
         : width_kind == 2 ? 64
         : width_kind == 3 ? 1
                           : 8;
}

class KernelApiDataTest : public ::testing::TestWithParam<SimdLevel> {
 protected:
  const Kernel& kernel() { return kernel_for(GetParam()); }
};

TEST_P(KernelApiDataTest, LoadsAndStoresOfEveryKind) {
  const Kernel& k = kernel();
  for (int dtype = 0; dtype < kDtypeCount; ++dtype) {
    const size_t es = kSize[dtype];
    for (int width_kind = 0; width_kind < 5; ++width_kind) {
      for (int64_t n : {0, 1, 5, 16, 17, 63, 64, 65, 150}) {
        const std::vector<unsigned char> src3 = values(dtype, 3 * n, 7 + n);
        // Strided reads end at src[3 (n - 1)]: the buffer ends there.
        const size_t strided_bytes = n == 0 ? 0 : static_cast<size_t>(3 * (n - 1) + 1) * es;
        GuardedBuffer strided(strided_bytes + 1);
        unsigned char* sp = strided.tail<unsigned char>(strided_bytes);
        std::memcpy(sp, src3.data(), strided_bytes);
        GuardedBuffer plain(n * es + 1);
        unsigned char* pp = plain.tail<unsigned char>(n * es);
        std::memcpy(pp, src3.data(), n * es);
        std::vector<int64_t> offsets(static_cast<size_t>(n));
        std::vector<char> mask(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          offsets[i] = (i * 7 + 3) % n;  // a permutation when gcd(7, n) == 1, else repeats
          // Mixed lanes below 64, then all lanes set, then none from 128 on: whole vectors of
          // one value take load_masked's plain-load and no-load paths.
          mask[i] = i < 64 ? (i % 3) != 1 : i < 128;
        }
        const bool* m = reinterpret_cast<const bool*>(mask.data());
        for (int which = 0; which <= 6; ++which) {
          const size_t out_n = which == 5 ? 3 * static_cast<size_t>(n) : static_cast<size_t>(n);
          std::vector<unsigned char> out(out_n * es + 64, 0xAB);
          const void* src = which == 0 ? static_cast<const void*>(sp) : pp;
          if (which == 6 && std::gcd(int64_t{7}, n) != 1) continue;  // scatter needs a permutation
          ASSERT_EQ(k.moves(which, dtype, width_kind, src, offsets.data(), m, n, out.data()), 1);
          for (int64_t i = 0; i < n; ++i) {
            const unsigned char* want;
            static const unsigned char zero[8] = {};
            const unsigned char* got = out.data() + i * es;
            switch (which) {
              case 0:
                want = sp + 3 * i * es;
                break;
              case 1:
              case 2:
                want = pp + offsets[i] * es;
                break;
              case 3:
                want = mask[i] ? pp + i * es : zero;
                break;
              case 4:
                want = mask[i] ? pp + offsets[i] * es : zero;
                break;
              case 5:
                want = pp + i * es;
                got = out.data() + 3 * i * es;
                break;
              default:
                want = pp + i * es;
                got = out.data() + offsets[i] * es;
                break;
            }
            ASSERT_EQ(std::memcmp(got, want, es), 0)
                << "case " << which << " dtype " << dtype << " width " << width_kind << " n " << n
                << " element " << i;
          }
          // Nothing past the written elements.
          EXPECT_EQ(out[out_n * es], 0xAB) << "case " << which;
          if (which == 5 && n > 0) {
            EXPECT_EQ(out[es], 0xAB) << "store_strided wrote between its elements";
          }
        }
        // set(v, 0, count) keeps lanes >= count; v[l] reads lane l.
        std::vector<unsigned char> out(n * es + 1), copy(n * es + 1);
        ASSERT_EQ(k.moves(8, dtype, width_kind, pp, offsets.data(), m, n, out.data()), 1);
        ASSERT_EQ(k.moves(9, dtype, width_kind, pp, offsets.data(), m, n, copy.data()), 1);
        EXPECT_EQ(std::memcmp(copy.data(), pp, n * es), 0);
        const int lanes = lanes_of(width_kind, k.native_lanes(dtype));
        for (int64_t i = 0; i < n; ++i) {
          const int64_t start = i / lanes * lanes;
          const int64_t count = (start / lanes) % (lanes + 1);
          static const unsigned char zero[8] = {};
          const unsigned char* want = i - start < count ? zero : pp + i * es;
          ASSERT_EQ(std::memcmp(out.data() + i * es, want, es), 0) << "set, element " << i;
        }
      }
    }
  }
}

TEST_P(KernelApiDataTest, StreamingStoresWriteEverything) {
  const Kernel& k = kernel();
  for (int dtype = 0; dtype < kDtypeCount; ++dtype) {
    const int64_t n = 128;
    const std::vector<unsigned char> src = values(dtype, n, 3);
    void* out = std::aligned_alloc(64, n * kSize[dtype]);
    ASSERT_EQ(k.moves(7, dtype, 1, src.data(), nullptr, nullptr, n, out), 1);
    EXPECT_EQ(std::memcmp(out, src.data(), n * kSize[dtype]), 0) << dtype;
    std::free(out);
  }
}

TEST_P(KernelApiDataTest, Arange) {
  const Kernel& k = kernel();
  for (int width_kind = 0; width_kind < 5; ++width_kind) {
    std::vector<int64_t> out64(37);
    std::vector<int32_t> out32(37);
    k.arange(1, width_kind, -5, 3, 37, out64.data());
    k.arange(0, width_kind, 7, -2, 37, out32.data());
    for (int64_t i = 0; i < 37; ++i) {
      EXPECT_EQ(out64[i], -5 + 3 * i);
      EXPECT_EQ(out32[i], 7 - 2 * i);
    }
  }
}

// Float vectors through Half / BFloat16 storage equal the scalar conversions (round to
// nearest even), over random bit patterns and every 16-bit pattern loaded back.
TEST_P(KernelApiDataTest, Storage16VectorEqualsScalar) {
  const Kernel& k = kernel();
  std::mt19937 rng(5);
  const int64_t n = 70000;
  std::vector<float> in(n);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 2 == 0) u = (u & 0x8FFFFFFFu) | 0x30000000u;  // the half range
    if (i < 65536) u = static_cast<uint32_t>(i) << 16;    // every bf16 pattern exactly
    std::memcpy(&in[i], &u, 4);
  }
  for (int kind = 0; kind < 2; ++kind) {
    for (int width_kind = 0; width_kind < 5; ++width_kind) {
      for (int64_t len : {n, int64_t{13}, int64_t{0}}) {
        std::vector<uint16_t> vbits(len + 1, 0xABCD), sbits(len + 1);
        std::vector<float> vback(len + 1), sback(len + 1);
        k.storage16(kind, width_kind, in.data(), vbits.data(), vback.data(), sbits.data(),
                    sback.data(), len);
        EXPECT_EQ(vbits[len], 0xABCD) << "store past the count";
        for (int64_t i = 0; i < len; ++i) {
          const bool nan = std::isnan(in[i]);
          if (!nan) {
            ASSERT_EQ(vbits[i], sbits[i]) << "kind " << kind << " " << in[i];
          } else {
            // NaN stays NaN (the payload may differ).
            ASSERT_TRUE(std::isnan(sback[i]));
          }
          ASSERT_TRUE(std::memcmp(&vback[i], &sback[i], 4) == 0 ||
                      (std::isnan(vback[i]) && std::isnan(sback[i])))
              << "load kind " << kind << " element " << i;
        }
      }
    }
  }
}

// round_to<Half / BFloat16> of float vectors equals the scalar rounding (which is the
// stored-and-reloaded 16-bit value), lane for lane, over the same bit patterns; lanes past a
// tail's count are not written.
TEST_P(KernelApiDataTest, RoundTo16VectorEqualsScalar) {
  const Kernel& k = kernel();
  std::mt19937 rng(7);
  const int64_t n = 70000;
  std::vector<float> in(n);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 2 == 0) u = (u & 0x8FFFFFFFu) | 0x30000000u;  // the half range
    if (i % 3 == 0) u = (u & 0xFFFF0000u) | 0x8000u;      // bf16 ties
    if (i % 5 == 0) u = (u & 0xFFFFE000u) | 0x1000u;      // half ties
    std::memcpy(&in[i], &u, 4);
  }
  for (int kind = 0; kind < 2; ++kind) {
    for (int width_kind = 0; width_kind < 5; ++width_kind) {
      for (int64_t len : {n, int64_t{13}, int64_t{0}}) {
        std::vector<float> vout(len + 1, 12345.0f), sout(len + 1);
        k.round16(kind, width_kind, in.data(), vout.data(), sout.data(), len);
        EXPECT_EQ(vout[len], 12345.0f) << "store past the count";
        for (int64_t i = 0; i < len; ++i) {
          ASSERT_TRUE(std::memcmp(&vout[i], &sout[i], 4) == 0 ||
                      (std::isnan(vout[i]) && std::isnan(sout[i])))
              << "kind " << kind << " width " << width_kind << " element " << i << ": " << in[i]
              << " -> " << vout[i] << " vs " << sout[i];
          // Rounding changed the value to one the 16-bit type holds (not the float itself).
          if (kind == 1 && !std::isnan(sout[i])) {
            uint32_t bits;
            std::memcpy(&bits, &sout[i], 4);
            ASSERT_EQ(bits & 0xFFFFu, 0u) << in[i];
          }
        }
      }
    }
  }
}

TEST_P(KernelApiDataTest, LaneReductionsWithMaskedTails) {
  const Kernel& k = kernel();
  for (int dtype = 1; dtype < kDtypeCount; ++dtype) {
    for (int width_kind = 0; width_kind < 5; ++width_kind) {
      for (int64_t n : {1, 3, 15, 16, 17, 40, 63, 64, 65, 200}) {
        const std::vector<unsigned char> x = values(dtype, n, 19 + n);
        double sum = 0, prod = 1, mx = -INFINITY, mn = INFINITY;
        int64_t argmax = 0, argmin = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double v = as_double(dtype, x.data() + i * kSize[dtype]);
          sum += v;
          if (i < 4) prod *= v;  // only the first 4 values: exact in double, wrapped below
          if (v > mx) {
            mx = v;
            argmax = i;
          }
          if (v < mn) {
            mn = v;
            argmin = i;
          }
        }
        unsigned char out[48] = {};
        ASSERT_EQ(k.reduce(0, dtype, width_kind, x.data(), n, out), 1);
        // Values are multiples of 0.25 below 4 in magnitude: float sums up to 200 are exact;
        // integer sums wrap.
        EXPECT_EQ(as_double(dtype, out), wrapped(dtype, sum)) << dtype << " " << n;
        ASSERT_EQ(k.reduce(1, dtype, width_kind, x.data(), std::min<int64_t>(n, 4), out), 1);
        EXPECT_EQ(as_double(dtype, out), wrapped(dtype, prod)) << dtype << " " << n;
        ASSERT_EQ(k.reduce(2, dtype, width_kind, x.data(), n, out), 1);
        EXPECT_EQ(as_double(dtype, out), mx) << dtype << " " << n;
        ASSERT_EQ(k.reduce(3, dtype, width_kind, x.data(), n, out), 1);
        EXPECT_EQ(as_double(dtype, out), mn) << dtype << " " << n;
        int64_t index;
        ASSERT_EQ(k.reduce(4, dtype, width_kind, x.data(), n, out), 1);
        std::memcpy(&index, out + 8, 8);
        EXPECT_EQ(as_double(dtype, out), mx);
        EXPECT_EQ(index, argmax) << "argmax dtype " << dtype << " width " << width_kind << " n "
                                 << n;
        ASSERT_EQ(k.reduce(5, dtype, width_kind, x.data(), n, out), 1);
        std::memcpy(&index, out + 8, 8);
        EXPECT_EQ(index, argmin) << "argmin dtype " << dtype << " width " << width_kind << " n "
                                 << n;
      }
    }
  }
}

TEST_P(KernelApiDataTest, BoolReductions) {
  const Kernel& k = kernel();
  for (int width_kind = 0; width_kind < 5; ++width_kind) {
    for (int64_t n : {1, 15, 16, 17, 40, 64, 65}) {
      std::vector<char> all_true(n, 1), one_false(n, 1), all_false(n, 0), one_true(n, 0);
      one_false[n - 1] = 0;
      one_true[n - 1] = 1;
      bool out[16];
      auto run = [&](int which, const std::vector<char>& v) {
        k.reduce(which, kBool, width_kind, v.data(), n, out);
        return out[0];
      };
      EXPECT_TRUE(run(1, all_true));
      EXPECT_FALSE(run(1, one_false)) << n;
      EXPECT_FALSE(run(0, all_false));
      EXPECT_TRUE(run(0, one_true)) << n;
      int64_t res[2];
      k.reduce(2, kBool, width_kind, one_true.data(), n, res);
      EXPECT_EQ(res[0], 1);
      EXPECT_EQ(res[1], n - 1);
      k.reduce(3, kBool, width_kind, one_false.data(), n, res);
      EXPECT_EQ(res[0], 0);
      EXPECT_EQ(res[1], n - 1);
    }
  }
}

// NaN is the extreme and its first occurrence wins; ties give the first index.
TEST_P(KernelApiDataTest, ArgReductionsNanAndTies) {
  const Kernel& k = kernel();
  for (int width_kind = 0; width_kind < 5; ++width_kind) {
    for (int64_t n : {5, 17, 40, 100}) {  // the first NaN (n / 3 + 1) is before n - 2
      std::vector<float> x(n, 1.0f);
      x[n / 2] = 5.0f;
      x[n - 1] = 5.0f;
      unsigned char out[16];
      int64_t index;
      k.reduce(4, kF32, width_kind, x.data(), n, out);
      std::memcpy(&index, out + 8, 8);
      EXPECT_EQ(index, n / 2);
      x[n / 3 + 1] = NAN;
      x[n - 2] = NAN;
      k.reduce(4, kF32, width_kind, x.data(), n, out);
      std::memcpy(&index, out + 8, 8);
      EXPECT_EQ(index, n / 3 + 1) << n;
      float value;
      std::memcpy(&value, out, 4);
      EXPECT_TRUE(std::isnan(value));
      k.reduce(5, kF32, width_kind, x.data(), n, out);
      std::memcpy(&index, out + 8, 8);
      EXPECT_EQ(index, n / 3 + 1) << n;
      // max / min propagate NaN.
      k.reduce(2, kF32, width_kind, x.data(), n, out);
      std::memcpy(&value, out, 4);
      EXPECT_TRUE(std::isnan(value));
    }
  }
}

TEST_P(KernelApiDataTest, WelfordMatchesTwoPassReference) {
  const Kernel& k = kernel();
  for (int dtype : {kF32, kF64}) {
    for (int width_kind = 0; width_kind < 5; ++width_kind) {
      for (int64_t n : {1, 7, 16, 33, 1000}) {
        std::vector<unsigned char> x = values(dtype, n, 41 + n);
        double mean = 0, m2 = 0;
        for (int64_t i = 0; i < n; ++i) mean += as_double(dtype, x.data() + i * kSize[dtype]);
        mean /= n;
        for (int64_t i = 0; i < n; ++i) {
          const double d = as_double(dtype, x.data() + i * kSize[dtype]) - mean;
          m2 += d * d;
        }
        double out[6];
        ASSERT_EQ(k.reduce(6, dtype, width_kind, x.data(), n, out), 1);
        // float32 Welford over n values: relative error ~ n * 2^-24 at most.
        const double tol = (dtype == kF32 ? 6e-8 : 2e-16) * n * 4 + 1e-12;
        EXPECT_NEAR(out[0], mean, tol * (std::fabs(mean) + 1));
        EXPECT_NEAR(out[1], m2, tol * (m2 + 1));
        EXPECT_EQ(out[2], n);
        EXPECT_NEAR(out[3], mean, tol * (std::fabs(mean) + 1));
        EXPECT_NEAR(out[4], m2, tol * (m2 + 1));
        EXPECT_EQ(out[5], n);
      }
    }
  }
}

TEST_P(KernelApiDataTest, TransposeTiles) {
  const Kernel& k = kernel();
  struct Case {
    int which, rows, cols;
    size_t size;
    std::optional<SimdLevel> registers;  // the least level with a register transpose of it
    bool boolean = false;
  };
  constexpr std::nullopt_t kNone = std::nullopt;
  constexpr SimdLevel kAvx2 = SimdLevel::Avx2;
  constexpr SimdLevel kAvx512 = SimdLevel::Avx512;
  // Every register block of stax_kernel_transpose.h and two shapes of the plain loops.
  const Case cases[] = {
      {0, 16, 16, 4, kAvx512},     {1, 8, 8, 4, kAvx2},    {2, 16, 16, 4, kAvx512},
      {3, 8, 8, 4, kAvx2},         {4, 5, 3, 4, kNone},    {5, 4, 7, 8, kNone},
      {6, 8, 8, 8, kAvx512},       {7, 4, 4, 8, kAvx2},    {8, 8, 8, 8, kAvx512},
      {9, 4, 4, 8, kAvx2},         {10, 16, 16, 2, kAvx2}, {11, 16, 16, 2, kAvx2},
      {12, 16, 16, 2, kAvx2},      {13, 16, 16, 1, kAvx2}, {14, 16, 16, 1, kAvx2},
      {15, 16, 16, 1, kAvx2, true}};
  for (const Case& c : cases) {
    const int64_t src_stride = c.cols + 5;
    std::vector<unsigned char> src(c.rows * src_stride * c.size);
    // Distinct bit patterns per element (8-bit: distinct within each row and column of a
    // 16 x 16 block, so any two lanes exchanged show), exact in every type; bool: 0 / 1 in
    // a pattern that is not symmetric.
    for (int64_t i = 0; i < c.rows * src_stride; ++i) {
      const int64_t v = i * 3 + 1;
      unsigned char* p = src.data() + i * c.size;
      if (c.boolean) {
        *p = static_cast<unsigned char>((i * i + i / src_stride) % 3 == 0);
      } else if (c.which == 0 || c.which == 1 || c.which == 4) {
        const float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
      } else if (c.which == 6 || c.which == 7) {
        const double d = static_cast<double>(v) + 0.25;
        std::memcpy(p, &d, 8);
      } else {
        std::memcpy(p, &v, c.size);  // the low bytes of v (little endian)
      }
    }
    const int64_t dst_stride = c.rows + 3;
    std::vector<unsigned char> dst(c.cols * dst_stride * c.size, 0);
    const bool in_registers = c.registers != kNone && GetParam() != SimdLevel::Scalar &&
                              (c.registers == kAvx2 || GetParam() == SimdLevel::Avx512);
    ASSERT_EQ(k.transpose(c.which, src.data(), src_stride, dst.data()), in_registers ? 2 : 1)
        << "case " << c.which;
    for (int r = 0; r < c.rows; ++r) {
      for (int col = 0; col < c.cols; ++col) {
        EXPECT_EQ(std::memcmp(dst.data() + (col * dst_stride + r) * c.size,
                              src.data() + (r * src_stride + col) * c.size, c.size),
                  0)
            << "case " << c.which << " r " << r << " c " << col;
      }
    }
  }
}

TEST_P(KernelApiDataTest, ErrorChecks) {
  const Kernel& k = kernel();
  for (int dtype = 1; dtype < kDtypeCount; ++dtype) {
    for (int width_kind = 0; width_kind < 5; ++width_kind) {
      for (int64_t n : {1, 15, 17, 64, 65}) {
        std::vector<unsigned char> x(n * kSize[dtype]);
        for (int64_t i = 0; i < n; ++i) {
          const int8_t one = 2;  // every dtype: the value 2 (floats: a tiny subnormal pattern)
          if (dtype == kF32) {
            const float f = 2.0f;
            std::memcpy(x.data() + i * 4, &f, 4);
          } else if (dtype == kF64) {
            const double d = 2.0;
            std::memcpy(x.data() + i * 8, &d, 8);
          } else {
            std::memset(x.data() + i * kSize[dtype], 0, kSize[dtype]);
            std::memcpy(x.data() + i * kSize[dtype], &one, 1);
          }
        }
        int flags[2];
        k.errors(dtype, width_kind, x.data(), n, 0, 3, flags);
        EXPECT_EQ(flags[0], 0) << "no zero; dtype " << dtype << " n " << n;
        EXPECT_EQ(flags[1], 0) << "all in [0, 3)";
        k.errors(dtype, width_kind, x.data(), n, 0, 2, flags);
        EXPECT_EQ(flags[1], 1) << "2 is outside [0, 2)";
        std::memset(x.data() + (n - 1) * kSize[dtype], 0, kSize[dtype]);
        k.errors(dtype, width_kind, x.data(), n, 0, 3, flags);
        EXPECT_EQ(flags[0], 1) << "the last element is 0; dtype " << dtype << " n " << n;
      }
    }
  }
}

std::string level_name(const ::testing::TestParamInfo<SimdLevel>& info) {
  return std::string(simd_level_name(info.param));
}

std::vector<SimdLevel> runnable_levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    if (cpu_supports(level)) levels.push_back(level);
  }
  return levels;
}

INSTANTIATE_TEST_SUITE_P(Levels, KernelApiDataTest, ::testing::ValuesIn(runnable_levels()),
                         level_name);

TEST(KernelApiData, EveryLevelCompiles) {
  for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    if (cpu_supports(level)) {
      EXPECT_NE(kernel_for(level).moves, nullptr);
      continue;
    }
    const JitResult result = compile_and_load(kernel_source(), options_for(level));
    EXPECT_TRUE(result.library->has_symbol("stax_data_moves")) << simd_level_name(level);
  }
}

// The AVX-512 level's baseline (no host extensions: an AVX-512 CPU without AVX512-BF16)
// compiles everywhere; where it runs, its 16-bit stores give exactly the bits of the default
// build, which uses this CPU's extensions (AVX512-BF16's conversion with subnormal lanes left to
// the integer rounding): every bfloat16 pattern widened, random floats, subnormals, NaNs.
TEST(KernelApiData, Avx512BaselineStoresTheBitsOfTheDefaultBuild) {
  JitOptions options = options_for(SimdLevel::Avx512);
  options.host_extensions = false;
  const JitResult baseline = compile_and_load(kernel_source(), options);
  ASSERT_TRUE(baseline.library->has_symbol("stax_data_storage16"));
  if (!cpu_supports(SimdLevel::Avx512)) return;  // compile-checked only
  const auto storage16 =
      baseline.library->function<decltype(Kernel::storage16)>("stax_data_storage16");
  std::mt19937 rng(11);
  const int64_t n = 200003;  // a tail after the last full vector
  std::vector<float> in(n);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 3 == 0) u &= 0x807FFFFFu;                   // subnormals and zeros
    if (i % 7 == 0) u |= 0x7F800000u;                   // infinities and NaNs
    if (i < 65536) u = static_cast<uint32_t>(i) << 16;  // every bf16 pattern exactly
    std::memcpy(&in[i], &u, 4);
  }
  for (int kind = 0; kind < 2; ++kind) {
    for (int width_kind = 0; width_kind < 5; ++width_kind) {
      std::vector<uint16_t> want(n), got(n), scalar(n);
      std::vector<float> back(n);
      kernel_for(SimdLevel::Avx512)
          .storage16(kind, width_kind, in.data(), want.data(), back.data(), scalar.data(),
                     back.data(), n);
      storage16(kind, width_kind, in.data(), got.data(), back.data(), scalar.data(), back.data(),
                n);
      for (int64_t i = 0; i < n; ++i) {
        uint32_t u;
        std::memcpy(&u, &in[i], 4);
        ASSERT_EQ(got[i], want[i])
            << "kind " << kind << " width " << width_kind << " bits " << std::hex << u;
      }
    }
  }
}

}  // namespace
}  // namespace stax::runtime
