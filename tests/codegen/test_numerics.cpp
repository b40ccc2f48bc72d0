// Numerics of compiled reductions at every SIMD level and thread count: long float32 sums do
// not stall (blocked, compensated accumulation in the scalar, vectorized, column and
// split-across-threads forms), the corner cases (overflow, NaN, signed zeros, empty) agree
// with the oracle, and kernels are correct for any run-time thread count.
#include <cmath>
#include <limits>

#include "codegen_test_util.h"

namespace stax::codegen_test {
namespace {

class Numerics : public CodegenTest {};

// Checks `actual` (one output) against exactly known values within the output's tolerance.
void expect_near_exact(const std::string& what, const Tensor& actual,
                       const std::vector<double>& exact, const Tolerance& tol) {
  const eager::Difference d =
      eager::compare(actual, make_f32(actual.sizes(), exact), tol.rtol, tol.atol);
  EXPECT_TRUE(d.within_tolerance) << what << ": got " << actual.get_flat(0) << " for "
                                  << exact.at(0) << " (max rel diff " << d.max_rel << ", rtol "
                                  << tol.rtol << ")";
}

// 2.5e7 ones stall a single float32 accumulator at 2^24 = 16777216; 1e9 elements stall W
// lane accumulators as well. The 1e9 elements are a stride-0 view of one element (the kernel
// reads it once per iteration), the column reduction reads rows overlapping in memory
// (strides [2, 1]) so that 2.5e7 rows take 200 MB; the oracle would take minutes on these,
// and the exact results are known.
TEST_P(Numerics, LongSumsStayWithinFloatTolerance) {
  const ir::Graph g = ir::parse_graph(R"(
def long_sums(x: f32[1], ones: f32[25000000], c: f32[25000000, 3] strides=[2, 1], y: f32[1, 2, 1]):
    e = expand(x, [1000000000])
    s = sum(e)
    m = mean(e)
    o = sum(ones)
    om = mean(ones, dim=[0], keepdim=True)
    t = sum(c, dim=[0])
    w = expand(y, [5000, 2, 5000])
    u = sum(w, dim=[0, 2])
    return s, m, o, om, t, u
)");
  const CompiledGraph compiled = compile_one(g);
  const Tensor x = make_f32({1}, {0.1});
  Tensor ones = Tensor::empty(DType::Float32, {25000000});
  for (int64_t p = 0; p < ones.numel(); ++p) static_cast<float*>(ones.data())[p] = 1.0f;
  Tensor c = Tensor::empty_strided(DType::Float32, {25000000, 3}, {2, 1});
  float* c_data = static_cast<float*>(c.data());
  for (int64_t p = 0; p < 2 * 25000000 + 1; ++p) c_data[p] = 1.0f;
  const Tensor y = make_f32({1, 2, 1}, {1.0, 1.0});
  const std::vector<Tensor> inputs = {x, ones, c, y};
  if (!runnable()) {
    EXPECT_THROW(compiled.run(inputs), std::runtime_error);
    return;
  }
  const std::vector<Tensor> out = compiled.run(inputs);
  const std::vector<Tolerance> tol = output_tolerances(g);
  const double tenth = static_cast<double>(0.1f);
  expect_near_exact("sum of 1e9 x 0.1", out[0], {1e9 * tenth}, tol[0]);
  expect_near_exact("mean of 1e9 x 0.1", out[1], {tenth}, tol[1]);
  expect_near_exact("sum of 2.5e7 ones", out[2], {25000000.0}, tol[2]);
  expect_near_exact("mean of 2.5e7 ones", out[3], {1.0}, tol[3]);
  expect_near_exact("column sums of 2.5e7 rows", out[4], {25000000.0, 25000000.0, 25000000.0},
                    tol[4]);
  expect_near_exact("sums over two loops of 2.5e7", out[5], {25000000.0, 25000000.0}, tol[5]);
  // Sums of ones are exact: blocks of ones are, and so is folding them in.
  EXPECT_EQ(out[2].get_flat(0), 25000000.0);
  EXPECT_EQ(out[4].get_flat(2), 25000000.0);
}

// Overflow, NaN, signed zeros and empty sums: compiled code and oracle agree with PyTorch
// (eager/interpreter.h). compare() treats -0.0 and +0.0 as equal, so signs are checked apart.
TEST_P(Numerics, CornerCasesAgreeWithTheOracle) {
  const double inf = std::numeric_limits<double>::infinity();
  const Case c = make_case(
      "corners", R"(
def corners(big: f32[3], with_nan: f32[37], zeros: f32[20], none: f32[0]):
    mb = mean(big)
    sb = sum(big)
    sn = sum(with_nan)
    xn = amax(with_nan)
    nn = amin(with_nan)
    sz = sum(zeros)
    xz = amax(zeros)
    nz = amin(zeros)
    se = sum(none)
    me = mean(none)
    return mb, sb, sn, xn, nn, sz, xz, nz, se, me
)",
      {make_f32({3}, {3e38, 3e38, 3e38}), random_f32({37}, 3),
       make_f32({20}, std::vector<double>(20, -0.0)), Tensor::empty(DType::Float32, {0})});
  c.inputs[1].set({30}, std::nan(""));
  const std::vector<Tensor> out = run_and_check(c, compile_one(c.graph));
  if (out.empty()) return;
  EXPECT_EQ(out[0].get({}), inf);  // the float sum overflows, so does the mean
  EXPECT_EQ(out[1].get({}), inf);
  for (int k : {2, 3, 4}) EXPECT_TRUE(std::isnan(out[static_cast<size_t>(k)].get({}))) << k;
  EXPECT_FALSE(std::signbit(out[5].get({})));  // sums start at +0
  EXPECT_TRUE(std::signbit(out[6].get({})));
  EXPECT_TRUE(std::signbit(out[7].get({})));
  EXPECT_EQ(out[8].get({}), 0.0);
  EXPECT_TRUE(std::isnan(out[9].get({})));
}

// The thread count is a run-time argument: any count works, more threads than at compile
// time (the split reduction's partials) or than cores included; negative counts are errors.
TEST_P(Numerics, AnyRunTimeThreadCount) {
  const Case c = make_case("threads", R"(
def threads(x: f32[1000, 1003], y: f32[300, 45]):
    s = sum(x)
    m = amax(x)
    n = amin(x)
    col = sum(y, dim=[0])
    mx = amax(y, dim=[-1], keepdim=True)
    d = sub(y, mx)
    e = exp(d)
    se = sum(e, dim=[-1], keepdim=True)
    z = div(e, se)
    return s, m, n, col, z
)",
                           {random_f32({1000, 1003}, 5), random_f32({300, 45}, 6)});
  const CompiledGraph compiled = compile_one(c.graph);
  bool split = false;
  for (const auto& kernel : compiled.compilation().module.kernels) {
    for (const auto& loop : kernel.loops) {
      for (const auto& form : loop.nest_forms) {
        split |= form.find("split across threads") != std::string::npos;
      }
    }
  }
  EXPECT_EQ(split, threads() > 1);
  if (!runnable()) return;
  for (int run_threads : {1, 2, 3, 4, 8, 33, 5000}) {
    SCOPED_TRACE("run with " + std::to_string(run_threads) + " threads");
    expect_matches_oracle(c.name, c.graph, c.inputs,
                          compiled.run(c.inputs, RunOptions{run_threads}));
  }
  EXPECT_THROW(compiled.run(c.inputs, RunOptions{-1}), InputError);
}

INSTANTIATE_TEST_SUITE_P(Levels, Numerics, all_params(), param_name);

}  // namespace
}  // namespace stax::codegen_test
