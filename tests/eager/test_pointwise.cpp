// Tests of the eager pointwise ops on small hand-computed cases: arithmetic with alpha and
// scalars, broadcasting, integer wrapping, NaN/inf semantics, unary math, pow and where.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "eager/ops.h"
#include "eager_test_util.h"
#include "ir/op_schema.h"

namespace stax::eager {
namespace {

using testing::int64_values;
using testing::make;
using testing::run1;
using testing::values;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Element-wise equality where NaN matches NaN.
void expect_same(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << "at " << i << ": " << actual[i];
    } else {
      EXPECT_EQ(actual[i], expected[i]) << "at " << i;
    }
  }
}

TEST(Pointwise, AddSubWithAlpha) {
  Tensor x = make(DType::Float32, {3}, {1, 2, 3});
  Tensor y = make(DType::Float32, {3}, {10, 20, 30});
  expect_same(values(run1("def g(x: f32[3], y: f32[3]):\n  r = add(x, y)\n  return r\n", {x, y})),
              {11, 22, 33});
  expect_same(
      values(run1("def g(x: f32[3], y: f32[3]):\n  r = add(x, y, alpha=2)\n  return r\n", {x, y})),
      {21, 42, 63});
  expect_same(values(run1("def g(x: f32[3], y: f32[3]):\n  r = sub(x, y, alpha=0.5)\n  return r\n",
                          {x, y})),
              {-4, -8, -12});
  expect_same(values(run1("def g(x: f32[3], y: f32[3]):\n  r = mul(x, y)\n  return r\n", {x, y})),
              {10, 40, 90});
  expect_same(values(run1("def g(x: f32[3], y: f32[3]):\n  r = div(x, y)\n  return r\n", {x, y})),
              {static_cast<float>(0.1), static_cast<float>(0.1), static_cast<float>(0.1)});
}

TEST(Pointwise, ScalarOperands) {
  Tensor x = make(DType::Float32, {3}, {1, 2, 4});
  expect_same(values(run1("def g(x: f32[3]):\n  r = sub(1.0, x)\n  return r\n", {x})), {0, -1, -3});
  expect_same(values(run1("def g(x: f32[3]):\n  r = div(1, x)\n  return r\n", {x})),
              {1, 0.5, 0.25});
  expect_same(values(run1("def g(x: f32[3]):\n  r = mul(x, 3)\n  return r\n", {x})), {3, 6, 12});
  // An integer tensor with a float scalar promotes to f32.
  Tensor i = make(DType::Int32, {2}, {1, 2});
  Tensor r = run1("def g(i: i32[2]):\n  r = add(i, 0.5)\n  return r\n", {i});
  EXPECT_EQ(r.dtype(), DType::Float32);
  expect_same(values(r), {1.5, 2.5});
}

TEST(Pointwise, Broadcasting) {
  Tensor a = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make(DType::Float32, {3}, {10, 20, 30});
  Tensor r = run1("def g(a: f32[2, 3], b: f32[3]):\n  r = add(a, b)\n  return r\n", {a, b});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 3}));
  expect_same(values(r), {11, 22, 33, 14, 25, 36});
  Tensor c = make(DType::Float32, {2, 1}, {1, 2});
  Tensor d = make(DType::Float32, {1, 3}, {1, 10, 100});
  r = run1("def g(c: f32[2, 1], d: f32[1, 3]):\n  r = mul(c, d)\n  return r\n", {c, d});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 3}));
  expect_same(values(r), {1, 10, 100, 2, 20, 200});
  // A 0-dim tensor broadcasts everywhere.
  Tensor s = make(DType::Float32, {}, {0.5});
  r = run1("def g(a: f32[2, 3], s: f32[]):\n  r = sub(a, s)\n  return r\n", {a, s});
  expect_same(values(r), {0.5, 1.5, 2.5, 3.5, 4.5, 5.5});
}

TEST(Pointwise, NonContiguousInputs) {
  // x is passed transposed (declared [3, 2], given with strides [1, 3]).
  Tensor base = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor xt = base.as_strided({3, 2}, {1, 3}, 0);  // [[1, 4], [2, 5], [3, 6]]
  Tensor y = make(DType::Float32, {3, 2}, {10, 20, 30, 40, 50, 60});
  Tensor r = run1("def g(x: f32[3, 2], y: f32[3, 2]):\n  r = add(x, y)\n  return r\n", {xt, y});
  expect_same(values(r), {11, 24, 32, 45, 53, 66});
  // An expanded input (stride 0).
  Tensor row = make(DType::Float32, {3}, {1, 2, 3});
  Tensor expanded = row.as_strided({2, 3}, {0, 1}, 0);
  r = run1("def g(x: f32[2, 3]):\n  r = mul(x, x)\n  return r\n", {expanded});
  expect_same(values(r), {1, 4, 9, 1, 4, 9});
  EXPECT_TRUE(r.is_contiguous());
}

TEST(Pointwise, TrueDivisionSpecialValues) {
  Tensor x = make(DType::Float32, {4}, {1, -1, 0, 6});
  Tensor y = make(DType::Float32, {4}, {0, 0, 0, 4});
  expect_same(values(run1("def g(x: f32[4], y: f32[4]):\n  r = div(x, y)\n  return r\n", {x, y})),
              {kInf, -kInf, kNaN, 1.5});
  // Integers divide to f32 (true division), by zero too.
  Tensor a = make(DType::Int32, {3}, {7, -7, 1});
  Tensor b = make(DType::Int32, {3}, {2, 2, 0});
  Tensor r = run1("def g(a: i32[3], b: i32[3]):\n  r = div(a, b)\n  return r\n", {a, b});
  EXPECT_EQ(r.dtype(), DType::Float32);
  expect_same(values(r), {3.5, -3.5, kInf});
}

Tensor rounded_div(DType dtype, const Tensor& a, const Tensor& b, const std::string& mode) {
  ir::Graph g("g");
  ir::ValueRef x = g.add_input("a", dtype, a.sizes());
  ir::ValueRef y = g.add_input("b", dtype, b.sizes());
  g.set_outputs({g.add_node("div", {x, y}, {{"rounding_mode", mode}})});
  return run(g, {a, b}).at(0);
}

TEST(Pointwise, RoundedDivision) {
  Tensor a = make(DType::Float32, {5}, {7, -7, 7, -7, 1});
  Tensor b = make(DType::Float32, {5}, {2, 2, -2, -2, 0});
  expect_same(values(rounded_div(DType::Float32, a, b, "floor")), {3, -4, -4, 3, kInf});
  expect_same(values(rounded_div(DType::Float32, a, b, "trunc")), {3, -3, -3, 3, kInf});
  Tensor ia = make(DType::Int32, {4}, {7, -7, 7, -7});
  Tensor ib = make(DType::Int32, {4}, {2, 2, -2, -2});
  expect_same(values(rounded_div(DType::Int32, ia, ib, "floor")), {3, -4, -4, 3});
  expect_same(values(rounded_div(DType::Int32, ia, ib, "trunc")), {3, -3, -3, 3});
  Tensor zero = make(DType::Int32, {4}, {1, 1, 0, 1});
  EXPECT_THROW(rounded_div(DType::Int32, ia, zero, "floor"), std::runtime_error);
}

TEST(Pointwise, MaximumMinimumPropagateNaN) {
  Tensor x = make(DType::Float32, {4}, {1, kNaN, 3, -kInf});
  Tensor y = make(DType::Float32, {4}, {2, 0, kNaN, 5});
  expect_same(
      values(run1("def g(x: f32[4], y: f32[4]):\n  r = maximum(x, y)\n  return r\n", {x, y})),
      {2, kNaN, kNaN, 5});
  expect_same(
      values(run1("def g(x: f32[4], y: f32[4]):\n  r = minimum(x, y)\n  return r\n", {x, y})),
      {1, kNaN, kNaN, -kInf});
}

TEST(Pointwise, ComparisonsAreIEEE) {
  Tensor x = make(DType::Float32, {4}, {1, kNaN, 3, kInf});
  Tensor y = make(DType::Float32, {4}, {2, kNaN, 3, kInf});
  auto cmp = [&](const std::string& op) {
    Tensor r = run1("def g(x: f32[4], y: f32[4]):\n  r = " + op + "(x, y)\n  return r\n", {x, y});
    EXPECT_EQ(r.dtype(), DType::Bool);
    return values(r);
  };
  expect_same(cmp("gt"), {0, 0, 0, 0});
  expect_same(cmp("lt"), {1, 0, 0, 0});
  expect_same(cmp("ge"), {0, 0, 1, 1});
  expect_same(cmp("le"), {1, 0, 1, 1});
  expect_same(cmp("eq"), {0, 0, 1, 1});
  expect_same(cmp("ne"), {1, 1, 0, 0});
  // With a scalar: the literal is rounded to f32 like the tensor.
  Tensor p = make(DType::Float32, {1}, {0.1});
  expect_same(values(run1("def g(p: f32[1]):\n  r = gt(p, 0.1)\n  return r\n", {p})), {0});
  expect_same(values(run1("def g(p: f32[1]):\n  r = eq(p, 0.1)\n  return r\n", {p})), {1});
  // Integers compare exactly, also beyond 2^53.
  Tensor big = Tensor::empty(DType::Int64, {1});
  static_cast<int64_t*>(big.data())[0] = (int64_t{1} << 60) + 1;
  Tensor big2 = Tensor::empty(DType::Int64, {1});
  static_cast<int64_t*>(big2.data())[0] = int64_t{1} << 60;
  expect_same(
      values(run1("def g(a: i64[1], b: i64[1]):\n  r = gt(a, b)\n  return r\n", {big, big2})), {1});
}

TEST(Pointwise, IntegerArithmeticWraps) {
  Tensor a = make(DType::Int32, {2}, {2147483647, -5});
  Tensor b = make(DType::Int32, {2}, {1, 3});
  expect_same(values(run1("def g(a: i32[2], b: i32[2]):\n  r = add(a, b)\n  return r\n", {a, b})),
              {-2147483648.0, -2});
  expect_same(
      values(run1("def g(a: i32[2], b: i32[2]):\n  r = sub(a, b, alpha=2)\n  return r\n", {a, b})),
      {2147483645, -11});
  Tensor u = make(DType::UInt8, {2}, {3, 200});
  Tensor v = make(DType::UInt8, {2}, {5, 2});
  expect_same(values(run1("def g(a: u8[2], b: u8[2]):\n  r = sub(a, b)\n  return r\n", {u, v})),
              {254, 198});
  expect_same(values(run1("def g(a: u8[2], b: u8[2]):\n  r = mul(a, b)\n  return r\n", {u, v})),
              {15, 144});
  // int64 stays exact.
  Tensor l = Tensor::empty(DType::Int64, {1});
  static_cast<int64_t*>(l.data())[0] = (int64_t{1} << 62) + 1;
  Tensor r = run1("def g(a: i64[1]):\n  r = add(a, 2)\n  return r\n", {l});
  EXPECT_EQ(int64_values(r)[0], (int64_t{1} << 62) + 3);
  // u8 with i8 promotes to i16.
  Tensor s = make(DType::Int8, {2}, {-1, 100});
  r = run1("def g(a: u8[2], b: i8[2]):\n  r = add(a, b)\n  return r\n", {u, s});
  EXPECT_EQ(r.dtype(), DType::Int16);
  expect_same(values(r), {2, 300});
}

TEST(Pointwise, BoolArithmetic) {
  Tensor a = make(DType::Bool, {4}, {0, 0, 1, 1});
  Tensor b = make(DType::Bool, {4}, {0, 1, 0, 1});
  Tensor r = run1("def g(a: bool[4], b: bool[4]):\n  r = add(a, b)\n  return r\n", {a, b});
  EXPECT_EQ(r.dtype(), DType::Bool);
  expect_same(values(r), {0, 1, 1, 1});
  expect_same(values(run1("def g(a: bool[4], b: bool[4]):\n  r = mul(a, b)\n  return r\n", {a, b})),
              {0, 0, 0, 1});
}

TEST(Pointwise, HalfArithmeticRoundsOnce) {
  // 1 + 2^-11 is a tie in f16 and rounds to even (1.0); 1 + 2^-11 + 2^-12 rounds up.
  Tensor a = make(DType::Float16, {2}, {1, 1});
  Tensor b = make(DType::Float16, {2}, {std::ldexp(1.0, -11), std::ldexp(1.5, -11)});
  Tensor r = run1("def g(a: f16[2], b: f16[2]):\n  r = add(a, b)\n  return r\n", {a, b});
  EXPECT_EQ(r.dtype(), DType::Float16);
  expect_same(values(r), {1.0, 1.0 + std::ldexp(1.0, -10)});
  Tensor c = make(DType::BFloat16, {1}, {3});
  Tensor d = make(DType::BFloat16, {1}, {1.0 / 3.0});
  r = run1("def g(c: bf16[1], d: bf16[1]):\n  r = mul(c, d)\n  return r\n", {c, d});
  EXPECT_EQ(r.dtype(), DType::BFloat16);
  Tensor expected = make(DType::BFloat16, {1}, {3.0 * d.get({0})});
  expect_same(values(r), values(expected));
}

TEST(Pointwise, UnaryOps) {
  Tensor x = make(DType::Float32, {4}, {-2, 0, 0.5, 4});
  auto un = [&](const std::string& op, const Tensor& in) {
    return values(run1("def g(x: f32[4]):\n  r = " + op + "(x)\n  return r\n", {in}));
  };
  expect_same(un("neg", x), {2, -0.0, -0.5, -4});
  expect_same(un("abs", x), {2, 0, 0.5, 4});
  expect_same(un("relu", x), {0, 0, 0.5, 4});
  expect_same(un("exp", x), {std::exp(-2.0f), 1, std::exp(0.5f), std::exp(4.0f)});
  expect_same(un("log", x), {kNaN, -kInf, std::log(0.5f), std::log(4.0f)});
  expect_same(un("sqrt", x), {kNaN, 0, std::sqrt(0.5f), 2});
  expect_same(un("rsqrt", x), {kNaN, kInf, 1.0f / std::sqrt(0.5f), 0.5});
  expect_same(un("tanh", x), {std::tanh(-2.0f), 0, std::tanh(0.5f), std::tanh(4.0f)});
  expect_same(un("sigmoid", x), {1.0f / (1.0f + std::exp(2.0f)), 0.5,
                                 1.0f / (1.0f + std::exp(-0.5f)), 1.0f / (1.0f + std::exp(-4.0f))});
  Tensor special = make(DType::Float32, {4}, {kNaN, kInf, -kInf, -0.0});
  expect_same(un("relu", special), {kNaN, kInf, 0, 0});
  expect_same(un("exp", special), {kNaN, kInf, 0, 1});
  expect_same(un("sigmoid", special), {kNaN, 1, 0, 0.5});
  expect_same(un("tanh", special), {kNaN, 1, -1, -0.0});
  expect_same(un("abs", special), {kNaN, kInf, kInf, 0});
  // f64 math is done in double.
  Tensor d = make(DType::Float64, {1}, {0.3});
  EXPECT_EQ(run1("def g(x: f64[1]):\n  r = exp(x)\n  return r\n", {d}).get({0}), std::exp(0.3));
  // Integer inputs: neg/abs/relu stay integral, exp converts to f32.
  Tensor i = make(DType::Int32, {3}, {-3, 0, 5});
  Tensor r = run1("def g(x: i32[3]):\n  r = abs(x)\n  return r\n", {i});
  EXPECT_EQ(r.dtype(), DType::Int32);
  expect_same(values(r), {3, 0, 5});
  expect_same(values(run1("def g(x: i32[3]):\n  r = relu(x)\n  return r\n", {i})), {0, 0, 5});
  expect_same(values(run1("def g(x: i32[3]):\n  r = neg(x)\n  return r\n", {i})), {3, 0, -5});
  r = run1("def g(x: i32[3]):\n  r = exp(x)\n  return r\n", {i});
  EXPECT_EQ(r.dtype(), DType::Float32);
  expect_same(values(r), {std::exp(-3.0f), 1, std::exp(5.0f)});
}

TEST(Pointwise, PowSpecialCases) {
  Tensor x = make(DType::Float32, {4}, {2, 0.5, 0, kNaN});
  auto pw = [&](const std::string& e) {
    return values(run1("def g(x: f32[4]):\n  r = pow(x, " + e + ")\n  return r\n", {x}));
  };
  expect_same(pw("2"), {4, 0.25, 0, kNaN});
  expect_same(pw("3"), {8, 0.125, 0, kNaN});
  expect_same(pw("0.5"), {std::sqrt(2.0f), std::sqrt(0.5f), 0, kNaN});
  expect_same(pw("-0.5"), {1.0f / std::sqrt(2.0f), 1.0f / std::sqrt(0.5f), kInf, kNaN});
  expect_same(pw("-1"), {0.5, 2, kInf, kNaN});
  expect_same(pw("-2"), {0.25, 4, kInf, kNaN});
  expect_same(pw("1"), {2, 0.5, 0, kNaN});
  expect_same(pw("0"), {1, 1, 1, 1});
  expect_same(pw("2.5"), {std::pow(2.0f, 2.5f), std::pow(0.5f, 2.5f), 0, kNaN});
  Tensor n = make(DType::Float32, {1}, {-8});
  expect_same(values(run1("def g(x: f32[1]):\n  r = pow(x, 1.5)\n  return r\n", {n})), {kNaN});
  Tensor i = make(DType::Int32, {3}, {2, -3, 10});
  Tensor r = run1("def g(x: i32[3]):\n  r = pow(x, 3)\n  return r\n", {i});
  EXPECT_EQ(r.dtype(), DType::Int32);
  expect_same(values(r), {8, -27, 1000});
  r = run1("def g(x: i32[3]):\n  r = pow(x, 0.5)\n  return r\n", {i});
  EXPECT_EQ(r.dtype(), DType::Float32);
  expect_same(values(r), {std::sqrt(2.0f), kNaN, std::sqrt(10.0f)});
}

TEST(Pointwise, Where) {
  Tensor c = make(DType::Bool, {2, 1}, {1, 0});
  Tensor x = make(DType::Float32, {2, 2}, {1, 2, 3, 4});
  Tensor y = make(DType::Float32, {2}, {-1, -2});
  Tensor r =
      run1("def g(c: bool[2, 1], x: f32[2, 2], y: f32[2]):\n  r = where(c, x, y)\n  return r\n",
           {c, x, y});
  expect_same(values(r), {1, 2, -1, -2});
  r = run1("def g(c: bool[2, 1], x: f32[2, 2]):\n  r = where(c, x, 0.1)\n  return r\n", {c, x});
  EXPECT_EQ(r.dtype(), DType::Float32);
  expect_same(values(r), {1, 2, static_cast<float>(0.1), static_cast<float>(0.1)});
  r = run1("def g(c: bool[2, 1]):\n  r = where(c, 1.5, -inf)\n  return r\n", {c});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 1}));
  expect_same(values(r), {1.5, -kInf});
  Tensor ci = make(DType::Bool, {2}, {1, 0});
  Tensor i = make(DType::Int64, {2}, {7, 8});
  r = run1("def g(c: bool[2], i: i64[2]):\n  r = where(c, i, 0)\n  return r\n", {ci, i});
  EXPECT_EQ(r.dtype(), DType::Int64);
  expect_same(values(r), {7, 0});
}

}  // namespace
}  // namespace stax::eager
