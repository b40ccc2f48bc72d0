// The eager oracle's scans (issue 16, point 7) against values probed on torch 2.13.0's CPU
// eager: cummax and cummin move the index on ties and on every NaN and keep a NaN; integer
// and bool cumsum and cumprod give int64 and wrap; dtype= converts first (then wraps in the
// narrower type); float32 sums and products run in double (a float32 running sum of 0.1
// drifts), float16 in float; logcumsumexp of infinities and NaN as eager's helper gives it;
// and eager's refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "eager_test_util.h"
#include "ir/graph.h"

namespace stax::eager {
namespace {

using testing::make;
using testing::run_text;
using testing::values;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

void expect_same(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) {
    if (std::isnan(expected[k])) {
      EXPECT_TRUE(std::isnan(actual[k])) << "element " << k;
    } else {
      EXPECT_EQ(actual[k], expected[k]) << "element " << k;
    }
  }
}

TEST(EagerScan, ExtremaTiesAndNaNMoveTheIndex) {
  const Tensor x = make(DType::Float32, {8}, {1, 3, 3, 2, kNaN, 5, kNaN, 0});
  auto r = run_text("def f(x: f32[8]):\n    v, i = cummax(x, dim=0)\n    return v, i\n", {x});
  expect_same(values(r[0]), {1, 3, 3, 3, kNaN, kNaN, kNaN, kNaN});
  expect_same(values(r[1]), {0, 1, 2, 2, 4, 4, 6, 6});
  EXPECT_EQ(r[1].dtype(), DType::Int64);
  const Tensor y = make(DType::Float32, {8}, {1, 0, 0, 2, kNaN, -5, kNaN, 0});
  r = run_text("def f(x: f32[8]):\n    v, i = cummin(x, dim=0)\n    return v, i\n", {y});
  expect_same(values(r[0]), {1, 0, 0, 0, kNaN, kNaN, kNaN, kNaN});
  expect_same(values(r[1]), {0, 1, 2, 2, 4, 4, 6, 6});
  const Tensor b = make(DType::Bool, {3}, {1, 0, 1});
  r = run_text("def f(x: bool[3]):\n    v, i = cummax(x, dim=0)\n    return v, i\n", {b});
  expect_same(values(r[0]), {1, 1, 1});
  expect_same(values(r[1]), {0, 0, 2});
}

TEST(EagerScan, IntegerSumsWidenToInt64AndDtypeConvertsFirst) {
  const Tensor u = make(DType::UInt8, {2}, {200, 100});
  Tensor r = run_text("def f(x: u8[2]):\n    y = cumsum(x, dim=0)\n    return y\n", {u})[0];
  EXPECT_EQ(r.dtype(), DType::Int64);
  expect_same(values(r), {200, 300});
  const Tensor big = make(DType::Int64, {3}, {100, 100, 100});
  r = run_text("def f(x: i64[3]):\n    y = cumsum(x, dim=0, dtype='i8')\n    return y\n", {big})[0];
  expect_same(values(r), {100, -56, 44});
  const Tensor f = make(DType::Float32, {2}, {1.5, 2.5});
  r = run_text("def f(x: f32[2]):\n    y = cumsum(x, dim=0, dtype='i32')\n    return y\n", {f})[0];
  expect_same(values(r), {1, 3});  // truncated first: 1 + 2
  const Tensor p = make(DType::Int64, {2}, {1099511627776.0, 1099511627776.0});
  r = run_text("def f(x: i64[2]):\n    y = cumprod(x, dim=0)\n    return y\n", {p})[0];
  expect_same(values(r), {1099511627776.0, 0});  // 2^80 wraps to 0
}

TEST(EagerScan, Float32RunsInDoubleAndFloat16InFloat) {
  // 10^6 additions of 0.1f: a float running sum ends near 100958, the double one at 100000.
  const int64_t n = 1000000;
  const Tensor x = make(DType::Float32, {n}, std::vector<double>(n, static_cast<float>(0.1)));
  const Tensor r =
      run_text("def f(x: f32[1000000]):\n    y = cumsum(x, dim=0)\n    return y\n", {x})[0];
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += static_cast<double>(static_cast<float>(0.1));
  EXPECT_EQ(r.get_flat(n - 1), static_cast<double>(static_cast<float>(sum)));
  // float16: 0.1 summed in float and rounded per element reaches 409.5 by element 4096 where
  // a float16 running sum stops at 256.
  const Tensor h = make(DType::Float16, {5000}, std::vector<double>(5000, 0.0999755859375));
  const Tensor rh =
      run_text("def f(x: f16[5000]):\n    y = cumsum(x, dim=0)\n    return y\n", {h})[0];
  EXPECT_GT(rh.get_flat(4999), 490.0);
}

TEST(EagerScan, LogCumSumExpOfInfinitiesAndNaN) {
  const Tensor x = make(DType::Float32, {7}, {-kInf, -kInf, 1, kInf, kInf, kNaN, 1});
  const Tensor r =
      run_text("def f(x: f32[7]):\n    y = logcumsumexp(x, dim=0)\n    return y\n", {x})[0];
  expect_same(values(r), {-kInf, -kInf, 1, kInf, kInf, kNaN, kNaN});
}

TEST(EagerScan, ZeroDimAndEmptyInputs) {
  const Tensor s = make(DType::Float32, {}, {5});
  auto r = run_text(
      "def f(x: f32[]):\n    v, i = cummax(x, dim=-1)\n    c = cumsum(x, dim=0)\n"
      "    return v, i, c\n",
      {s});
  expect_same(values(r[0]), {5});
  expect_same(values(r[1]), {0});
  expect_same(values(r[2]), {5});
  const Tensor e = Tensor::empty(DType::Float32, {0, 3});
  r = run_text("def f(x: f32[0, 3]):\n    v, i = cummin(x, dim=1)\n    return v, i\n", {e});
  EXPECT_EQ(r[1].sizes(), (std::vector<int64_t>{0, 3}));
}

TEST(EagerScan, RefusalsNameTheProblem) {
  auto refuses = [](const std::string& text, const std::string& message) {
    try {
      ir::parse_graph(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  refuses("def f(x: f32[3]):\n    y = cumsum(x, dim=1)\n    return y\n", "out of range");
  refuses("def f(x: i64[3]):\n    y = logcumsumexp(x, dim=0)\n    return y\n",
          "not implemented for 'i64'");
  refuses("def f(x: i64[3]):\n    y = cumsum(x, dim=0, dtype='bool')\n    return y\n",
          "not implemented for 'Bool'");
  refuses("def f(x: bool[3]):\n    y = cumprod(x, dim=0, dtype='bool')\n    return y\n",
          "not implemented for 'Bool'");
}

}  // namespace
}  // namespace stax::eager
