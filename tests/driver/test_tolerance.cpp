// Per-output comparison tolerances: they follow the sums that feed each output, grow rtol
// only, and are tight enough that a dropped element of a long sum and one wrong softmax row
// are mismatches while the correct compiled results pass.
#include <gtest/gtest.h>

#include <cmath>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"

namespace stax {
namespace {

// Values uniform in [0, 1).
Tensor unit_interval(const std::vector<int64_t>& sizes, uint64_t seed) {
  Tensor t = eager::random_tensor(DType::Float32, sizes, seed);
  for (int64_t p = 0; p < t.numel(); ++p) t.set_flat(p, std::fabs(t.get_flat(p)));
  return t;
}

bool matches(const Tensor& actual, const Tensor& expected, const Tolerance& tol) {
  return eager::compare(actual, expected, tol.rtol, tol.atol).within_tolerance;
}

TEST(Tolerance, FollowsTheSumsFeedingEachOutput) {
  const ir::Graph g = ir::parse_graph(R"(
def outs(x: f32[1000, 1000], i: i64[4]):
    e = exp(x)
    m = amax(x)
    s = sum(x)
    r = sum(x, dim=[-1], keepdim=True)
    y = div(e, r)
    z = mean(y, dim=[0])
    return e, m, s, y, z, i
)");
  const std::vector<Tolerance> tol = output_tolerances(g);
  ASSERT_EQ(tol.size(), 6u);
  // No sum feeds exp(x) or amax(x) (amax is exact): PyTorch's float32 defaults.
  EXPECT_EQ(tol[0].rtol, 1.3e-6);
  EXPECT_EQ(tol[1].rtol, 1.3e-6);
  // One sum: its allowance 4 u sqrt(128 + 16) / 3 = 16 u, in quadrature with the base.
  const double one_sum = std::sqrt(1.3e-6 * 1.3e-6 + std::pow(16 * std::ldexp(1.0, -24), 2));
  EXPECT_DOUBLE_EQ(tol[2].rtol, one_sum);
  EXPECT_DOUBLE_EQ(tol[3].rtol, one_sum);
  // The mean of quotients of a sum is fed by two sums.
  EXPECT_DOUBLE_EQ(tol[4].rtol,
                   std::sqrt(1.3e-6 * 1.3e-6 + 2 * std::pow(16 * std::ldexp(1.0, -24), 2)));
  // The allowance does not grow with the length (blocked sums), and atol never grows.
  EXPECT_EQ(value_tolerance(DType::Float32, {1000000000}).rtol, one_sum);
  for (size_t k = 0; k < 5; ++k) EXPECT_EQ(tol[k].atol, 1e-5) << k;
  EXPECT_EQ(tol[5].rtol, 0.0);  // integers compare exactly
  EXPECT_EQ(tol[5].atol, 0.0);
}

TEST(Tolerance, FollowsPlainSumsProductsAndTensorLists) {
  const ir::Graph g = ir::parse_graph(R"(
def outs(x: f32[10, 900], d: f64[10, 400]):
    v = var(x, dim=[1])
    p = prod(x, dim=[1])
    l = logsumexp(d, [1])
    a = sum(x, dim=[1])
    b = amax(x, dim=[1])
    c = cat([a, b])
    return v, p, l, c
)");
  const std::vector<Tolerance> tol = output_tolerances(g);
  ASSERT_EQ(tol.size(), 4u);
  const double u32 = std::ldexp(1.0, -24), u64 = std::ldexp(1.0, -53);
  // var of 900 elements: Welford's adds are not blocked, 4 u sqrt(900) / 3 = 40 u.
  EXPECT_DOUBLE_EQ(tol[0].rtol, std::sqrt(1.3e-6 * 1.3e-6 + std::pow(40 * u32, 2)));
  // prod of 900 factors: 4 u sqrt(900) / sqrt(3).
  EXPECT_DOUBLE_EQ(tol[1].rtol,
                   std::sqrt(1.3e-6 * 1.3e-6 + std::pow(4 * u32 * 30 / std::sqrt(3.0), 2)));
  // float64 logsumexp of 400: 4 u sqrt(400) / 3 with float64's u, float64's base.
  EXPECT_DOUBLE_EQ(tol[2].rtol, std::sqrt(1e-7 * 1e-7 + std::pow(4 * u64 * 20 / 3, 2)));
  // A sum reached through cat's tensor list counts like a direct argument (a sum of 900 in
  // the cascade, value_tolerance's figure).
  EXPECT_DOUBLE_EQ(tol[3].rtol, value_tolerance(DType::Float32, {900}).rtol);
  EXPECT_GT(tol[3].rtol, 1.3e-6);
}

// Issue 14: a contraction's allowance comes from its inner size K, 4 u sqrt(K + 9) / 3 (the
// K additions of one chain, the products' roundings, alpha and the bias), whatever its
// other sizes; it propagates to its consumers like a reduction's, and integers stay exact.
TEST(Tolerance, FollowsTheInnerSizeOfContractions) {
  const ir::Graph g = ir::parse_graph(R"(
def outs(a: f32[3, 768], b: f32[768, 5], c: f32[3, 5], x: bf16[4, 2, 91], y: bf16[4, 91, 2], d: f64[2, 7], e: f64[7, 2], i: i32[2, 3], j: i32[3, 2], v: bf16[2]):
    m = mm(a, b)
    t = tanh(m)
    s = addmm(c, a, b, beta=0.5, alpha=2)
    r = sum(s, dim=[1])
    z = baddbmm(v, x, y)
    f = mm(d, e)
    n = mm(i, j)
    return m, t, s, r, z, f, n
)");
  const std::vector<Tolerance> tol = output_tolerances(g);
  ASSERT_EQ(tol.size(), 7u);
  const double u32 = std::ldexp(1.0, -24), u64 = std::ldexp(1.0, -53);
  const double k768 = 4 * u32 * std::sqrt(768.0 + 9.0) / 3;
  EXPECT_DOUBLE_EQ(tol[0].rtol, std::sqrt(1.3e-6 * 1.3e-6 + k768 * k768));
  EXPECT_NEAR(tol[0].rtol, 2.57e-6, 0.01e-6);
  EXPECT_EQ(tol[0].atol, 1e-5);
  EXPECT_DOUBLE_EQ(tol[1].rtol, tol[0].rtol);  // through a pointwise consumer
  EXPECT_DOUBLE_EQ(tol[2].rtol, tol[0].rtol);  // alpha and beta are in the allowance
  // A sum over the contraction's result: both allowances in quadrature.
  EXPECT_DOUBLE_EQ(tol[3].rtol, std::sqrt(tol[0].rtol * tol[0].rtol +
                                          std::pow(value_tolerance(DType::Float32, {5}).rtol, 2) -
                                          1.3e-6 * 1.3e-6));
  // bfloat16 accumulates in float32: bf16's base with float32's u.
  const double k91 = 4 * u32 * std::sqrt(91.0 + 9.0) / 3;
  EXPECT_DOUBLE_EQ(tol[4].rtol, std::sqrt(1.6e-2 * 1.6e-2 + k91 * k91));
  const double k7 = 4 * u64 * std::sqrt(7.0 + 9.0) / 3;
  EXPECT_DOUBLE_EQ(tol[5].rtol, std::sqrt(1e-7 * 1e-7 + k7 * k7));
  EXPECT_EQ(tol[6].rtol, 0.0);  // integer products compare exactly
  EXPECT_EQ(tol[6].atol, 0.0);
}

// A convolution (issue 15) is allowed as a contraction of C_in/groups * prod(kernel) products,
// forward or transposed, grouped or not.
TEST(Tolerance, FollowsTheReductionLengthOfConvolutions) {
  const ir::Graph g = ir::parse_graph(R"(
def outs(x: f32[2, 64, 8, 8], w: f32[16, 64, 3, 3], b: f32[16], v: f32[64, 4, 3, 3], d: f32[2, 64, 8, 8, 8], k: f32[64, 1, 3, 3, 3], i: i64[1, 4, 5], j: i64[2, 4, 3]):
    c = convolution(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    t = convolution(x, v, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 2)
    e = convolution(d, k, None, [1], [1], [1], False, [0], 64)
    n = convolution(i, j, None, [1], [0], [1], False, [0], 1)
    return c, t, e, n
)");
  const std::vector<Tolerance> tol = output_tolerances(g);
  ASSERT_EQ(tol.size(), 4u);
  const double u32 = std::ldexp(1.0, -24);
  const auto rtol = [&](double products) {
    const double k = 4 * u32 * std::sqrt(products + 9.0) / 3;
    return std::sqrt(1.3e-6 * 1.3e-6 + k * k);
  };
  EXPECT_DOUBLE_EQ(tol[0].rtol, rtol(64 * 9));
  EXPECT_EQ(tol[0].atol, 1e-5);
  EXPECT_DOUBLE_EQ(tol[1].rtol, rtol(32 * 9));  // transposed: C_in/groups = 32
  EXPECT_DOUBLE_EQ(tol[2].rtol, rtol(27));      // depthwise: one channel per group
  EXPECT_EQ(tol[3].rtol, 0.0);                  // integer convolutions compare exactly
}

// A compiled sum of 1e6 values in [0, 1) passes; one that missed the largest element (a
// relative change of about 2e-6) does not.
TEST(Tolerance, DroppedElementOfALongSumIsAMismatch) {
  const ir::Graph g = ir::parse_graph("def s(x: f32[1000000]):\n    s = sum(x)\n    return s\n");
  const Tensor x = unit_interval({1000000}, 11);
  int64_t largest = 0;
  for (int64_t p = 0; p < x.numel(); ++p) {
    if (x.get_flat(p) > x.get_flat(largest)) largest = p;
  }
  Tensor dropped = Tensor::empty(DType::Float32, {1000000});
  for (int64_t p = 0; p < x.numel(); ++p) dropped.set_flat(p, p == largest ? 0.0 : x.get_flat(p));
  const Tolerance tol = output_tolerances(g)[0];
  const Tensor expected = eager::run(g, {x})[0];
  for (runtime::SimdLevel level : {runtime::SimdLevel::Scalar, runtime::detect_simd_level()}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(runtime::simd_level_name(level)) + ", " + std::to_string(threads) +
                   " threads");
      CompileOptions options;
      options.simd = level;
      options.num_threads = threads;
      const CompiledGraph compiled = compile(g, options);
      EXPECT_TRUE(matches(compiled.run({x})[0], expected, tol));
      EXPECT_FALSE(matches(compiled.run({dropped})[0], expected, tol));
    }
  }
}

// A softmax over rows of 10000: the compiled result passes; the same result with one row
// replaced by its neighbour's (a wrong row index) does not. Its values (about 1e-4) lie below
// a tolerance that grew with sqrt(10000).
TEST(Tolerance, WrongSoftmaxRowIsAMismatch) {
  const ir::Graph g = ir::parse_graph(R"(
def softmax(x: f32[8, 10000]):
    m = amax(x, dim=[-1], keepdim=True)
    d = sub(x, m)
    e = exp(d)
    s = sum(e, dim=[-1], keepdim=True)
    y = div(e, s)
    return y
)");
  const Tensor x = unit_interval({8, 10000}, 12);
  const Tolerance tol = output_tolerances(g)[0];
  const Tensor expected = eager::run(g, {x})[0];
  for (int threads : {1, 2}) {
    CompileOptions options;
    options.num_threads = threads;
    const Tensor actual = compile(g, options).run({x})[0];
    EXPECT_TRUE(matches(actual, expected, tol)) << threads << " threads";
    Tensor wrong = Tensor::empty(DType::Float32, {8, 10000});
    for (int64_t r = 0; r < 8; ++r) {
      for (int64_t c = 0; c < 10000; ++c) wrong.set({r, c}, actual.get({r == 3 ? 4 : r, c}));
    }
    EXPECT_FALSE(matches(wrong, expected, tol)) << threads << " threads";
  }
}

}  // namespace
}  // namespace stax
