// stax_kernel.h at every SIMD level the CPU supports: kernel_sources/vec_ops_kernel.cpp is
// JIT-compiled per level and each vector/mask operation is compared with std:: references
// (float32 tolerance for SLEEF functions, exact for IEEE-exact operations), including
// masked tails, NaN/inf propagation and out-of-bounds safety of counted loads/stores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "runtime/jit.h"
#include "runtime/kernel_include/stax_kernel_abi.h"
#include "runtime/subprocess.h"
#include "test_util.h"

namespace stax::runtime {
namespace {

using testing::close_enough;
using testing::GuardedBuffer;
using testing::read_text;
using testing::same_value;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
const int64_t kLengths[] = {1, 7, 15, 16, 17, 33, 1000};

// Operation codes of vec_ops_kernel.cpp.
enum UnaryOp { kAbs, kNeg, kUnaryMinus, kExp, kLog, kSqrt, kRsqrt, kTanh, kSigmoid, kRelu };
enum BinaryOp { kAdd, kSub, kMul, kDiv, kMaximum, kMinimum, kPowTensor };
enum CompareOp { kGt, kLt, kGe, kLe, kEq, kNe };
enum LogicalOp { kAnd, kOr, kXor, kNot, kAndNamed, kOrNamed, kXorNamed, kNotNamed, kWhereMask };
enum ReduceOp { kSum, kMax, kMin };

// Function table of one compiled copy of vec_ops_kernel.cpp.
struct Kernel {
  std::shared_ptr<SharedLibrary> library;
  int (*width)();
  int (*mask_width)();
  int (*width_macro)();
  void (*unary)(int, const float*, float*, int64_t);
  void (*unary_scalar)(int, const float*, float*, int64_t);
  void (*binary)(int, int, const float*, const float*, float*, int64_t);
  void (*binary_scalar)(int, const float*, const float*, float*, int64_t);
  void (*binary_broadcast)(int, const float*, float, float*, int64_t);
  void (*pow)(const float*, float, float*, int64_t);
  void (*pow_scalar)(const float*, float, float*, int64_t);
  void (*compare)(int, const float*, const float*, bool*, int64_t);
  void (*where)(const bool*, const float*, const float*, float*, int64_t);
  void (*logical)(int, const bool*, const bool*, bool*, int64_t);
  float (*reduce)(int, const float*, int64_t);
  float (*reduce_one)(int, const float*);
  void (*gather)(const float*, const int64_t*, float*, int64_t);
  void (*mask_from_lanes)(const float*, bool*, int64_t);
  void (*copy_count)(const float*, float*, int64_t);
  void (*copy_bytes_count)(const bool*, bool*, int64_t);
  void (*load_count_full)(const float*, float*, int64_t);
  void (*load_bytes_count_full)(const bool*, bool*, int64_t);
  void (*set)(const float*, const float*, float*, int64_t);
  void (*index)(int64_t, int64_t, int64_t*);
  void (*half)(const float*, uint16_t*, float*, uint16_t*, float*, int64_t);
  void (*half_from_bits)(const uint16_t*, float*, int64_t);
  void (*bf16_from_bits)(const uint16_t*, float*, int64_t);
  void (*error)(char*, int64_t, int);
  int (*alloc)(int64_t);
  int (*scratch_reuse)(int64_t, int64_t);
  void (*tensor_arg)(const StaxTensorArg*, int64_t*);
};

std::string kernel_source() {
  return read_text(STAX_TEST_KERNEL_DIR "/vec_ops_kernel.cpp");
}

JitOptions options_for(SimdLevel level) {
  JitOptions options;
  options.simd = level;
  return options;
}

// Compiled once per level per process (the on-disk cache makes reruns cheap).
const Kernel& kernel_for(SimdLevel level) {
  static std::mutex mutex;
  static std::map<SimdLevel, Kernel> kernels;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = kernels.find(level);
  if (it != kernels.end()) return it->second;
  Kernel k;
  k.library = compile_and_load(kernel_source(), options_for(level)).library;
  const SharedLibrary& lib = *k.library;
  k.width = lib.function<decltype(k.width)>("stax_test_width");
  k.mask_width = lib.function<decltype(k.mask_width)>("stax_test_mask_width");
  k.width_macro = lib.function<decltype(k.width_macro)>("stax_test_width_macro");
  k.unary = lib.function<decltype(k.unary)>("stax_test_unary");
  k.unary_scalar = lib.function<decltype(k.unary_scalar)>("stax_test_unary_scalar");
  k.binary = lib.function<decltype(k.binary)>("stax_test_binary");
  k.binary_scalar = lib.function<decltype(k.binary_scalar)>("stax_test_binary_scalar");
  k.binary_broadcast = lib.function<decltype(k.binary_broadcast)>("stax_test_binary_broadcast");
  k.pow = lib.function<decltype(k.pow)>("stax_test_pow");
  k.pow_scalar = lib.function<decltype(k.pow_scalar)>("stax_test_pow_scalar");
  k.compare = lib.function<decltype(k.compare)>("stax_test_compare");
  k.where = lib.function<decltype(k.where)>("stax_test_where");
  k.logical = lib.function<decltype(k.logical)>("stax_test_logical");
  k.reduce = lib.function<decltype(k.reduce)>("stax_test_reduce");
  k.reduce_one = lib.function<decltype(k.reduce_one)>("stax_test_reduce_one");
  k.gather = lib.function<decltype(k.gather)>("stax_test_gather");
  k.mask_from_lanes = lib.function<decltype(k.mask_from_lanes)>("stax_test_mask_from_lanes");
  k.copy_count = lib.function<decltype(k.copy_count)>("stax_test_copy_count");
  k.copy_bytes_count = lib.function<decltype(k.copy_bytes_count)>("stax_test_copy_bytes_count");
  k.load_count_full = lib.function<decltype(k.load_count_full)>("stax_test_load_count_full");
  k.load_bytes_count_full =
      lib.function<decltype(k.load_bytes_count_full)>("stax_test_load_bytes_count_full");
  k.set = lib.function<decltype(k.set)>("stax_test_set");
  k.index = lib.function<decltype(k.index)>("stax_test_index");
  k.half = lib.function<decltype(k.half)>("stax_test_half");
  k.half_from_bits = lib.function<decltype(k.half_from_bits)>("stax_test_half_from_bits");
  k.bf16_from_bits = lib.function<decltype(k.bf16_from_bits)>("stax_test_bf16_from_bits");
  k.error = lib.function<decltype(k.error)>("stax_test_error");
  k.alloc = lib.function<decltype(k.alloc)>("stax_test_alloc");
  k.scratch_reuse = lib.function<decltype(k.scratch_reuse)>("stax_test_scratch_reuse");
  k.tensor_arg = lib.function<decltype(k.tensor_arg)>("stax_test_tensor_arg");
  return kernels.emplace(level, std::move(k)).first->second;
}

// Uniform values in [lo, hi); when `specials`, every 11th element is a special value.
std::vector<float> make_values(int64_t n, unsigned seed, float lo, float hi, bool specials) {
  static const float kSpecials[] = {0.0f,    -0.0f, kInf, -kInf, kNaN, 1e-30f, -1e-30f, 88.0f,
                                    -100.0f, 1e30f, 0.5f, -0.5f, 1.0f, -1.0f,  2.0f};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    values[i] = dist(rng);
    if (specials && i % 11 == 3) values[i] = kSpecials[(i / 11 + seed) % std::size(kSpecials)];
  }
  return values;
}

std::vector<char> make_bools(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<char> values(static_cast<size_t>(n));
  for (auto& v : values) v = static_cast<char>(rng() & 1);
  return values;
}

bool* as_bools(std::vector<char>& v) {
  return reinterpret_cast<bool*>(v.data());
}
const bool* as_bools(const std::vector<char>& v) {
  return reinterpret_cast<const bool*>(v.data());
}

float unary_reference(int op, float x) {
  switch (op) {
    case kAbs:
      return std::fabs(x);
    case kNeg:
    case kUnaryMinus:
      return -x;
    case kExp:
      return std::exp(x);
    case kLog:
      return std::log(x);
    case kSqrt:
      return std::sqrt(x);
    case kRsqrt:
      return 1.0f / std::sqrt(x);
    case kTanh:
      return std::tanh(x);
    case kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case kRelu:
      return std::isnan(x) ? x : (x > 0.0f ? x : 0.0f);
  }
  return x;
}

bool unary_is_exact(int op) {
  return op == kAbs || op == kNeg || op == kUnaryMinus || op == kSqrt || op == kRsqrt ||
         op == kRelu;
}

float binary_reference(int op, float a, float b) {
  switch (op) {
    case kAdd:
      return a + b;
    case kSub:
      return a - b;
    case kMul:
      return a * b;
    case kDiv:
      return a / b;
    case kMaximum:
      return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
    case kMinimum:
      return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
    case kPowTensor:
      return std::pow(a, b);
  }
  return a;
}

// PyTorch's pow with a scalar exponent, in std:: terms.
float pow_reference(float x, float e) {
  if (e == 2.0f) return x * x;
  if (e == 3.0f) return x * x * x;
  if (e == 0.5f) return std::sqrt(x);
  if (e == -0.5f) return 1.0f / std::sqrt(x);
  if (e == -1.0f) return 1.0f / x;
  if (e == -2.0f) return 1.0f / (x * x);
  if (e == 1.0f) return x;
  if (e == 0.0f) return 1.0f;
  return std::pow(x, e);
}

bool compare_reference(int op, float a, float b) {
  switch (op) {
    case kGt:
      return a > b;
    case kLt:
      return a < b;
    case kGe:
      return a >= b;
    case kLe:
      return a <= b;
    case kEq:
      return a == b;
    case kNe:
      return a != b;
  }
  return false;
}

bool logical_reference(int op, bool a, bool b) {
  switch (op) {
    case kAnd:
    case kAndNamed:
      return a && b;
    case kOr:
    case kOrNamed:
      return a || b;
    case kXor:
    case kXorNamed:
      return a != b;
    case kNot:
    case kNotNamed:
      return !a;
    case kWhereMask:
      return a == b;
  }
  return false;
}

class KernelHeaderTest : public ::testing::TestWithParam<SimdLevel> {
 protected:
  const Kernel& kernel() const { return kernel_for(GetParam()); }
  int width() const { return simd_width(GetParam(), DType::Float32); }
};

TEST_P(KernelHeaderTest, WidthMatchesLevel) {
  EXPECT_EQ(kernel().width(), width());
  EXPECT_EQ(kernel().mask_width(), width());
  EXPECT_EQ(kernel().width_macro(), width());
}

TEST_P(KernelHeaderTest, UnaryOpsMatchStdAndScalarHelpers) {
  for (int op = kAbs; op <= kRelu; ++op) {
    for (int64_t n : kLengths) {
      const std::vector<float> x = make_values(n, 17 + static_cast<unsigned>(n), -10, 10, true);
      std::vector<float> out(n, 12345.0f), scalar(n, 12345.0f);
      kernel().unary(op, x.data(), out.data(), n);
      kernel().unary_scalar(op, x.data(), scalar.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const float want = unary_reference(op, x[i]);
        SCOPED_TRACE(::testing::Message() << "op " << op << " n " << n << " i " << i << " x "
                                          << x[i] << " got " << out[i] << " want " << want);
        if (unary_is_exact(op)) {
          EXPECT_TRUE(same_value(out[i], want));
          EXPECT_TRUE(same_value(scalar[i], want));
        } else {
          EXPECT_TRUE(close_enough(out[i], want));
          EXPECT_TRUE(close_enough(scalar[i], want));
          EXPECT_TRUE(close_enough(out[i], scalar[i]));
        }
      }
    }
  }
}

TEST_P(KernelHeaderTest, BinaryOpsMatchStd) {
  for (int op = kAdd; op <= kPowTensor; ++op) {
    for (int compound = 0; compound < 2; ++compound) {
      for (int64_t n : kLengths) {
        const bool is_pow = op == kPowTensor;
        const std::vector<float> a =
            make_values(n, 5 + static_cast<unsigned>(n), is_pow ? 0.1f : -10, 10, true);
        const std::vector<float> b =
            make_values(n, 9 + static_cast<unsigned>(n), is_pow ? -3 : -10, is_pow ? 3 : 10, true);
        std::vector<float> out(n), scalar(n);
        kernel().binary(op, compound, a.data(), b.data(), out.data(), n);
        kernel().binary_scalar(op, a.data(), b.data(), scalar.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          const float want = binary_reference(op, a[i], b[i]);
          SCOPED_TRACE(::testing::Message() << "op " << op << " n " << n << " i " << i << " a "
                                            << a[i] << " b " << b[i] << " got " << out[i]);
          if (is_pow) {
            EXPECT_TRUE(close_enough(out[i], want));
            EXPECT_TRUE(close_enough(scalar[i], want));
          } else {
            EXPECT_TRUE(close_enough(out[i], want, 0, 0));
            EXPECT_TRUE(close_enough(scalar[i], want, 0, 0));
          }
        }
      }
    }
  }
}

TEST_P(KernelHeaderTest, BroadcastScalarOperand) {
  const int64_t n = 33;
  const std::vector<float> a = make_values(n, 3, -10, 10, true);
  std::vector<float> out(n);
  for (int op : {kAdd, kMul, kDiv, kMaximum, kMinimum}) {
    kernel().binary_broadcast(op, a.data(), 2.5f, out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_TRUE(close_enough(out[i], binary_reference(op, a[i], 2.5f), 0, 0))
          << "op " << op << " i " << i;
    }
  }
}

TEST_P(KernelHeaderTest, PowSpecialExponents) {
  const float exponents[] = {2.0f, 3.0f, 0.5f, -0.5f, -1.0f, -2.0f, 1.0f, 0.0f, 1.7f, -2.3f, 4.0f};
  for (float e : exponents) {
    for (int64_t n : kLengths) {
      // Includes NaN, infinities and zeros: pow(NaN, 0) = 1, 1/0 = inf, sqrt(-1) = NaN.
      const std::vector<float> x = make_values(n, 21 + static_cast<unsigned>(n), -4, 8, true);
      std::vector<float> out(n), scalar(n);
      kernel().pow(x.data(), e, out.data(), n);
      kernel().pow_scalar(x.data(), e, scalar.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const float want = pow_reference(x[i], e);
        SCOPED_TRACE(::testing::Message()
                     << "e " << e << " x " << x[i] << " got " << out[i] << " want " << want);
        EXPECT_TRUE(close_enough(out[i], want));
        EXPECT_TRUE(close_enough(scalar[i], want));
        if (e == 2.0f || e == 3.0f || e == 0.5f || e == -0.5f || e == -1.0f || e == -2.0f ||
            e == 1.0f || e == 0.0f) {
          EXPECT_TRUE(same_value(out[i], want));  // special cases are exact formulas
        }
      }
    }
  }
}

TEST_P(KernelHeaderTest, ComparisonsFollowIeee) {
  for (int op = kGt; op <= kNe; ++op) {
    for (int64_t n : kLengths) {
      std::vector<float> a = make_values(n, 31 + static_cast<unsigned>(n), -3, 3, true);
      std::vector<float> b = make_values(n, 37 + static_cast<unsigned>(n), -3, 3, true);
      for (int64_t i = 0; i < n; i += 4) b[i] = a[i];  // equal pairs, including NaN == NaN
      std::vector<char> out(n + 1, 0x7F);
      kernel().compare(op, a.data(), b.data(), as_bools(out), n);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(out[i], compare_reference(op, a[i], b[i]) ? 1 : 0)
            << "op " << op << " a " << a[i] << " b " << b[i];
      }
      EXPECT_EQ(out[n], 0x7F) << "wrote past n";
    }
  }
}

TEST_P(KernelHeaderTest, WhereSelectsPerLane) {
  for (int64_t n : kLengths) {
    const std::vector<float> a = make_values(n, 41, -5, 5, true);
    const std::vector<float> b = make_values(n, 43, -5, 5, true);
    const std::vector<char> mask = make_bools(n, 47 + static_cast<unsigned>(n));
    std::vector<float> out(n);
    kernel().where(as_bools(mask), a.data(), b.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_TRUE(same_value(out[i], mask[i] ? a[i] : b[i])) << "n " << n << " i " << i;
    }
  }
}

TEST_P(KernelHeaderTest, LogicalMaskOps) {
  for (int op = kAnd; op <= kWhereMask; ++op) {
    for (int64_t n : kLengths) {
      const std::vector<char> a = make_bools(n, 53 + static_cast<unsigned>(n));
      const std::vector<char> b = make_bools(n, 59 + static_cast<unsigned>(n));
      std::vector<char> out(n + 1, 0x7F);
      kernel().logical(op, as_bools(a), as_bools(b), as_bools(out), n);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(out[i], logical_reference(op, a[i], b[i]) ? 1 : 0) << "op " << op << " i " << i;
      }
      EXPECT_EQ(out[n], 0x7F);
    }
  }
}

TEST_P(KernelHeaderTest, ReductionsOverArrays) {
  for (int64_t n : kLengths) {
    const std::vector<float> x = make_values(n, 61 + static_cast<unsigned>(n), -10, 10, false);
    double sum = 0, abs_sum = 0;
    for (float v : x) {
      sum += v;
      abs_sum += std::fabs(v);
    }
    // Vector summation reorders additions: allow n * eps * sum|x| on top of the tolerance.
    const double reorder = static_cast<double>(n) * 1.2e-7 * abs_sum;
    EXPECT_NEAR(kernel().reduce(kSum, x.data(), n), sum, 1e-5 + 1.3e-6 * std::fabs(sum) + reorder)
        << "n " << n;
    EXPECT_EQ(kernel().reduce(kMax, x.data(), n), *std::max_element(x.begin(), x.end()));
    EXPECT_EQ(kernel().reduce(kMin, x.data(), n), *std::min_element(x.begin(), x.end()));
  }
}

TEST_P(KernelHeaderTest, ReductionsPropagateNanAndInf) {
  for (int64_t n : kLengths) {
    for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
      std::vector<float> x = make_values(n, 67, -10, 10, false);
      x[pos] = kNaN;
      SCOPED_TRACE(::testing::Message() << "n " << n << " NaN at " << pos);
      EXPECT_TRUE(std::isnan(kernel().reduce(kMax, x.data(), n)));
      EXPECT_TRUE(std::isnan(kernel().reduce(kMin, x.data(), n)));
      EXPECT_TRUE(std::isnan(kernel().reduce(kSum, x.data(), n)));
      x[pos] = kInf;
      EXPECT_EQ(kernel().reduce(kMax, x.data(), n), kInf);
      EXPECT_EQ(kernel().reduce(kSum, x.data(), n), kInf);
      x[pos] = -kInf;
      EXPECT_EQ(kernel().reduce(kMin, x.data(), n), -kInf);
      EXPECT_EQ(kernel().reduce(kSum, x.data(), n), -kInf);
      if (n > 1) {
        x[(pos + 1) % n] = kInf;
        EXPECT_TRUE(std::isnan(kernel().reduce(kSum, x.data(), n)));  // inf + -inf
      }
    }
    std::vector<float> all_neg_inf(n, -kInf);
    EXPECT_EQ(kernel().reduce(kMax, all_neg_inf.data(), n), -kInf);
    EXPECT_EQ(kernel().reduce(kMin, all_neg_inf.data(), n), -kInf);
  }
}

TEST_P(KernelHeaderTest, LaneReductionsSeeEveryLane) {
  const int w = width();
  for (int lane = 0; lane < w; ++lane) {
    std::vector<float> x(w);
    for (int l = 0; l < w; ++l) x[l] = static_cast<float>(l + 1);
    x[lane] = 100.0f;
    EXPECT_EQ(kernel().reduce_one(kMax, x.data()), 100.0f) << lane;
    x[lane] = -100.0f;
    EXPECT_EQ(kernel().reduce_one(kMin, x.data()), -100.0f) << lane;
    x[lane] = kNaN;
    EXPECT_TRUE(std::isnan(kernel().reduce_one(kMax, x.data()))) << lane;
    EXPECT_TRUE(std::isnan(kernel().reduce_one(kMin, x.data()))) << lane;
    EXPECT_TRUE(std::isnan(kernel().reduce_one(kSum, x.data()))) << lane;
    x[lane] = 0.0f;
    EXPECT_EQ(kernel().reduce_one(kSum, x.data()), w * (w + 1) / 2.0f - (lane + 1)) << lane;
  }
}

TEST_P(KernelHeaderTest, GatherThroughFromLanes) {
  const std::vector<float> table = make_values(64, 71, -10, 10, false);
  std::mt19937 rng(73);
  for (int64_t n : kLengths) {
    GuardedBuffer guard(static_cast<size_t>(n) * sizeof(int64_t));
    int64_t* idx = guard.tail<int64_t>(static_cast<size_t>(n));  // reading idx[n] faults
    for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int64_t>(rng() % 64);
    std::vector<float> out(n);
    kernel().gather(table.data(), idx, out.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out[i], table[idx[i]]) << "n " << n << " i " << i;
  }
}

TEST_P(KernelHeaderTest, MaskFromLanes) {
  for (int64_t n : kLengths) {
    GuardedBuffer guard(static_cast<size_t>(n) * sizeof(float));
    float* x = guard.tail<float>(static_cast<size_t>(n));
    const std::vector<float> values = make_values(n, 79, -1, 1, true);
    std::copy(values.begin(), values.end(), x);
    std::vector<char> out(n);
    kernel().mask_from_lanes(x, as_bools(out), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out[i], x[i] > 0.0f ? 1 : 0) << i;
  }
}

TEST_P(KernelHeaderTest, CountedLoadsAndStoresStayInBounds) {
  const int w = width();
  GuardedBuffer src_guard(64 * sizeof(float)), dst_guard(64 * sizeof(float));
  for (int count = 0; count <= w; ++count) {
    SCOPED_TRACE(count);
    // Source and destination end right before an inaccessible page.
    float* src = src_guard.tail<float>(count);
    float* dst = dst_guard.tail<float>(count);
    for (int l = 0; l < count; ++l) {
      src[l] = static_cast<float>(l + 1);
      dst[l] = -1.0f;
    }
    kernel().copy_count(src, dst, count);
    for (int l = 0; l < count; ++l) EXPECT_EQ(dst[l], l + 1.0f);

    // Lanes >= count are untouched by the store and read as 0 by the load.
    std::vector<float> sentinel(w, 777.0f);
    kernel().copy_count(src, sentinel.data(), count);
    for (int l = 0; l < w; ++l) EXPECT_EQ(sentinel[l], l < count ? l + 1.0f : 777.0f);
    std::vector<float> full(w, 777.0f);
    kernel().load_count_full(src, full.data(), count);
    for (int l = 0; l < w; ++l) EXPECT_EQ(full[l], l < count ? l + 1.0f : 0.0f);
  }

  GuardedBuffer bsrc_guard(64), bdst_guard(64);
  for (int count = 0; count <= w; ++count) {
    SCOPED_TRACE(count);
    auto* src = bsrc_guard.tail<unsigned char>(count);
    auto* dst = bdst_guard.tail<unsigned char>(count);
    for (int l = 0; l < count; ++l) {
      src[l] = static_cast<unsigned char>(l % 3 == 0);
      dst[l] = 0x7F;
    }
    kernel().copy_bytes_count(reinterpret_cast<const bool*>(src), reinterpret_cast<bool*>(dst),
                              count);
    for (int l = 0; l < count; ++l) EXPECT_EQ(dst[l], src[l]);

    std::vector<unsigned char> sentinel(w, 0x7F);
    kernel().copy_bytes_count(reinterpret_cast<const bool*>(src),
                              reinterpret_cast<bool*>(sentinel.data()), count);
    for (int l = 0; l < w; ++l) EXPECT_EQ(sentinel[l], l < count ? src[l] : 0x7F);
    std::vector<unsigned char> full(w, 0x7F);
    kernel().load_bytes_count_full(reinterpret_cast<const bool*>(src),
                                   reinterpret_cast<bool*>(full.data()), count);
    for (int l = 0; l < w; ++l) EXPECT_EQ(full[l], l < count ? src[l] : 0);
  }
}

TEST_P(KernelHeaderTest, SetTakesFirstCountLanesFromB) {
  const int w = width();
  std::vector<float> a(w), b(w);
  for (int l = 0; l < w; ++l) {
    a[l] = static_cast<float>(l);
    b[l] = 100.0f + l;
  }
  for (int count = 0; count <= w + 1; ++count) {
    std::vector<float> out(w);
    kernel().set(a.data(), b.data(), out.data(), count);
    for (int l = 0; l < w; ++l) EXPECT_EQ(out[l], l < count ? b[l] : a[l]) << count;
  }
}

TEST_P(KernelHeaderTest, PythonIndexHelpers) {
  struct Case {
    int64_t a, b, div, mod;
  };
  const Case cases[] = {{7, 2, 3, 1},
                        {-7, 2, -4, 1},
                        {7, -2, -4, -1},
                        {-7, -2, 3, -1},
                        {0, 5, 0, 0},
                        {-1, 5, -1, 4},
                        {6, 3, 2, 0},
                        {-6, 3, -2, 0},
                        {5, 7, 0, 5},
                        {-5, 7, -1, 2},
                        {1000000007, 10, 100000000, 7}};
  for (const Case& c : cases) {
    int64_t out[2];
    kernel().index(c.a, c.b, out);
    EXPECT_EQ(out[0], c.div) << c.a << " // " << c.b;
    EXPECT_EQ(out[1], c.mod) << c.a << " % " << c.b;
  }
}

uint16_t float_bits_high(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}

TEST_P(KernelHeaderTest, HalfAndBFloat16Conversions) {
  struct Case {
    float value;
    uint16_t half, bf16;
  };
  const Case cases[] = {
      {1.0f, 0x3C00, 0x3F80},           {-2.0f, 0xC000, 0xC000},
      {0.0f, 0x0000, 0x0000},           {-0.0f, 0x8000, 0x8000},
      {65504.0f, 0x7BFF, 0x4780},       {65520.0f, 0x7C00, 0x4780},
      {65519.0f, 0x7BFF, 0x4780},       {kInf, 0x7C00, 0x7F80},
      {-kInf, 0xFC00, 0xFF80},          {0.1f, 0x2E66, 0x3DCD},
      {1.0f / 3, 0x3555, 0x3EAB},       {6.103515625e-05f, 0x0400, 0x3880},
      {5.9604645e-08f, 0x0001, 0x3380}, {2.9802322e-08f, 0x0000, 0x3300},
      {3e-8f, 0x0001, 0x3301},
  };
  const int64_t n = static_cast<int64_t>(std::size(cases));
  std::vector<float> in(n), half_back(n), bf16_back(n);
  std::vector<uint16_t> half_bits(n), bf16_bits(n);
  for (int64_t i = 0; i < n; ++i) in[i] = cases[i].value;
  kernel().half(in.data(), half_bits.data(), half_back.data(), bf16_bits.data(), bf16_back.data(),
                n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(half_bits[i], cases[i].half) << cases[i].value;
    EXPECT_EQ(bf16_bits[i], cases[i].bf16) << cases[i].value;
  }
  // NaN stays NaN (quiet) in both formats.
  float nan_in = kNaN, nan_half = 0, nan_bf16 = 0;
  uint16_t hb = 0, bb = 0;
  kernel().half(&nan_in, &hb, &nan_half, &bb, &nan_bf16, 1);
  EXPECT_TRUE(std::isnan(nan_half));
  EXPECT_TRUE(std::isnan(nan_bf16));

  // Every 16-bit pattern: bits -> float -> bits round-trips (NaNs excepted).
  const int64_t all_n = 65536;
  std::vector<uint16_t> all(all_n);
  for (int64_t i = 0; i < all_n; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> from_half(all_n), from_bf16(all_n), back(all_n);
  kernel().half_from_bits(all.data(), from_half.data(), all_n);
  kernel().bf16_from_bits(all.data(), from_bf16.data(), all_n);
  std::vector<uint16_t> half_again(all_n), bf16_again(all_n), ignored_bits(all_n);
  kernel().half(from_half.data(), half_again.data(), back.data(), ignored_bits.data(), back.data(),
                all_n);
  kernel().half(from_bf16.data(), ignored_bits.data(), back.data(), bf16_again.data(), back.data(),
                all_n);
  for (int64_t i = 0; i < all_n; ++i) {
    if (std::isnan(from_half[i])) {
      EXPECT_EQ(i & 0x7C00, 0x7C00);
    } else {
      EXPECT_EQ(half_again[i], all[i]) << std::hex << i;
    }
    if (std::isnan(from_bf16[i])) {
      EXPECT_EQ(i & 0x7F80, 0x7F80);
    } else {
      EXPECT_EQ(bf16_again[i], all[i]) << std::hex << i;
      EXPECT_EQ(float_bits_high(from_bf16[i]), all[i]);
    }
  }

  // Random float bit patterns against independent references: the compiler's _Float16
  // conversions (IEEE round to nearest even) and a double-precision bf16 rounding.
  std::mt19937 rng(83);
  const int64_t m = 100000;
  std::vector<float> values(m), hb_back(m), bb_back(m);
  std::vector<uint16_t> hbits(m), bbits(m);
  for (int64_t i = 0; i < m; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 2 == 0) u = (u & 0x8FFFFFFFu) | 0x30000000u;  // bias towards the half range
    std::memcpy(&values[i], &u, 4);
  }
  kernel().half(values.data(), hbits.data(), hb_back.data(), bbits.data(), bb_back.data(), m);
  for (int64_t i = 0; i < m; ++i) {
    const float f = values[i];
    if (std::isnan(f)) continue;
#if defined(__FLT16_MAX__)
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t want_half;
    std::memcpy(&want_half, &h, 2);
    EXPECT_EQ(hbits[i], want_half) << f;
    EXPECT_EQ(hb_back[i], static_cast<float>(h)) << f;
#endif
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t lo_bits = u & 0xFFFF0000u;
    float lo_f;
    std::memcpy(&lo_f, &lo_bits, 4);
    const double lo = lo_f;
    // Next bf16 away from zero; the carry out of the largest finite value gives 2^128.
    const uint32_t hi_bits = lo_bits + 0x10000u;
    float hi_f;
    std::memcpy(&hi_f, &hi_bits, 4);
    const double hi = std::isinf(hi_f) ? std::copysign(std::ldexp(1.0, 128), hi_f) : hi_f;
    const double d_lo = std::fabs(static_cast<double>(f) - lo);
    const double d_hi = std::fabs(hi - static_cast<double>(f));
    const bool round_up = d_hi < d_lo || (d_hi == d_lo && (lo_bits >> 16) % 2 == 1);
    const uint16_t want_bf16 = static_cast<uint16_t>((lo_bits >> 16) + (round_up ? 1 : 0));
    EXPECT_EQ(bbits[i], want_bf16) << f;
  }
}

TEST_P(KernelHeaderTest, AbiHelpers) {
  char buffer[64];
  kernel().error(buffer, sizeof buffer, 7);
  EXPECT_STREQ(buffer, "bad value 7 in kernel");
  kernel().error(buffer, 5, 7);
  EXPECT_STREQ(buffer, "bad ");
  buffer[0] = 'x';
  kernel().error(buffer, 0, 7);
  EXPECT_EQ(buffer[0], 'x');
  kernel().error(nullptr, 10, 7);

  for (int64_t bytes : {0, 1, 63, 64, 65, 1000, 1 << 20}) EXPECT_EQ(kernel().alloc(bytes), 1);
  // A large freed block is kept for the next request of its (rounded) size, so a program's
  // next call finds its intermediates' pages mapped (stax_kernel_scratch.h); another size
  // gets other memory.
  EXPECT_EQ(kernel().scratch_reuse(1 << 20, 1 << 20), 1);
  EXPECT_EQ(kernel().scratch_reuse((1 << 20) + 1, (1 << 20) + 63), 1);
  EXPECT_EQ(kernel().scratch_reuse(1 << 20, 1 << 21), 0);

  const int64_t data[] = {42, 1, 2, 3, 4, 5};
  const int64_t sizes[] = {2, 3};
  const int64_t strides[] = {3, 1};
  const StaxTensorArg arg{data, 2, sizes, strides};
  int64_t out[4];
  kernel().tensor_arg(&arg, out);
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 3);
  EXPECT_EQ(out[2], 3);
  EXPECT_EQ(out[3], 42);
}

std::string level_test_name(const ::testing::TestParamInfo<SimdLevel>& info) {
  return std::string(simd_level_name(info.param));
}

// Only the levels this CPU can execute run here; Avx512HeaderCompiles below checks that the
// AVX-512 code compiles on CPUs without it.
std::vector<SimdLevel> runnable_levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    if (cpu_supports(level)) levels.push_back(level);
  }
  return levels;
}

INSTANTIATE_TEST_SUITE_P(Levels, KernelHeaderTest, ::testing::ValuesIn(runnable_levels()),
                         level_test_name);

// The AVX-512 code path must at least compile wherever the compiler accepts the flags,
// even when this CPU cannot run it.
TEST(KernelHeader, Avx512HeaderCompiles) {
  JitOptions options = options_for(SimdLevel::Avx512);
  // The supported compilers (GCC, Clang) accept the AVX-512 flags on any x86-64 host.
  ASSERT_NO_THROW(
      compile_and_load("extern \"C\" int stax_probe_avx512() { return 1; }\n", options));
  if (cpu_supports(SimdLevel::Avx512)) {
    EXPECT_EQ(kernel_for(SimdLevel::Avx512).width(), 16);
    return;
  }
  // Compile (and load: no AVX-512 instruction runs at load time) without executing.
  const JitResult result = compile_and_load(kernel_source(), options);
  EXPECT_TRUE(std::filesystem::exists(result.library_path));
  EXPECT_TRUE(result.library->has_symbol("stax_test_unary"));
}

// With GCC, the first kernel including stax_kernel.h leaves a precompiled header behind.
TEST(KernelHeader, PrecompiledHeaderIsBuiltForGcc) {
  const std::vector<std::string> compiler = resolve_compiler(JitOptions{});
  std::vector<std::string> argv = compiler;
  argv.push_back("--version");
  const ProcessResult version = run_process(argv);
  const bool gcc = version.output.find("Free Software Foundation") != std::string::npos &&
                   version.output.find("clang") == std::string::npos;
  testing::TempDir dir;
  JitOptions options = options_for(SimdLevel::Scalar);
  options.cache_dir = dir.path();
  const JitResult result = compile_and_load(
      "#include \"stax_kernel.h\"\nSTAX_KERNEL_EXPORT float stax_pch_probe(float x) {\n"
      "  return stax::exp_f(x);\n}\n",
      options);
  EXPECT_EQ(result.library->function<float (*)(float)>("stax_pch_probe")(0.0f), 1.0f);
  bool found = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().filename().string().rfind("pch-", 0) == 0 &&
        std::filesystem::exists(entry.path() / "stax_kernel.h.gch")) {
      found = true;
    }
  }
  // Only GCC gets a precompiled header; other compilers compile the header each time.
  EXPECT_EQ(found, gcc);
}

}  // namespace
}  // namespace stax::runtime
