// Tests of the eager reductions: sum/mean/amax/amin over dims with and without keepdim,
// integer widening, dtype=, NaN propagation, empty reductions and strided inputs.
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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const char* kHeader = "def g(x: f32[2, 3]):\n";

Tensor reduce(const std::string& call, const Tensor& x) {
  return run1(std::string(kHeader) + "  r = " + call + "\n  return r\n", {x});
}

TEST(Reductions, SumOverDims) {
  Tensor x = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = reduce("sum(x)", x);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{}));
  EXPECT_EQ(r.get({}), 21);
  r = reduce("sum(x, dim=[-1])", x);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2}));
  EXPECT_EQ(values(r), (std::vector<double>{6, 15}));
  r = reduce("sum(x, dim=[0], keepdim=True)", x);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(r), (std::vector<double>{5, 7, 9}));
  r = reduce("sum(x, dim=[0, 1], keepdim=True)", x);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(values(r), (std::vector<double>{21}));
}

TEST(Reductions, SumOfMiddleDims) {
  Tensor x = make(DType::Float64, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor r = run1("def g(x: f64[2, 2, 2]):\n  r = sum(x, dim=[0, 2])\n  return r\n", {x});
  EXPECT_EQ(values(r), (std::vector<double>{1 + 2 + 5 + 6, 3 + 4 + 7 + 8}));
}

TEST(Reductions, SumAccumulatesInDouble) {
  Tensor x = make(DType::Float32, {3}, {1e8, 1, -1e8});
  EXPECT_EQ(run1("def g(x: f32[3]):\n  r = sum(x)\n  return r\n", {x}).get({}), 1.0);
  // f16: 2048 + 1 + 1 is 2050 exactly (a running f16 sum would stay at 2048).
  Tensor h = make(DType::Float16, {3}, {2048, 1, 1});
  Tensor r = run1("def g(x: f16[3]):\n  r = sum(x)\n  return r\n", {h});
  EXPECT_EQ(r.dtype(), DType::Float16);
  EXPECT_EQ(r.get({}), 2050.0);
}

TEST(Reductions, IntegerAndBoolSumsWidenToInt64) {
  Tensor i = make(DType::Int32, {3}, {2147483647, 2147483647, 2});
  Tensor r = run1("def g(x: i32[3]):\n  r = sum(x)\n  return r\n", {i});
  EXPECT_EQ(r.dtype(), DType::Int64);
  EXPECT_EQ(int64_values(r)[0], int64_t{2147483647} * 2 + 2);
  Tensor b = make(DType::Bool, {4}, {1, 0, 1, 1});
  r = run1("def g(x: bool[4]):\n  r = sum(x)\n  return r\n", {b});
  EXPECT_EQ(r.dtype(), DType::Int64);
  EXPECT_EQ(int64_values(r)[0], 3);
}

TEST(Reductions, SumWithDtype) {
  Tensor i = make(DType::Int32, {2}, {1, 2});
  Tensor r = run1("def g(x: i32[2]):\n  r = sum(x, dtype='f64')\n  return r\n", {i});
  EXPECT_EQ(r.dtype(), DType::Float64);
  EXPECT_EQ(r.get({}), 3.0);
  // The input is converted to the requested dtype first: 0.1 (f64) becomes f32(0.1).
  Tensor d = make(DType::Float64, {1}, {0.1});
  r = run1("def g(x: f64[1]):\n  r = sum(x, dtype='f32')\n  return r\n", {d});
  EXPECT_EQ(r.get({}), static_cast<double>(0.1f));
}

TEST(Reductions, Mean) {
  Tensor x = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(reduce("mean(x)", x).get({}), 3.5);
  EXPECT_EQ(values(reduce("mean(x, dim=[1])", x)), (std::vector<double>{2, 5}));
  Tensor r = reduce("mean(x, dim=[0], keepdim=True)", x);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(r), (std::vector<double>{2.5, 3.5, 4.5}));
  Tensor i = make(DType::Int32, {2}, {1, 2});
  r = run1("def g(x: i32[2]):\n  r = mean(x, dtype='f32')\n  return r\n", {i});
  EXPECT_EQ(r.get({}), 1.5);
}

TEST(Reductions, AmaxAmin) {
  Tensor x = make(DType::Float32, {2, 3}, {1, 5, 3, -4, -2, -kInf});
  EXPECT_EQ(values(reduce("amax(x, dim=[1])", x)), (std::vector<double>{5, -2}));
  EXPECT_EQ(values(reduce("amin(x, dim=[1])", x)), (std::vector<double>{1, -kInf}));
  EXPECT_EQ(values(reduce("amax(x, dim=[0])", x)), (std::vector<double>{1, 5, 3}));
  EXPECT_EQ(reduce("amax(x)", x).get({}), 5);
  EXPECT_EQ(reduce("amin(x)", x).get({}), -kInf);
  Tensor r = reduce("amin(x, dim=[-1], keepdim=True)", x);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 1}));
  Tensor i = make(DType::Int64, {3}, {-7, 9, 2});
  r = run1("def g(x: i64[3]):\n  r = amax(x)\n  return r\n", {i});
  EXPECT_EQ(r.dtype(), DType::Int64);
  EXPECT_EQ(int64_values(r)[0], 9);
}

TEST(Reductions, NaNPropagates) {
  Tensor x = make(DType::Float32, {2, 3}, {1, kNaN, 3, kInf, 2, -kInf});
  Tensor r = reduce("amax(x, dim=[1])", x);
  EXPECT_TRUE(std::isnan(r.get({0})));
  EXPECT_EQ(r.get({1}), kInf);
  r = reduce("amin(x, dim=[1])", x);
  EXPECT_TRUE(std::isnan(r.get({0})));
  EXPECT_EQ(r.get({1}), -kInf);
  r = reduce("sum(x, dim=[1])", x);
  EXPECT_TRUE(std::isnan(r.get({0})));
  EXPECT_TRUE(std::isnan(r.get({1})));  // inf + -inf
  r = reduce("mean(x, dim=[0])", x);
  EXPECT_EQ(r.get({0}), kInf);
  EXPECT_TRUE(std::isnan(r.get({1})));
  // NaN first in the row as well.
  Tensor y = make(DType::Float32, {2}, {kNaN, 1});
  EXPECT_TRUE(std::isnan(run1("def g(x: f32[2]):\n  r = amin(x)\n  return r\n", {y}).get({})));
}

TEST(Reductions, EmptyReductions) {
  Tensor x = Tensor::empty(DType::Float32, {0, 3});
  Tensor r = run1("def g(x: f32[0, 3]):\n  r = sum(x, dim=[0])\n  return r\n", {x});
  EXPECT_EQ(values(r), (std::vector<double>{0, 0, 0}));
  r = run1("def g(x: f32[0, 3]):\n  r = mean(x, dim=[0])\n  return r\n", {x});
  for (double v : values(r)) EXPECT_TRUE(std::isnan(v));
  r = run1("def g(x: f32[0, 3]):\n  r = amax(x, dim=[1])\n  return r\n", {x});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{0}));
}

TEST(Reductions, StridedInput) {
  // x given transposed: logical [[1, 4], [2, 5], [3, 6]].
  Tensor base = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor xt = base.as_strided({3, 2}, {1, 3}, 0);
  Tensor r = run1("def g(x: f32[3, 2]):\n  r = sum(x, dim=[1])\n  return r\n", {xt});
  EXPECT_EQ(values(r), (std::vector<double>{5, 7, 9}));
  // Expanded (stride-0) input.
  Tensor row = make(DType::Float32, {3}, {1, 2, 3});
  r = run1("def g(x: f32[4, 3]):\n  r = sum(x, dim=[0])\n  return r\n",
           {row.as_strided({4, 3}, {0, 1}, 0)});
  EXPECT_EQ(values(r), (std::vector<double>{4, 8, 12}));
}

TEST(Reductions, ZeroDimInput) {
  Tensor s = make(DType::Float32, {}, {2.5});
  EXPECT_EQ(run1("def g(x: f32[]):\n  r = sum(x)\n  return r\n", {s}).get({}), 2.5);
  EXPECT_EQ(run1("def g(x: f32[]):\n  r = amax(x, dim=[0])\n  return r\n", {s}).get({}), 2.5);
}

}  // namespace
}  // namespace stax::eager

namespace stax::eager {
namespace {

using testing::make;
using testing::run1;

double reduce1(const std::string& op, const std::string& type, const Tensor& x) {
  return run1("def g(x: " + type + "):\n  r = " + op + "(x)\n  return r\n", {x}).get({});
}

// PyTorch's CPU mean is sum(...).div_(count) in the dtype: a sum that overflows the dtype
// makes the mean infinite, even though the exact mean is in range. Signed zeros and NaN as
// in PyTorch too.
TEST(ReductionSemantics, FloatCornerCasesMatchPyTorch) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor f = make(DType::Float32, {3}, {3e38, 3e38, 3e38});
  EXPECT_EQ(reduce1("mean", "f32[3]", f), inf);
  EXPECT_EQ(reduce1("sum", "f32[3]", f), inf);
  EXPECT_EQ(reduce1("mean", "f32[3]", make(DType::Float32, {3}, {-3e38, -3e38, -3e38})), -inf);
  // f16 sums accumulate in float but are stored in f16 (max 65504) before the division.
  EXPECT_EQ(reduce1("mean", "f16[3]", make(DType::Float16, {3}, {30000, 30000, 30000})), inf);
  // In f64 the same sum is in range.
  EXPECT_DOUBLE_EQ(reduce1("mean", "f64[3]", make(DType::Float64, {3}, {3e38, 3e38, 3e38})), 3e38);
  // The accumulator starts at +0, like PyTorch's: a sum of -0.0 only is +0.0; amax and amin
  // return an element.
  const Tensor z = make(DType::Float32, {3}, {-0.0, -0.0, -0.0});
  EXPECT_FALSE(std::signbit(reduce1("sum", "f32[3]", z)));
  EXPECT_TRUE(std::signbit(reduce1("amax", "f32[3]", z)));
  EXPECT_TRUE(std::signbit(reduce1("amin", "f32[3]", z)));
  EXPECT_TRUE(std::isnan(reduce1("mean", "f32[3]", make(DType::Float32, {3}, {1, kNaN, 2}))));
  EXPECT_TRUE(std::isnan(reduce1("sum", "f32[2]", make(DType::Float32, {2}, {inf, -inf}))));
}

// The mean divides the sum rounded to float32 by count in float32: 2^24 + 1 rounds to 2^24,
// and 2^24 / 5 is 3355443.25 in float, where the unrounded double mean (2^24 + 1) / 5 would
// round to 3355443.5.
TEST(ReductionSemantics, MeanDividesTheRoundedSum) {
  EXPECT_EQ(reduce1("mean", "f32[5]", make(DType::Float32, {5}, {16777216, 1, 0, 0, 0})),
            3355443.25);
}

}  // namespace
}  // namespace stax::eager
