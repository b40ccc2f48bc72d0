// The eager interpreter on the contractions (issue 14, point 3): mm, bmm, addmm, baddbmm.
// Expected values are computed by hand and agree with torch 2.13.0 on CPU (the Python
// expression is in a comment where the case is one of PyTorch's rules), compared exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "eager_test_util.h"

namespace stax::eager {
namespace {

using testing::int64_values;
using testing::make;
using testing::run1;
using testing::values;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor eval(const std::string& inputs, const std::string& expr, const std::vector<Tensor>& args) {
  return run1("def f(" + inputs + "):\n    r = " + expr + "\n    return r\n", args);
}

void expect_values(const Tensor& t, DType dtype, const std::vector<int64_t>& sizes,
                   const std::vector<double>& expected, const std::string& what) {
  EXPECT_EQ(t.dtype(), dtype) << what;
  EXPECT_EQ(t.sizes(), sizes) << what;
  const std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_TRUE(got[k] == expected[k] || (std::isnan(got[k]) && std::isnan(expected[k])))
        << what << " [" << k << "]: " << got[k] << " vs " << expected[k];
  }
}

TEST(EagerContraction, MatrixProducts) {
  const Tensor a = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = make(DType::Float32, {3, 2}, {1, 0, 0, 1, 1, 1});
  expect_values(eval("a: f32[2, 3], b: f32[3, 2]", "mm(a, b)", {a, b}), DType::Float32, {2, 2},
                {4, 5, 10, 11}, "mm");
  // addmm: 2 * a @ b + 0.5 * [10, 20] (a row bias expanded over the rows).
  const Tensor c = make(DType::Float32, {2}, {10, 20});
  expect_values(
      eval("c: f32[2], a: f32[2, 3], b: f32[3, 2]", "addmm(c, a, b, beta=0.5, alpha=2)", {c, a, b}),
      DType::Float32, {2, 2}, {13, 20, 25, 32}, "addmm");
  // A column bias [2, 1] and a 0-dim bias.
  const Tensor col = make(DType::Float32, {2, 1}, {100, 200});
  expect_values(eval("c: f32[2, 1], a: f32[2, 3], b: f32[3, 2]", "addmm(c, a, b)", {col, a, b}),
                DType::Float32, {2, 2}, {104, 105, 210, 211}, "addmm column bias");
  // bmm of two batches: the second batch is the first times -1 on the left.
  const Tensor x = make(DType::Float64, {2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  const Tensor y = make(DType::Float64, {2, 3, 2}, {1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1});
  expect_values(eval("x: f64[2, 2, 3], y: f64[2, 3, 2]", "bmm(x, y)", {x, y}), DType::Float64,
                {2, 2, 2}, {4, 5, 10, 11, -4, -5, -10, -11}, "bmm");
  const Tensor s = make(DType::Float64, {}, {1});
  expect_values(eval("s: f64[], x: f64[2, 2, 3], y: f64[2, 3, 2]",
                     "baddbmm(s, x, y, beta=-3, alpha=0.5)", {s, x, y}),
                DType::Float64, {2, 2, 2}, {-1, -0.5, 2, 2.5, -5, -5.5, -8, -8.5}, "baddbmm");
}

TEST(EagerContraction, StridedOperands) {
  // a given transposed (strides [1, 2]) and b read through transpose and slice views: the
  // same products as the contiguous case.
  const Tensor a_t = make(DType::Float32, {3, 2}, {1, 4, 2, 5, 3, 6});
  const Tensor a = a_t.as_strided({2, 3}, {1, 2}, 0);
  const Tensor wide = make(DType::Float32, {2, 4}, {1, 0, 1, 9, 0, 1, 1, 9});
  const Tensor r = run1(R"(def f(a: f32[2, 3] strides=[1, 2], w: f32[2, 4]):
    s = slice(w, 1, 0, 3)
    t = transpose(s, 0, 1)
    r = mm(a, t)
    return r
)",
                        {a, wide});
  expect_values(r, DType::Float32, {2, 2}, {4, 5, 10, 11}, "mm of strided views");
  // A batch read with a zero stride (expand): every batch uses the same matrix.
  const Tensor m = make(DType::Int32, {1, 2, 2}, {1, 2, 3, 4});
  const Tensor e = run1(R"(def f(m: i32[1, 2, 2]):
    x = expand(m, [3, 2, 2])
    r = bmm(x, x)
    return r
)",
                        {m});
  expect_values(e, DType::Int32, {3, 2, 2}, {7, 10, 15, 22, 7, 10, 15, 22, 7, 10, 15, 22},
                "bmm of expanded batches");
}

TEST(EagerContraction, SixteenBitFloatsAccumulateAndRoundOnce) {
  const double e8 = std::ldexp(1.0, -8), e11 = std::ldexp(1.0, -11);
  // torch.mm(tensor([[1] + [2**-11] * 4], f16), ones(5, 1, f16)) is 1 + 2^-9: the sum is not
  // rounded to float16 after each addition (that would stay 1).
  const Tensor h = make(DType::Float16, {1, 5}, {1, e11, e11, e11, e11});
  const Tensor ones_h = make(DType::Float16, {5, 1}, {1, 1, 1, 1, 1});
  expect_values(eval("a: f16[1, 5], b: f16[5, 1]", "mm(a, b)", {h, ones_h}), DType::Float16, {1, 1},
                {1 + 4 * e11}, "f16 mm");
  // torch.addmm(tensor([[2**-8]], bf16), tensor([[1, 2**-8]], bf16), ones(2, 1, bf16)) is
  // 1 + 2^-7: the product and the bias are added before the one rounding (rounding the
  // product first gives 1, then 1 + 2^-8 ties to 1).
  const Tensor c = make(DType::BFloat16, {1, 1}, {e8});
  const Tensor a = make(DType::BFloat16, {1, 2}, {1, e8});
  const Tensor ones = make(DType::BFloat16, {2, 1}, {1, 1});
  expect_values(eval("c: bf16[1, 1], a: bf16[1, 2], b: bf16[2, 1]", "addmm(c, a, b)", {c, a, ones}),
                DType::BFloat16, {1, 1}, {1 + 2 * e8}, "bf16 addmm");
  expect_values(eval("c: bf16[1, 1, 1], a: bf16[1, 1, 2], b: bf16[1, 2, 1]", "baddbmm(c, a, b)",
                     {c.as_strided({1, 1, 1}, {1, 1, 1}, 0), a.as_strided({1, 1, 2}, {2, 2, 1}, 0),
                      ones.as_strided({1, 2, 1}, {2, 1, 1}, 0)}),
                DType::BFloat16, {1, 1, 1}, {1 + 2 * e8}, "bf16 baddbmm");
  // alpha is a float32 value, not rounded to bfloat16: torch.addmm(zeros(1, 1, bf16),
  // tensor([[3.]], bf16), ones(1, 1, bf16), alpha=1 + 2**-8) is 3.015625 (3 if alpha were 1).
  const Tensor zero = make(DType::BFloat16, {1, 1}, {0});
  const Tensor three = make(DType::BFloat16, {1, 1}, {3});
  const Tensor one = make(DType::BFloat16, {1, 1}, {1});
  expect_values(eval("c: bf16[1, 1], a: bf16[1, 1], b: bf16[1, 1]",
                     "addmm(c, a, b, alpha=1.00390625)", {zero, three, one}),
                DType::BFloat16, {1, 1}, {3.015625}, "bf16 alpha in float32");
  // An alpha beyond float16's range is a float32 value: the result overflows to inf
  // (torch.addmm(..., alpha=1e6) on float16 ones gives inf).
  const Tensor one_h = make(DType::Float16, {1, 1}, {1});
  expect_values(eval("c: f16[1, 1], a: f16[1, 1], b: f16[1, 1]", "addmm(c, a, b, alpha=1e6)",
                     {one_h, one_h, one_h}),
                DType::Float16, {1, 1}, {kInf}, "f16 alpha 1e6");
}

TEST(EagerContraction, BetaZeroIgnoresTheBias) {
  const Tensor nan_bias = make(DType::Float32, {2, 2}, {kNaN, kInf, -kInf, kNaN});
  const Tensor a = make(DType::Float32, {2, 1}, {1, 2});
  const Tensor b = make(DType::Float32, {1, 2}, {3, 4});
  const std::string in = "c: f32[2, 2], a: f32[2, 1], b: f32[1, 2]";
  for (const char* beta : {"0", "0.0", "-0.0", "False", "1e-50"}) {
    // 1e-50 is 0 as a float32 (the type beta is converted to): torch ignores the bias too.
    expect_values(eval(in, std::string("addmm(c, a, b, beta=") + beta + ")", {nan_bias, a, b}),
                  DType::Float32, {2, 2}, {3, 4, 6, 8}, std::string("beta=") + beta);
  }
  // float64 keeps 1e-50: NaN * 1e-50 is NaN, inf * 1e-50 is inf.
  const Tensor nan64 = make(DType::Float64, {1, 1}, {kNaN});
  const Tensor one64 = make(DType::Float64, {1, 1}, {1});
  expect_values(eval("c: f64[1, 1], a: f64[1, 1], b: f64[1, 1]", "addmm(c, a, b, beta=1e-50)",
                     {nan64, one64, one64}),
                DType::Float64, {1, 1}, {kNaN}, "f64 beta=1e-50");
  // A nonzero beta propagates the bias's NaN.
  expect_values(eval(in, "addmm(c, a, b, beta=2)", {nan_bias, a, b}), DType::Float32, {2, 2},
                {kNaN, kInf, -kInf, kNaN}, "beta=2");
  const std::string bin = "c: f32[1, 2, 2], a: f32[1, 2, 1], b: f32[1, 1, 2]";
  expect_values(
      eval(bin, "baddbmm(c, a, b, beta=0)",
           {nan_bias.as_strided({1, 2, 2}, {4, 2, 1}, 0), a.as_strided({1, 2, 1}, {2, 1, 1}, 0),
            b.as_strided({1, 1, 2}, {2, 2, 1}, 0)}),
      DType::Float32, {1, 2, 2}, {3, 4, 6, 8}, "baddbmm beta=0");
}

TEST(EagerContraction, AlphaZeroStillMultiplies) {
  // alpha = 0 scales the product, so an inf factor gives NaN (0 * inf), as torch's
  // decompositions of addmm compute it (eager itself differs between its paths).
  const Tensor c = make(DType::Float32, {1, 2}, {5, 6});
  const Tensor a = make(DType::Float32, {1, 1}, {kInf});
  const Tensor b = make(DType::Float32, {1, 2}, {1, 2});
  expect_values(
      eval("c: f32[1, 2], a: f32[1, 1], b: f32[1, 2]", "addmm(c, a, b, alpha=0)", {c, a, b}),
      DType::Float32, {1, 2}, {kNaN, kNaN}, "alpha=0");
  const Tensor finite = make(DType::Float32, {1, 1}, {7});
  expect_values(
      eval("c: f32[1, 2], a: f32[1, 1], b: f32[1, 2]", "addmm(c, a, b, alpha=0)", {c, finite, b}),
      DType::Float32, {1, 2}, {5, 6}, "alpha=0, finite factors");
}

TEST(EagerContraction, EmptyDims) {
  // k = 0: the product is exactly 0 and alpha is not applied (torch.addmm(full((2, 3), 2.),
  // ones(2, 0), ones(0, 3), beta=3, alpha=nan) is 6 everywhere).
  const Tensor k0a = Tensor::empty(DType::Float32, {2, 0});
  const Tensor k0b = Tensor::empty(DType::Float32, {0, 3});
  expect_values(eval("a: f32[2, 0], b: f32[0, 3]", "mm(a, b)", {k0a, k0b}), DType::Float32, {2, 3},
                {0, 0, 0, 0, 0, 0}, "mm k=0");
  const Tensor two = make(DType::Float32, {2, 3}, {2, 2, 2, 2, 2, 2});
  for (const char* alpha : {"5", "nan", "inf"}) {
    expect_values(eval("c: f32[2, 3], a: f32[2, 0], b: f32[0, 3]",
                       std::string("addmm(c, a, b, beta=3, alpha=") + alpha + ")", {two, k0a, k0b}),
                  DType::Float32, {2, 3}, {6, 6, 6, 6, 6, 6}, std::string("k=0 alpha=") + alpha);
  }
  const Tensor k0i = Tensor::empty(DType::Int64, {2, 2, 0});
  const Tensor k0j = Tensor::empty(DType::Int64, {2, 0, 1});
  const Tensor bias = make(DType::Int64, {1}, {7});
  expect_values(eval("c: i64[1], a: i64[2, 2, 0], b: i64[2, 0, 1]", "baddbmm(c, a, b, beta=-2)",
                     {bias, k0i, k0j}),
                DType::Int64, {2, 2, 1}, {-14, -14, -14, -14}, "baddbmm k=0");
  // m = 0, n = 0 and batch = 0: empty results.
  expect_values(
      eval("a: f32[0, 2], b: f32[2, 3]", "mm(a, b)",
           {Tensor::empty(DType::Float32, {0, 2}), Tensor::empty(DType::Float32, {2, 3})}),
      DType::Float32, {0, 3}, {}, "mm m=0");
  expect_values(
      eval("a: f32[2, 2], b: f32[2, 0]", "mm(a, b)",
           {Tensor::empty(DType::Float32, {2, 2}), Tensor::empty(DType::Float32, {2, 0})}),
      DType::Float32, {2, 0}, {}, "mm n=0");
  expect_values(
      eval("a: i8[0, 2, 2], b: i8[0, 2, 3]", "bmm(a, b)",
           {Tensor::empty(DType::Int8, {0, 2, 2}), Tensor::empty(DType::Int8, {0, 2, 3})}),
      DType::Int8, {0, 2, 3}, {}, "bmm batch=0");
}

TEST(EagerContraction, IntegersWrapAsTorchDoes) {
  // int8: 5 * (100 * -100) = -50000, which wraps to -80 (torch.mm of int8 fulls gives -80).
  const Tensor a8 = make(DType::Int8, {2, 5}, std::vector<double>(10, 100));
  const Tensor b8 = make(DType::Int8, {5, 2}, std::vector<double>(10, -100));
  expect_values(eval("a: i8[2, 5], b: i8[5, 2]", "mm(a, b)", {a8, b8}), DType::Int8, {2, 2},
                {-80, -80, -80, -80}, "i8 mm");
  // -7 * -50000 + 3 * -128 = 349616, -80 modulo 256.
  const Tensor c8 = make(DType::Int8, {2, 2}, {-128, -128, -128, -128});
  expect_values(eval("c: i8[2, 2], a: i8[2, 5], b: i8[5, 2]", "addmm(c, a, b, alpha=-7, beta=3)",
                     {c8, a8, b8}),
                DType::Int8, {2, 2}, {-80, -80, -80, -80}, "i8 addmm");
  // uint8: 5 * 200 * 250 = 250000 = 144 modulo 256.
  const Tensor au = make(DType::UInt8, {1, 5}, std::vector<double>(5, 200));
  const Tensor bu = make(DType::UInt8, {5, 1}, std::vector<double>(5, 250));
  expect_values(eval("a: u8[1, 5], b: u8[5, 1]", "mm(a, b)", {au, bu}), DType::UInt8, {1, 1}, {144},
                "u8 mm");
  // int16: 7 * 300 * -301 = -632100, 23260 modulo 2^16.
  const Tensor a16 = make(DType::Int16, {1, 7}, std::vector<double>(7, 300));
  const Tensor b16 = make(DType::Int16, {1, 7, 1}, std::vector<double>(7, -301));
  expect_values(eval("a: i16[1, 1, 7], b: i16[1, 7, 1]", "bmm(a, b)",
                     {a16.as_strided({1, 1, 7}, {7, 7, 1}, 0), b16}),
                DType::Int16, {1, 1, 1}, {23260}, "i16 bmm");
  // int32: 3 * 2^20 * 2^20 * 3 + 5 * 2^30 wraps to 2^30.
  const Tensor a32 = make(DType::Int32, {1, 3}, std::vector<double>(3, 1 << 20));
  const Tensor b32 = make(DType::Int32, {3, 1}, std::vector<double>(3, 1 << 20));
  const Tensor c32 = make(DType::Int32, {1, 1}, {1 << 30});
  expect_values(eval("c: i32[1, 1], a: i32[1, 3], b: i32[3, 1]", "addmm(c, a, b, alpha=3, beta=5)",
                     {c32, a32, b32}),
                DType::Int32, {1, 1}, {1 << 30}, "i32 addmm");
}

TEST(EagerContraction, Int64ExtremesWrapExactly) {
  constexpr int64_t mx = std::numeric_limits<int64_t>::max();
  constexpr int64_t mn = std::numeric_limits<int64_t>::min();
  Tensor a = Tensor::empty(DType::Int64, {1, 3});
  Tensor b = Tensor::empty(DType::Int64, {3, 1});
  Tensor c = Tensor::empty(DType::Int64, {1, 1});
  const int64_t av[] = {mx, mn, 3}, bv[] = {mx, mx, mn}, cv[] = {mn};
  std::memcpy(a.data(), av, sizeof av);
  std::memcpy(b.data(), bv, sizeof bv);
  std::memcpy(c.data(), cv, sizeof cv);
  // mx * mx + mn * mx + 3 * mn = 1 modulo 2^64 (torch.mm gives 1).
  EXPECT_EQ(int64_values(eval("a: i64[1, 3], b: i64[3, 1]", "mm(a, b)", {a, b})),
            std::vector<int64_t>{1});
  // mn * 1 - mn = 0 (torch.addmm(tensor([[mn]]), a, b, alpha=mn, beta=-1) gives 0).
  EXPECT_EQ(int64_values(eval("c: i64[1, 1], a: i64[1, 3], b: i64[3, 1]",
                              "addmm(c, a, b, alpha=-9223372036854775808, beta=-1)", {c, a, b})),
            std::vector<int64_t>{0});
  // alpha = 2.0**63 (a float) passes c10's check (int64's maximum reads as 2^63 in double)
  // and converts to int64's minimum, as x86 truncates: mn * 1 + 1
  // (torch.addmm(ones i64, ones, ones, alpha=2.0**63) is -9223372036854775807).
  Tensor one = Tensor::empty(DType::Int64, {1, 1});
  const int64_t ov[] = {1};
  std::memcpy(one.data(), ov, sizeof ov);
  EXPECT_EQ(int64_values(eval("c: i64[1, 1], a: i64[1, 1], b: i64[1, 1]",
                              "addmm(c, a, b, alpha=9.223372036854776e18)", {one, one, one})),
            std::vector<int64_t>{mn + 1});
}

TEST(EagerContraction, FloatAlphaAndBetaTruncateForIntegers) {
  // torch.addmm(full((1, 1), 3, int8), ones int8, ones int8, beta=2.7) is 7 (2 * 3 + 1);
  // alpha=2.7 gives 3 + 2, alpha=-2.7 gives 3 - 2.
  const Tensor three = make(DType::Int8, {1, 1}, {3});
  const Tensor one = make(DType::Int8, {1, 1}, {1});
  const std::string in = "c: i8[1, 1], a: i8[1, 1], b: i8[1, 1]";
  expect_values(eval(in, "addmm(c, a, b, beta=2.7)", {three, one, one}), DType::Int8, {1, 1}, {7},
                "beta=2.7");
  expect_values(eval(in, "addmm(c, a, b, alpha=2.7)", {three, one, one}), DType::Int8, {1, 1}, {5},
                "alpha=2.7");
  expect_values(eval(in, "addmm(c, a, b, alpha=-2.7)", {three, one, one}), DType::Int8, {1, 1}, {1},
                "alpha=-2.7");
  expect_values(eval(in, "addmm(c, a, b, beta=0.5)", {three, one, one}), DType::Int8, {1, 1}, {1},
                "beta=0.5 is 0");
}

}  // namespace
}  // namespace stax::eager
