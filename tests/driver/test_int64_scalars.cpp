// int64 scalars are exact end to end (issue 13, point 2): a program whose scalars are the int64
// extremes (+-2^53 +- 1, INT64_MIN, INT64_MAX) and large ints wrapped into int8/uint8 is run by
// the eager interpreter and compiled at every SIMD level the CPU runs, and every output is
// compared bit for bit with a reference computed here in C++ integer arithmetic (wrapping
// like PyTorch's kernels; the expected values were checked against torch 2.13.0). A scalar
// rounded through double anywhere (text format, lowering, kernel IR, printed C++, eager)
// makes the results differ: 2^53 + 1 becomes 2^53 and INT64_MAX becomes 2^63.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "eager/interpreter.h"
#include "ir/text_format.h"

namespace stax {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kP53 = int64_t{1} << 53;

// Wrapping int64 arithmetic, as PyTorch's integer kernels behave.
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
// Python's floor division and remainder (no overflow for the divisors used here).
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t py_mod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// 37 elements: a vector tail at every SIMD width.
std::vector<int64_t> x_values() {
  const std::vector<int64_t> base = {0,         1,    -1,   7,        kP53,     kP53 + 1,
                                     -kP53 - 1, kMax, kMin, kMax - 1, kMin + 1, 12345};
  std::vector<int64_t> v;
  for (int i = 0; i < 37; ++i) v.push_back(wrap_add(base[i % base.size()], i / 12));
  return v;
}

Tensor tensor_of(DType dtype, const std::vector<int64_t>& values) {
  Tensor t = Tensor::empty(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) {
    char* p = static_cast<char*>(t.data()) + i * dtype_size(dtype);
    switch (dtype) {
      case DType::Int64:
        std::memcpy(p, &values[i], 8);
        break;
      case DType::Int8:
      case DType::UInt8:
      case DType::Bool: {
        const uint8_t b = dtype == DType::Bool ? (values[i] != 0) : static_cast<uint8_t>(values[i]);
        std::memcpy(p, &b, 1);
        break;
      }
      default:
        ADD_FAILURE() << "tensor_of: unsupported dtype";
    }
  }
  return t;
}

int64_t element(const Tensor& t, int64_t i) {
  const char* p =
      static_cast<const char*>(t.data()) + i * static_cast<int64_t>(dtype_size(t.dtype()));
  switch (t.dtype()) {
    case DType::Int64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::Int8:
      return static_cast<int8_t>(*p);
    case DType::UInt8:
      return static_cast<uint8_t>(*p);
    case DType::Bool:
      return *p != 0 ? 1 : 0;
    default:
      return 0;
  }
}

struct Case {
  std::string name;
  DType dtype;
  std::function<int64_t(int64_t i)> expected;  // element i
  int64_t size = 37;
};

TEST(Int64ScalarsTest, ExtremesAreExactInEagerAndCompiledAtEverySimdLevel) {
  const std::vector<int64_t> x = x_values();
  std::vector<int64_t> m(37), a(37), u(37);
  for (int i = 0; i < 37; ++i) {
    m[i] = i % 3 == 0;
    a[i] = static_cast<int8_t>(x[i]);
    u[i] = static_cast<uint8_t>(x[i]);
  }
  const std::string text =
      "def f(x: i64[37], m: bool[37], a: i8[37], u: u8[37]):\n"
      "  add_p53 = add(x, 9007199254740993)\n"
      "  sub_max = sub(x, 9223372036854775807)\n"
      "  mul_p53 = mul(x, 9007199254740993)\n"
      "  alpha_max = add(x, x, alpha=9223372036854775807)\n"
      "  and_max = bitwise_and(x, 9223372036854775807)\n"
      "  or_min = bitwise_or(x, -9223372036854775808)\n"
      "  xor_p53 = bitwise_xor(x, -9007199254740993)\n"
      "  eq_p53 = eq(x, 9007199254740993)\n"
      "  lt_p53 = lt(x, -9007199254740992)\n"
      "  ge_max = ge(x, 9223372036854775807)\n"
      "  full_max = full_like(x, 9223372036854775807)\n"
      "  full_min = full_like(x, -9223372036854775808)\n"
      "  where_max = where(m, x, 9223372036854775806)\n"
      "  clamp_p53 = clamp(x, min=9007199254740993)\n"
      "  clamp_min = clamp(x, max=-9223372036854775807)\n"
      "  rem_max = remainder(x, 9223372036854775807)\n"
      "  div_min = floor_divide(x, -9223372036854775808)\n"
      "  div_p53 = floor_divide(x, 9007199254740993)\n"
      "  top = arange(9223372036854775770, 9223372036854775807)\n"
      "  bottom = arange(-9223372036854775808, -9223372036854775771)\n"
      "  a_300 = add(a, 300)\n"
      "  a_max = add(a, 9223372036854775807)\n"
      "  a_eq = eq(a, 257)\n"
      "  u_big = add(u, 1099511627781)\n"
      "  u_lt = lt(u, 256)\n"
      "  u_fill = full_like(u, -1)\n"
      "  return add_p53, sub_max, mul_p53, alpha_max, and_max, or_min, xor_p53, eq_p53, "
      "lt_p53, ge_max, full_max, full_min, where_max, clamp_p53, clamp_min, rem_max, div_min, "
      "div_p53, top, bottom, a_300, a_max, a_eq, u_big, u_lt, u_fill\n";
  const std::vector<Case> cases = {
      {"add_p53", DType::Int64, [&](int64_t i) { return wrap_add(x[i], kP53 + 1); }},
      {"sub_max", DType::Int64, [&](int64_t i) { return wrap_sub(x[i], kMax); }},
      {"mul_p53", DType::Int64, [&](int64_t i) { return wrap_mul(x[i], kP53 + 1); }},
      {"alpha_max", DType::Int64, [&](int64_t i) { return wrap_add(x[i], wrap_mul(x[i], kMax)); }},
      {"and_max", DType::Int64, [&](int64_t i) { return x[i] & kMax; }},
      {"or_min", DType::Int64, [&](int64_t i) { return x[i] | kMin; }},
      {"xor_p53", DType::Int64, [&](int64_t i) { return x[i] ^ (-kP53 - 1); }},
      {"eq_p53", DType::Bool, [&](int64_t i) { return int64_t{x[i] == kP53 + 1}; }},
      {"lt_p53", DType::Bool, [&](int64_t i) { return int64_t{x[i] < -kP53}; }},
      {"ge_max", DType::Bool, [&](int64_t i) { return int64_t{x[i] >= kMax}; }},
      {"full_max", DType::Int64, [&](int64_t) { return kMax; }},
      {"full_min", DType::Int64, [&](int64_t) { return kMin; }},
      {"where_max", DType::Int64, [&](int64_t i) { return m[i] ? x[i] : kMax - 1; }},
      {"clamp_p53", DType::Int64, [&](int64_t i) { return std::max(x[i], kP53 + 1); }},
      {"clamp_min", DType::Int64, [&](int64_t i) { return std::min(x[i], kMin + 1); }},
      {"rem_max", DType::Int64, [&](int64_t i) { return py_mod(x[i], kMax); }},
      {"div_min", DType::Int64,
       [&](int64_t i) {
         // floor(x / -2^63): 1 for INT64_MIN, 0 for x <= 0 otherwise, -1 for x > 0.
         return x[i] == kMin ? int64_t{1} : x[i] > 0 ? int64_t{-1} : int64_t{0};
       }},
      {"div_p53", DType::Int64, [&](int64_t i) { return floor_div(x[i], kP53 + 1); }},
      {"top", DType::Int64, [&](int64_t i) { return kMax - 37 + i; }},
      {"bottom", DType::Int64, [&](int64_t i) { return kMin + i; }},
      {"a_300", DType::Int8, [&](int64_t i) { return int64_t{static_cast<int8_t>(a[i] + 44)}; }},
      {"a_max", DType::Int8, [&](int64_t i) { return int64_t{static_cast<int8_t>(a[i] - 1)}; }},
      {"a_eq", DType::Bool, [&](int64_t i) { return int64_t{a[i] == 1}; }},
      {"u_big", DType::UInt8, [&](int64_t i) { return int64_t{static_cast<uint8_t>(u[i] + 5)}; }},
      {"u_lt", DType::Bool, [&](int64_t i) { return int64_t{u[i] < 0}; }},
      {"u_fill", DType::UInt8, [&](int64_t) { return int64_t{255}; }},
  };
  const ir::Graph g = ir::parse_graph(text, "int64_scalars.stax");
  const std::vector<Tensor> inputs = {tensor_of(DType::Int64, x), tensor_of(DType::Bool, m),
                                      tensor_of(DType::Int8, a), tensor_of(DType::UInt8, u)};
  auto check = [&](const std::vector<Tensor>& outputs, const std::string& who) {
    ASSERT_EQ(outputs.size(), cases.size()) << who;
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[k];
      ASSERT_EQ(outputs[k].dtype(), c.dtype) << who << " " << c.name;
      ASSERT_EQ(outputs[k].numel(), c.size) << who << " " << c.name;
      for (int64_t i = 0; i < c.size; ++i) {
        EXPECT_EQ(element(outputs[k], i), c.expected(i))
            << who << " " << c.name << "[" << i << "] (x = " << x[i] << ")";
      }
    }
  };
  check(eager::run(g, inputs), "eager");
  for (auto simd :
       {runtime::SimdLevel::Scalar, runtime::SimdLevel::Avx2, runtime::SimdLevel::Avx512}) {
    if (!runtime::cpu_supports(simd)) continue;
    CompileOptions options;
    options.simd = simd;
    const CompiledGraph compiled = compile(g, options);
    check(compiled.run(inputs), "compiled at " + std::string(runtime::simd_level_name(simd)));
  }
}

}  // namespace
}  // namespace stax
