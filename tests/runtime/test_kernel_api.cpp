// The kernel-header API (docs/kernel_header_api.md) at every SIMD level:
// kernel_sources/kernel_api_kernel.cpp is JIT-compiled per level (levels this CPU cannot run
// are compiled and loaded but not executed). Every op of the PointwiseOp table on every
// element type it accepts, at widths 1, 8, 16, 64 and the native one, with counted tails over
// guard pages: the vector form must equal the scalar form bit for bit (any NaN equals any
// NaN), and the scalar form must give PyTorch's values on edge cases. Conversions likewise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
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
const char* const kDtypeNames[] = {"bool",  "int8",  "uint8",   "int16",
                                   "int32", "int64", "float32", "float64"};
const size_t kDtypeSize[] = {1, 1, 1, 2, 4, 8, 4, 8};

enum Kind { kFloating, kNumeric, kIntBool, kInteger, kAny };
struct OpCase {
  const char* name;
  Kind kind;
  bool produces_bool;
};
// Every PointwiseOp (pointwise_ops.cpp) with its operand kind.
const OpCase kOps[] = {
    {"add", kNumeric, false},
    {"sub", kNumeric, false},
    {"mul", kNumeric, false},
    {"div", kFloating, false},
    {"truncdiv", kNumeric, false},
    {"floordiv", kNumeric, false},
    {"remainder", kNumeric, false},
    {"fmod", kNumeric, false},
    {"pow", kNumeric, false},
    {"neg", kNumeric, false},
    {"abs", kNumeric, false},
    {"sign", kNumeric, false},
    {"reciprocal", kFloating, false},
    {"maximum", kAny, false},
    {"minimum", kAny, false},
    {"fmax", kNumeric, false},
    {"fmin", kNumeric, false},
    {"atan2", kFloating, false},
    {"hypot", kFloating, false},
    {"copysign", kFloating, false},
    {"bitwise_and", kIntBool, false},
    {"bitwise_or", kIntBool, false},
    {"bitwise_xor", kIntBool, false},
    {"bitwise_not", kIntBool, false},
    {"shift_left", kInteger, false},
    {"shift_right", kInteger, false},
    {"logical_and", kAny, true},
    {"logical_or", kAny, true},
    {"logical_xor", kAny, true},
    {"logical_not", kAny, true},
    {"eq", kAny, true},
    {"ne", kAny, true},
    {"lt", kAny, true},
    {"le", kAny, true},
    {"gt", kAny, true},
    {"ge", kAny, true},
    {"exp", kFloating, false},
    {"exp2", kFloating, false},
    {"expm1", kFloating, false},
    {"log", kFloating, false},
    {"log2", kFloating, false},
    {"log10", kFloating, false},
    {"log1p", kFloating, false},
    {"sqrt", kFloating, false},
    {"rsqrt", kFloating, false},
    {"sin", kFloating, false},
    {"cos", kFloating, false},
    {"tan", kFloating, false},
    {"asin", kFloating, false},
    {"acos", kFloating, false},
    {"atan", kFloating, false},
    {"sinh", kFloating, false},
    {"cosh", kFloating, false},
    {"tanh", kFloating, false},
    {"asinh", kFloating, false},
    {"acosh", kFloating, false},
    {"atanh", kFloating, false},
    {"erf", kFloating, false},
    {"erfc", kFloating, false},
    {"erfinv", kFloating, false},
    {"sigmoid", kFloating, false},
    {"relu", kNumeric, false},
    {"floor", kNumeric, false},
    {"ceil", kNumeric, false},
    {"round", kNumeric, false},
    {"trunc", kNumeric, false},
    {"isnan", kAny, true},
    {"isinf", kAny, true},
    {"where", kAny, false},
};

bool accepts(Kind kind, int dtype) {
  const bool floating = dtype == kF32 || dtype == kF64;
  switch (kind) {
    case kFloating:
      return floating;
    case kNumeric:
      return dtype != kBool;
    case kIntBool:
      return !floating;
    case kInteger:
      return !floating && dtype != kBool;
    case kAny:
      return true;
  }
  return false;
}

struct Kernel {
  std::shared_ptr<SharedLibrary> library;
  int (*native_lanes)(int);
  int (*op)(const char*, int, int, const void*, const void*, const bool*, void*, void*, int64_t);
  int (*convert)(int, int, int, const void*, void*, void*, int64_t);
};

JitOptions options_for(SimdLevel level) {
  JitOptions options;
  options.simd = level;
  return options;
}

std::string kernel_source() {
  return read_text(STAX_TEST_KERNEL_DIR "/kernel_api_kernel.cpp");
}

const Kernel& kernel_for(SimdLevel level) {
  static std::mutex mutex;
  static std::map<SimdLevel, Kernel> kernels;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = kernels.find(level);
  if (it != kernels.end()) return it->second;
  Kernel k;
  k.library = compile_and_load(kernel_source(), options_for(level)).library;
  k.native_lanes = k.library->function<decltype(k.native_lanes)>("stax_api_native_lanes");
  k.op = k.library->function<decltype(k.op)>("stax_api_op");
  k.convert = k.library->function<decltype(k.convert)>("stax_api_convert");
  return kernels.emplace(level, std::move(k)).first->second;
}

// Random values of `dtype` as bytes, with the dtype's edge cases mixed in; `counts` biases
// integers towards shift counts around the bit width.
std::vector<unsigned char> make_values(int dtype, int64_t n, unsigned seed, bool counts) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> bytes(static_cast<size_t>(n) * kDtypeSize[dtype]);
  for (int64_t i = 0; i < n; ++i) {
    unsigned char* p = bytes.data() + i * kDtypeSize[dtype];
    const uint64_t r = rng();
    const int pick = static_cast<int>(r % 5);
    switch (dtype) {
      case kBool:
        p[0] = r & 1;
        break;
      case kF32: {
        static const float specials[] = {0.0f,  -0.0f, INFINITY, -INFINITY, NAN,  0.5f,
                                         -0.5f, 1.5f,  2.5f,     -2.5f,     1.0f, -1.0f,
                                         2.0f,  3e38f, 1e-40f,   0.7f,      0.99f};
        float f = pick == 0 ? specials[(r >> 8) % std::size(specials)]
                            : static_cast<float>(static_cast<int64_t>(r >> 40) % 2000) / 64.0f *
                                  (r & 0x100 ? -1.0f : 1.0f);
        if (pick == 1)
          f = std::ldexp(static_cast<float>((r >> 12) % 1000) / 1000.0f, ((r >> 24) % 60) - 30);
        if (pick == 2) f = static_cast<float>((r >> 12) % 2001) / 1000.0f - 1.0f;
        std::memcpy(p, &f, 4);
        break;
      }
      case kF64: {
        static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 0.5,   -0.5,   1.5,
                                          2.5, -2.5, 1.0,      -1.0,      2.0, 1e300, 5e-320, 0.7};
        double d = pick == 0 ? specials[(r >> 8) % std::size(specials)]
                             : static_cast<double>(static_cast<int64_t>(r >> 40) % 2000) / 64.0 *
                                   (r & 0x100 ? -1.0 : 1.0);
        if (pick == 2) d = static_cast<double>((r >> 12) % 2001) / 1000.0 - 1.0;
        std::memcpy(p, &d, 8);
        break;
      }
      default: {
        const int bits = static_cast<int>(kDtypeSize[dtype] * 8);
        uint64_t v = rng();
        if (pick == 0) {
          const uint64_t min = uint64_t{1} << (bits - 1);
          const uint64_t specials[] = {0, 1, ~uint64_t{0}, min, min - 1, 2, ~uint64_t{1}};
          v = specials[(r >> 8) % std::size(specials)];
        } else if (pick == 1 || counts) {
          v = static_cast<uint64_t>(static_cast<int64_t>((r >> 8) % (bits + 5)) - 2);
        } else if (pick == 2) {
          v = static_cast<uint64_t>(static_cast<int64_t>((r >> 8) % 21) - 10);
        }
        std::memcpy(p, &v, kDtypeSize[dtype]);
      }
    }
  }
  return bytes;
}

bool same_element(int dtype, const unsigned char* a, const unsigned char* b) {
  if (dtype == kF32) {
    float x, y;
    std::memcpy(&x, a, 4);
    std::memcpy(&y, b, 4);
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  } else if (dtype == kF64) {
    double x, y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  }
  return std::memcmp(a, b, kDtypeSize[dtype]) == 0;
}

// Copies `bytes` to the end of a guarded buffer: any read past the end faults.
struct Guarded {
  GuardedBuffer buffer;
  unsigned char* data;
  explicit Guarded(const std::vector<unsigned char>& bytes)
      : buffer(bytes.size() + 1), data(buffer.tail<unsigned char>(bytes.size())) {
    if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
  }
};

class KernelApiTest : public ::testing::TestWithParam<SimdLevel> {
 protected:
  const Kernel& kernel() { return kernel_for(GetParam()); }
};

// Vector == scalar for every op, dtype, width and tail length.
TEST_P(KernelApiTest, EveryOpVectorEqualsScalar) {
  const Kernel& k = kernel();
  for (int dtype = 0; dtype < kDtypeCount; ++dtype) {
    for (int width_kind = 0; width_kind < 5; ++width_kind) {
      const int lanes = width_kind == 0   ? 16
                        : width_kind == 1 ? k.native_lanes(dtype)
                        : width_kind == 2 ? 64
                        : width_kind == 3 ? 1
                                          : 8;
      std::vector<int64_t> lengths = {lanes - 1, lanes, lanes + 1, 2 * lanes + 3, 300};
      // Every tail count 0 .. 16 at width 16 (and the others where the width is <= 17).
      for (int64_t t = 0; t <= std::min(lanes, 17); ++t) lengths.push_back(t);
      for (const OpCase& op : kOps) {
        const bool shift = std::string(op.name).rfind("shift", 0) == 0;
        for (int64_t n : lengths) {
          if (n < 0) continue;
          const Guarded x(make_values(dtype, n, 11 + n, false));
          const Guarded y(make_values(dtype, n, 97 + n, shift));
          const Guarded c(make_values(kBool, n, 5 + n, false));
          const int out_dtype = op.produces_bool ? kBool : dtype;
          const size_t out_bytes = static_cast<size_t>(n) * kDtypeSize[out_dtype];
          GuardedBuffer vo_buf(out_bytes + 1), so_buf(out_bytes + 1);
          unsigned char* vo = vo_buf.tail<unsigned char>(out_bytes);
          unsigned char* so = so_buf.tail<unsigned char>(out_bytes);
          const int found = k.op(op.name, dtype, width_kind, x.data, y.data,
                                 reinterpret_cast<const bool*>(c.data), vo, so, n);
          ASSERT_EQ(found, accepts(op.kind, dtype) ? 1 : 0)
              << op.name << " on " << kDtypeNames[dtype];
          if (!found) break;
          for (int64_t i = 0; i < n; ++i) {
            const size_t at = static_cast<size_t>(i) * kDtypeSize[out_dtype];
            ASSERT_TRUE(same_element(out_dtype, vo + at, so + at))
                << op.name << " on " << kDtypeNames[dtype] << " width " << lanes << " n " << n
                << " element " << i;
          }
        }
      }
    }
  }
}

// Scalar (and so vector) results of one op on given inputs.
template <class T, class R = T>
std::vector<R> eval(const Kernel& k, const char* op, int dtype, const std::vector<T>& x,
                    const std::vector<T>& y) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<R> vo(x.size()), so(x.size());
  std::vector<char> c(x.size(), 1);
  EXPECT_EQ(k.op(op, dtype, 0, x.data(), y.data(), reinterpret_cast<const bool*>(c.data()),
                 vo.data(), so.data(), n),
            1)
      << op;
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(std::memcmp(&vo[i], &so[i], sizeof(R)) == 0 || (vo[i] != vo[i] && so[i] != so[i]),
              true)
        << op << " element " << i;
  }
  return so;
}

TEST_P(KernelApiTest, IntegerSemanticsMatchPyTorch) {
  const Kernel& k = kernel();
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  const std::vector<int32_t> a = {7, -7, 7, -7, kMin, kMin, 5, 0, 9, -9};
  const std::vector<int32_t> b = {2, 2, -2, -2, -1, 1, 0, 0, 3, 3};
  EXPECT_EQ(eval(k, "truncdiv", kI32, a, b),
            (std::vector<int32_t>{3, -3, -3, 3, kMin, kMin, 0, 0, 3, -3}));
  EXPECT_EQ(eval(k, "floordiv", kI32, a, b),
            (std::vector<int32_t>{3, -4, -4, 3, kMin, kMin, 0, 0, 3, -3}));
  EXPECT_EQ(eval(k, "remainder", kI32, a, b),
            (std::vector<int32_t>{1, 1, -1, -1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(eval(k, "fmod", kI32, a, b), (std::vector<int32_t>{1, -1, 1, -1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(eval(k, "abs", kI32, a, b), (std::vector<int32_t>{7, 7, 7, 7, kMin, kMin, 5, 0, 9, 9}));
  // Shifts: counts >= 32 or < 0 give 0 (<<) and the sign fill (>>).
  const std::vector<int32_t> v = {1, 1, 1, -8, 8, -8, 3, 1};
  const std::vector<int32_t> s = {31, 32, -1, 40, 40, 2, 1, 33};
  EXPECT_EQ(eval(k, "shift_left", kI32, v, s), (std::vector<int32_t>{kMin, 0, 0, 0, 0, -32, 6, 0}));
  EXPECT_EQ(eval(k, "shift_right", kI32, v, s), (std::vector<int32_t>{0, 0, 0, -1, 0, -2, 1, 0}));
  const std::vector<uint8_t> u = {200, 200, 1, 255};
  const std::vector<uint8_t> us = {9, 130, 7, 1};
  EXPECT_EQ(eval(k, "shift_right", kU8, u, us), (std::vector<uint8_t>{0, 0, 0, 127}));
  EXPECT_EQ(eval(k, "shift_left", kU8, u, us), (std::vector<uint8_t>{0, 0, 128, 254}));
  // pow: exact wrapping repeated squaring; negative exponents as torch.pow.
  const std::vector<int64_t> base = {2, -1, -1, 2, 1, 3, 0, -2};
  const std::vector<int64_t> exp = {10, -3, -2, -1, -5, 40, 0, 3};
  uint64_t three40 = 1;
  for (int i = 0; i < 40; ++i) three40 *= 3;
  EXPECT_EQ(eval(k, "pow", kI64, base, exp),
            (std::vector<int64_t>{1024, -1, 1, 0, 1, static_cast<int64_t>(three40), 1, -8}));
  // uint8 arithmetic wraps; int8 neg of -128 is -128.
  EXPECT_EQ(eval(k, "add", kU8, std::vector<uint8_t>{250, 3}, std::vector<uint8_t>{10, 255}),
            (std::vector<uint8_t>{4, 2}));
  EXPECT_EQ(eval(k, "mul", kI8, std::vector<int8_t>{-128, 100}, std::vector<int8_t>{-1, 3}),
            (std::vector<int8_t>{-128, 44}));
  EXPECT_EQ(eval(k, "neg", kI8, std::vector<int8_t>{-128, 5}, std::vector<int8_t>{0, 0}),
            (std::vector<int8_t>{-128, -5}));
  EXPECT_EQ(eval(k, "maximum", kU8, std::vector<uint8_t>{200, 3}, std::vector<uint8_t>{100, 250}),
            (std::vector<uint8_t>{200, 250}));
  EXPECT_EQ(eval(k, "minimum", kI8, std::vector<int8_t>{-100, 3}, std::vector<int8_t>{100, -5}),
            (std::vector<int8_t>{-100, -5}));
}

std::vector<uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * 4);
  return out;
}

TEST_P(KernelApiTest, FloatSemanticsMatchPyTorch) {
  const Kernel& k = kernel();
  const float inf = INFINITY, nan = NAN;
  // torch.div(rounding_mode="floor") and torch.remainder.
  const std::vector<float> a = {7.5f, -7.5f, 5.0f, -0.0f, 1.0f, -1.0f, -5.5f, 5.5f, 0.0f};
  const std::vector<float> b = {2.0f, 2.0f, -0.0f, 1.0f, inf, inf, inf, 2.5f, -3.0f};
  EXPECT_EQ(bits_of(eval(k, "floordiv", kF32, a, b)),
            bits_of({3.0f, -4.0f, -inf, -0.0f, 0.0f, -1.0f, -1.0f, 2.0f, -0.0f}));
  const std::vector<float> rem = eval(k, "remainder", kF32, a, b);
  EXPECT_EQ(bits_of({rem[0], rem[1], rem[3], rem[4], rem[5], rem[6], rem[7]}),
            bits_of({1.5f, 0.5f, -0.0f, 1.0f, inf, inf, 0.5f}));
  EXPECT_TRUE(std::isnan(rem[2]));
  EXPECT_EQ(bits_of(eval(k, "truncdiv", kF32, a, b))[1], bits_of({-3.0f})[0]);
  // round half to even, sign of NaN / -0 is +0, NaN-propagating maximum vs fmax.
  const std::vector<float> r = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.7f};
  EXPECT_EQ(bits_of(eval(k, "round", kF32, r, r)), bits_of({0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 4.0f}));
  EXPECT_EQ(bits_of(eval(k, "sign", kF32, std::vector<float>{nan, -0.0f, -3.0f, 2.0f},
                         std::vector<float>(4, 0.0f))),
            bits_of({0.0f, 0.0f, -1.0f, 1.0f}));
  const std::vector<float> m = eval(k, "maximum", kF32, std::vector<float>{nan, 1.0f, 2.0f},
                                    std::vector<float>{1.0f, nan, -inf});
  EXPECT_TRUE(std::isnan(m[0]) && std::isnan(m[1]));
  EXPECT_EQ(m[2], 2.0f);
  EXPECT_EQ(eval(k, "fmax", kF32, std::vector<float>{nan, 1.0f}, std::vector<float>{1.0f, nan}),
            (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(bits_of(eval(k, "relu", kF32, std::vector<float>{-0.0f, -2.0f, 3.0f},
                         std::vector<float>(3, 0.0f))),
            bits_of({0.0f, 0.0f, 3.0f}));
  // erfinv: ATen's values; +-1 give +-inf, |x| > 1 NaN.
  const std::vector<float> e =
      eval(k, "erfinv", kF32, std::vector<float>{0.5f, -0.9f, 1.0f, -1.0f, 1.5f},
           std::vector<float>(5, 0.0f));
  EXPECT_NEAR(e[0], 0.4769362762f, 2e-7f);  // float32 ulp at 0.48 is 3e-8; a few ulp
  EXPECT_NEAR(e[1], -1.1630871537f, 5e-7f);
  EXPECT_EQ(e[2], inf);
  EXPECT_EQ(e[3], -inf);
  EXPECT_TRUE(std::isnan(e[4]));
  // Transcendentals agree with libm within float32 u10 (1 ulp) accuracy.
  const std::vector<float> t = {0.3f, -2.0f, 10.0f};
  const std::vector<float> ex = eval(k, "exp", kF32, t, t);
  for (size_t i = 0; i < t.size(); ++i)
    EXPECT_NEAR(ex[i], std::exp(t[i]), std::exp(t[i]) * 1.2e-7f);
}

// Float sin, cos, tan, asin, acos, atan (Stax's own code, stax_kernel_float_trig.h) at the
// special values, against torch 2.13's eager results: the sign of zero, +-1 and just outside
// for asin / acos, +-inf, NaN, subnormals, and arguments past the fast reduction's range (2^16)
// in both a full register and the scalar tail. Zeros, NaN and the +-pi/2, pi results must be
// eager's bits; the rest within assert_close's float32 tolerance (atol 1e-5, rtol 1.3e-6).
TEST_P(KernelApiTest, FloatTrigSpecialValuesMatchPyTorch) {
  const Kernel& k = kernel();
  const float inf = INFINITY, nan = NAN;
  const std::vector<float> x = {0.0f,        -0.0f, 1.0f,     -1.0f,    1.0000001f,
                                -1.0000001f, inf,   -inf,     nan,      1e-45f,
                                -1e-45f,     1e30f, -3.4e38f, 65536.0f, 65537.0f};
  const std::map<std::string, std::vector<float>> eager = {
      {"sin",
       {0.0f, -0.0f, 0.8414709568023682f, -0.8414709568023682f, 0.8414710164070129f,
        -0.8414710164070129f, nan, nan, nan, 1e-45f, -1e-45f, -0.791163444519043f,
        0.24408487975597382f, 0.6920654773712158f, -0.23347844183444977f}},
      {"cos",
       {1.0f, 1.0f, 0.5403023362159729f, 0.5403023362159729f, 0.5403022170066833f,
        0.5403022170066833f, nan, nan, nan, 1.0f, 1.0f, -0.6116048097610474f, 0.9697538614273071f,
        -0.7218347787857056f, -0.9723619818687439f}},
      {"tan",
       {0.0f, -0.0f, 1.5574077367782593f, -1.5574077367782593f, 1.557408094406128f,
        -1.557408094406128f, nan, nan, nan, 1e-45f, -1e-45f, 1.2935861349105835f,
        0.25169774889945984f, -0.9587588310241699f, 0.2401147335767746f}},
      {"asin",
       {0.0f, -0.0f, 1.5707963705062866f, -1.5707963705062866f, nan, nan, nan, nan, nan, 1e-45f,
        -1e-45f, nan, nan, nan, nan}},
      {"acos",
       {1.5707963705062866f, 1.5707963705062866f, 0.0f, 3.1415927410125732f, nan, nan, nan, nan,
        nan, 1.5707963705062866f, 1.5707963705062866f, nan, nan, nan, nan}},
      {"atan",
       {0.0f, -0.0f, 0.7853981852531433f, -0.7853981852531433f, 0.7853982448577881f,
        -0.7853982448577881f, 1.5707963705062866f, -1.5707963705062866f, nan, 1e-45f, -1e-45f,
        1.5707963705062866f, -1.5707963705062866f, 1.5707811117172241f, 1.5707811117172241f}},
  };
  // 37 elements: two full AVX-512 registers and a tail, each special value in every part.
  std::vector<float> in;
  for (size_t i = 0; i < 37; ++i) in.push_back(x[i % x.size()]);
  for (const auto& [op, want] : eager) {
    const std::vector<float> got = eval(k, op.c_str(), kF32, in, in);
    for (size_t i = 0; i < in.size(); ++i) {
      const float w = want[i % x.size()];
      if (w != w) {
        EXPECT_NE(got[i], got[i]) << op << "(" << in[i] << ")";
      } else if (w == 0.0f || w == 1.0f || std::fabs(w) == 1.5707963705062866f ||
                 w == 3.1415927410125732f) {
        EXPECT_EQ(bits_of({got[i]}), bits_of({w})) << op << "(" << in[i] << ") = " << got[i];
      } else {
        EXPECT_LE(std::fabs(got[i] - w), 1e-5f + 1.3e-6f * std::fabs(w))
            << op << "(" << in[i] << ") = " << got[i] << ", eager " << w;
      }
    }
  }
}

// float32 expm1, tanh and erfc (the headers' own code, stax_kernel_float_exp_family.h): the
// special values, the relative accuracy of small arguments (no cancellation to 0, -0 kept) and
// of erfc's tail down to the subnormals, against libm in double, on 17 elements (a vector
// and a tail at every level).
TEST_P(KernelApiTest, FloatExpFamilyKeepsRelativeAccuracyAndSpecialValues) {
  const Kernel& k = kernel();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto check = [&](const char* op, const std::vector<float>& x, double (*ref)(double),
                   double ulps) {
    const std::vector<float> y = eval(k, op, kF32, x, x);
    for (size_t i = 0; i < x.size(); ++i) {
      const double r = ref(static_cast<double>(x[i]));
      if (std::isnan(r)) {
        EXPECT_TRUE(std::isnan(y[i])) << op << "(" << x[i] << ")";
      } else if (r == 0.0 || std::isinf(static_cast<float>(r))) {
        EXPECT_EQ(bits_of({y[i]}), bits_of({static_cast<float>(r)})) << op << "(" << x[i] << ")";
      } else {
        // ulps of float32 at r (the subnormal spacing below 2^-126).
        const double ulp = std::ldexp(1.0, std::max(std::ilogb(r) - 23, -149));
        EXPECT_LE(std::fabs(y[i] - r), ulps * ulp) << op << "(" << x[i] << ") = " << y[i];
        EXPECT_EQ(std::signbit(y[i]), std::signbit(r)) << op << "(" << x[i] << ")";
      }
    }
  };
  check(
      "expm1",
      {-0.0f, 0.0f, 1e-30f, -1e-30f, 1e-7f, -3e-4f, 0.3f, -0.9f, 1.5f, -17.0f, -17.5f, -100.0f,
       20.0f, 88.7f, 88.8f, inf, -inf, nan},
      [](double x) { return std::expm1(x); }, 1.5);
  check(
      "tanh",
      {-0.0f, 0.0f, 1e-30f, -1e-30f, 1e-7f, -3e-4f, 0.05f, -0.5f, 0.56f, 1.5f, -4.0f, 8.7699f, 9.0f,
       -10.5f, 100.0f, inf, -inf, nan},
      [](double x) { return std::tanh(x); }, 5.5);
  // Where tanh rounds to +-1 it is exactly +-1, never an ulp beyond.
  const std::vector<float> saturated = {9.02f, 9.2f, 9.25f, 9.3f, 100.0f, inf};
  for (float s : {1.0f, -1.0f}) {
    std::vector<float> x;
    for (float v : saturated) x.push_back(s * v);
    EXPECT_EQ(eval(k, "tanh", kF32, x, x), std::vector<float>(x.size(), s));
  }
  check(
      "erfc", {-0.0f, 0.0f, 1e-30f, -1e-7f, 0.3f,  -0.8f, 1.9f,   -2.5f, 4.0f, 6.5f,
               9.0f,  9.4f, 9.9f,   10.06f, 10.2f, 30.0f, -30.0f, inf,   -inf, nan},
      [](double x) { return std::erfc(x); }, 6.5);
}

// convert<U>(Vec<T>) == convert<U>(T) for every pair, and PyTorch's x86 results.
TEST_P(KernelApiTest, ConversionsVectorEqualsScalarAndMatchPyTorch) {
  const Kernel& k = kernel();
  for (int from = 0; from < kDtypeCount; ++from) {
    for (int to = 0; to < kDtypeCount; ++to) {
      for (int width_kind = 0; width_kind < 5; ++width_kind) {
        const int64_t n = 77;
        const Guarded x(make_values(from, n, 3 + from * 8 + to, false));
        const size_t out_bytes = static_cast<size_t>(n) * kDtypeSize[to];
        std::vector<unsigned char> vo(out_bytes), so(out_bytes);
        ASSERT_EQ(k.convert(from, to, width_kind, x.data, vo.data(), so.data(), n), 1);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(
              same_element(to, vo.data() + i * kDtypeSize[to], so.data() + i * kDtypeSize[to]))
              << kDtypeNames[from] << " -> " << kDtypeNames[to] << " element " << i;
        }
      }
    }
  }
  const std::vector<float> f = {NAN, 1e20f, 300.0f, -1.0f, 3.9f, -3.9f, -0.0f, 2147483648.0f};
  auto convert_f32 = [&](int to, size_t size) {
    std::vector<unsigned char> vo(f.size() * size), so(f.size() * size);
    EXPECT_EQ(
        k.convert(kF32, to, 0, f.data(), vo.data(), so.data(), static_cast<int64_t>(f.size())), 1);
    return so;
  };
  const std::vector<unsigned char> i64 = convert_f32(kI64, 8);
  std::vector<int64_t> as_i64(f.size());
  std::memcpy(as_i64.data(), i64.data(), i64.size());
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(as_i64, (std::vector<int64_t>{min64, min64, 300, -1, 3, -3, 0, 2147483648LL}));
  const std::vector<unsigned char> i32 = convert_f32(kI32, 4);
  std::vector<int32_t> as_i32(f.size());
  std::memcpy(as_i32.data(), i32.data(), i32.size());
  const int32_t min32 = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(as_i32, (std::vector<int32_t>{min32, min32, 300, -1, 3, -3, 0, min32}));
  const std::vector<unsigned char> i8 = convert_f32(kI8, 1);
  EXPECT_EQ(static_cast<int8_t>(i8[2]), 44);  // 300 wraps through int32
  EXPECT_EQ(convert_f32(kU8, 1)[3], 255);     // -1 wraps to 255
  const std::vector<unsigned char> b = convert_f32(kBool, 1);
  EXPECT_EQ(std::vector<unsigned char>(b.begin(), b.end()),
            (std::vector<unsigned char>{1, 1, 1, 1, 1, 1, 0, 1}));  // NaN is true, -0 false
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

INSTANTIATE_TEST_SUITE_P(Levels, KernelApiTest, ::testing::ValuesIn(runnable_levels()), level_name);

// Levels this CPU cannot run are still compiled (and loaded: nothing runs at load time).
TEST(KernelApi, EveryLevelCompiles) {
  for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    if (cpu_supports(level)) {
      EXPECT_GE(kernel_for(level).native_lanes(kI8), 1);
      continue;
    }
    const JitResult result = compile_and_load(kernel_source(), options_for(level));
    EXPECT_TRUE(result.library->has_symbol("stax_api_op")) << simd_level_name(level);
  }
}

}  // namespace
}  // namespace stax::runtime
