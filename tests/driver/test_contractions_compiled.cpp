// Compiled matrix products (issue 14) against the eager oracle: mm, bmm, addmm and baddbmm in
// every dtype, through the machine's library where it computes them and as Stax loop nests
// (CompileOptions::external_libraries = false, and the dtypes no library has), with operands
// transposed, sliced and broadcast over the batch, biases of every broadcast shape, alpha and
// beta, empty dimensions, sizes that reach the library's parallel path, 1 and 2 threads. Many
// cases share one graph, so each dtype costs one compile per configuration.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "driver/compiler.h"
#include "driver/external_calls.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "expect_outputs_match.h"
#include "ir/graph.h"

namespace stax {
namespace {

// The cases over inputs of dtype `t`. `float_only`: alpha/beta that are not integers.
std::string contraction_program(const std::string& t, bool floating) {
  const std::string alpha = floating ? "0.5" : "2";
  const std::string beta = floating ? "-1.5" : "3";
  return "def f(a: " + t + "[33, 40], w: " + t + "[24, 40], b: " + t + "[40, 24], bias: " + t +
         "[24], c: " + t + "[33, 24], col: " + t + "[33, 1], x: " + t + "[3, 17, 40], y: " + t +
         "[3, 40, 9], z: " + t + "[3, 9, 40], bb: " + t + "[9], big: " + t +
         "[256, 384], wb: " + t + "[384, 384], e: " + t + "[33, 0], e2: " + t +
         "[0, 24], e3: " + t + "[0, 40], x1: " + t + "[1, 17, 40]):\n" +
         // mm: plain, a transposed weight (a layout, not a copy), a sliced operand.
         "    m1 = mm(a, b)\n"
         "    wt = permute(w, [1, 0])\n"
         "    m2 = mm(a, wt)\n"
         "    asl = slice(a, 1, 0, 40, 2)\n"
         "    bsl = slice(b, 0, 0, 40, 2)\n"
         "    m3 = mm(asl, bsl)\n"
         // addmm: a row bias (a linear layer), a full bias, a column bias, alpha and beta.
         "    l1 = addmm(bias, a, wt)\n"
         "    l2 = addmm(c, a, b, beta=" +
         beta + ", alpha=" + alpha +
         ")\n"
         "    l3 = addmm(col, a, wt, beta=" +
         beta +
         ")\n"
         // A composed operand (stored before the call) and an epilogue after it.
         "    na = neg(a)\n"
         "    l4 = addmm(bias, na, b, alpha=" +
         alpha +
         ")\n"
         "    r4 = relu(l4)\n"
         // bmm and baddbmm: plain, a transposed batch operand, a broadcast bias.
         "    k1 = bmm(x, y)\n"
         "    zt = permute(z, [0, 2, 1])\n"
         "    k2 = bmm(x, zt)\n"
         "    k3 = baddbmm(bb, x, y, beta=" +
         beta + ", alpha=" + alpha +
         ")\n"
         // A batch operand broadcast over the batch (stride 0), passed as such.
         "    xe = expand(x1, [3, 17, 40])\n"
         "    k4 = bmm(xe, y)\n"
         // Large enough for the library's parallel path.
         "    g1 = mm(big, wb)\n"
         // K == 0 (a bias or zeros) and M == 0 (an empty output).
         "    z1 = addmm(bias, e, e2, beta=" +
         beta +
         ")\n"
         "    z2 = mm(e3, b)\n" +
         "    return m1, m2, m3, l1, l2, l3, r4, k1, k2, k3, k4, g1, z1, z2\n";
}

std::vector<Tensor> contraction_inputs(DType dtype) {
  const std::vector<std::vector<int64_t>> sizes = {
      {33, 40},   {24, 40}, {40, 24},   {24},       {33, 24}, {33, 1}, {3, 17, 40}, {3, 40, 9},
      {3, 9, 40}, {9},      {256, 384}, {384, 384}, {33, 0},  {0, 24}, {0, 40},     {1, 17, 40}};
  std::vector<Tensor> inputs;
  uint64_t seed = 7;
  for (const auto& s : sizes) inputs.push_back(eager::random_tensor(dtype, s, seed++));
  return inputs;
}

int count_external_calls(const CompiledGraph& c) {
  return static_cast<int>(c.compilation().module.externals.size());
}

class CompiledContractions : public ::testing::TestWithParam<DType> {};

TEST_P(CompiledContractions, MatchEagerThroughTheLibraryAndAsLoopNests) {
  const DType dtype = GetParam();
  const std::string t(dtype_name(dtype));
  const ir::Graph g = ir::parse_graph(contraction_program(t, is_floating(dtype)));
  const std::vector<Tensor> inputs = contraction_inputs(dtype);
  const std::vector<Tensor> expected = eager::run(g, inputs);
  const runtime::SimdLevel simd = runtime::detect_simd_level();
  for (bool library : {true, false}) {
    CompileOptions o;
    o.simd = simd;
    o.num_threads = 2;
    o.external_libraries = library;
    const CompiledGraph compiled = compile(g, o);
    // float32 and bfloat16 products are library calls where the library is asked; the
    // others never are (no library here computes them).
    const bool library_dtype = dtype == DType::Float32 || dtype == DType::BFloat16;
    if (library && library_dtype) {
      EXPECT_EQ(count_external_calls(compiled), 14) << t;
    } else {
      EXPECT_EQ(count_external_calls(compiled), 0) << t;
    }
    for (int threads : {1, 2}) {
      RunOptions r;
      r.num_threads = threads;
      expect_outputs_match(
          g, compiled.run(inputs, r), expected,
          t + (library ? " library" : " loop nests") + ", " + std::to_string(threads) + " threads");
    }
  }
}

// alpha == 0 with an infinite factor: eager's float32 and float64 addmm and its baddbmm of 400
// or more products per matrix skip the product (beta * bias), its smaller baddbmm and every
// 16-bit product compute 0 * inf = NaN (torch 2.13.0, lower_contraction.cpp). The same
// through the library (on every CPU: a GEMM-based kernel would skip a zero-scaled product) and
// as loop nests.
TEST_P(CompiledContractions, AlphaZeroSkipsTheProductWhereEagerDoes) {
  const DType dtype = GetParam();
  if (!is_floating(dtype)) return;  // an integer product has no inf to lose
  const std::string t(dtype_name(dtype));
  const ir::Graph g = ir::parse_graph(
      "def f(c: " + t + "[8, 8], a: " + t + "[8, 8], b: " + t + "[8, 8], s: " + t +
      "[2, 3, 4], x: " + t + "[2, 3, 5], y: " + t + "[2, 5, 4], sl: " + t + "[2, 8, 8], xl: " + t +
      "[2, 8, 8], yl: " + t + "[2, 8, 8]):\n" +
      "    l = addmm(c, a, b, beta=0.5, alpha=0)\n"
      "    small = baddbmm(s, x, y, beta=0.5, alpha=0)\n"     // 3 * 4 * 5 = 60 products
      "    large = baddbmm(sl, xl, yl, beta=0.5, alpha=0)\n"  // 8 * 8 * 8 = 512
      "    return l, small, large\n");
  std::vector<Tensor> inputs;
  uint64_t seed = 3;
  for (ir::ValueRef in : g.inputs()) {
    inputs.push_back(eager::random_tensor(dtype, g.value(in).type.sizes, seed++));
  }
  for (size_t infinite : {1, 4, 7}) {  // a, x, xl
    for (int64_t p = 0; p < inputs[infinite].numel(); ++p) {
      inputs[infinite].set_flat(p, std::numeric_limits<double>::infinity());
    }
  }
  const bool blas_rule = dtype == DType::Float32 || dtype == DType::Float64;
  for (bool library : {true, false}) {
    CompileOptions o;
    o.num_threads = 2;
    o.external_libraries = library;
    const CompiledGraph compiled = compile(g, o);
    for (int threads : {1, 2}) {
      RunOptions r;
      r.num_threads = threads;
      const std::vector<Tensor> out = compiled.run(inputs, r);
      const std::string where =
          t + (library ? " library" : " loop nests") + ", " + std::to_string(threads) + " threads";
      // Output, its bias, and whether eager skips the product there.
      const std::tuple<size_t, size_t, bool> cases[] = {
          {0, 0, blas_rule}, {1, 3, false}, {2, 6, blas_rule}};
      for (const auto& [k, bias, skips] : cases) {
        for (int64_t p = 0; p < out[k].numel(); ++p) {
          const double got = out[k].get_flat(p);
          if (skips) {
            // beta * bias, rounded to the dtype (0.5 * x is exact in every float dtype here).
            EXPECT_EQ(got, 0.5 * inputs[bias].get_flat(p)) << where << ", output " << k;
          } else {
            EXPECT_TRUE(std::isnan(got)) << where << ", output " << k << ": " << got;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CompiledContractions,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16,
                                           DType::Float64, DType::Int32, DType::Int64,
                                           DType::UInt8),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Operands passed to the library as layouts: a transposed weight and a sliced matrix are read
// in place (no copy buffer), a composed operand is stored once; explain names the calls.
TEST(ExternalCalls, OperandsAreLayoutsAndOnlyComposedOperandsAreStored) {
  const ir::Graph g = ir::parse_graph(
      "def f(a: f32[32, 64], w: f32[48, 64], b: f32[48]):\n"
      "    wt = permute(w, [1, 0])\n    y = addmm(b, a, wt)\n"
      "    n = neg(a)\n    s = slice(n, 0, 0, 32, 2)\n    z = mm(s, wt)\n    return y, z\n");
  const auto c = analyze(g);
  ASSERT_EQ(c->module.externals.size(), 2u);
  // Step 5 runs the mm first (the neg's buffer is then freed before y is allocated).
  const size_t addmm = c->module.externals[0].call->op == "addmm" ? 0 : 1;
  const lowering::ExternalCall& first = *c->module.externals[addmm].call;
  EXPECT_EQ(first.b.buffer, "w");
  EXPECT_EQ(first.b.strides, index::to_exprs({1, 64}));
  ASSERT_TRUE(first.bias.has_value());
  EXPECT_EQ(first.bias->strides, index::to_exprs({0, 1}));
  // The slice of a composed neg is stored contiguously, then read by the library.
  const lowering::ExternalCall& second = *c->module.externals[1 - addmm].call;
  EXPECT_EQ(second.op, "mm");
  EXPECT_NE(second.a.buffer, "a");
  EXPECT_EQ(second.a.strides, index::to_exprs({64, 1}));
}

// A failing library call is an exception naming the op, never a crash: here a plan for one
// thread count run with another builds a new primitive, which succeeds; an input of the wrong
// size is refused before any call.
TEST(ExternalCalls, WrongInputsAreRefusedBeforeTheCall) {
  const ir::Graph g =
      ir::parse_graph("def f(a: f32[8, 16], b: f32[16, 4]):\n    c = mm(a, b)\n    return c\n");
  CompileOptions o;
  o.num_threads = 1;
  const CompiledGraph compiled = compile(g, o);
  const std::vector<Tensor> good = {eager::random_tensor(DType::Float32, {8, 16}, 1),
                                    eager::random_tensor(DType::Float32, {16, 4}, 2)};
  RunOptions r;
  r.num_threads = 2;
  expect_outputs_match(g, compiled.run(good, r), eager::run(g, good), "2 threads");
  const std::vector<Tensor> bad = {eager::random_tensor(DType::Float32, {8, 15}, 1), good[1]};
  EXPECT_THROW(compiled.run(bad), InputError);
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// Epilogue fusion through the library (issue 14, point 3): in float32 the chains oneDNN applies
// as eager computes them run inside the call; gelu (which it does not) and bfloat16 (where
// eager rounds the product first) stay loops. Every result matches eager.
TEST(ExternalCalls, EpiloguesRunInsideTheCallWhereTheLibraryMatchesEager) {
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    const std::string t(dtype_name(dtype));
    const ir::Graph g =
        ir::parse_graph("def f(a: " + t + "[64, 96], w: " + t + "[80, 96], b: " + t +
                        "[80], x: " + t + "[4, 64, 96], y: " + t +
                        "[4, 96, 32]):\n"
                        "    wt = permute(w, [1, 0])\n"
                        "    l1 = addmm(b, a, wt)\n    e1 = tanh(l1)\n"
                        "    l2 = addmm(b, a, wt)\n    m2 = mul(l2, 0.5)\n    e2 = add(m2, 1.0)\n"
                        "    l3 = mm(a, wt)\n    a3 = abs(l3)\n    e3 = sqrt(a3)\n"
                        "    k4 = bmm(x, y)\n    e4 = sub(k4, 0.25)\n"
                        "    l5 = addmm(b, a, wt)\n    e5 = gelu(l5)\n"
                        "    return e1, e2, e3, e4, e5\n");
    std::vector<Tensor> inputs;
    uint64_t seed = 3;
    for (const auto& sizes :
         std::vector<std::vector<int64_t>>{{64, 96}, {80, 96}, {80}, {4, 64, 96}, {4, 96, 32}}) {
      inputs.push_back(eager::random_tensor(dtype, sizes, seed++));
    }
    CompileOptions o;
    o.num_threads = 2;
    const CompiledGraph compiled = compile(g, o);
    int with_epilogue = 0;
    for (const auto& site : compiled.compilation().module.externals) {
      with_epilogue += site.epilogue.empty() ? 0 : 1;
    }
    EXPECT_EQ(with_epilogue, dtype == DType::Float32 ? 4 : 0) << t;
    expect_outputs_match(g, compiled.run(inputs), eager::run(g, inputs), t + " epilogues");
  }
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// A plan the library cannot build is an exception naming the graph node and the shapes, raised
// when the program is loaded, never a crash; so is a call through a site that has no plan.
TEST(ExternalCalls, ALibraryFailureNamesTheOpAndItsShapes) {
  auto call = std::make_shared<lowering::ExternalCall>();
  call->op = "mm";
  call->a = {"a", true, DType::Float16, {4, 8}, {8, 1}, 0};
  call->b = {"b", true, DType::Float16, {8, 2}, {2, 1}, 0};
  program::ExternalSite site;
  site.output = "buf0";
  site.call = call;
  site.output_sizes = {4, 2};
  site.output_strides = {2, 1};
  site.dtype = DType::Float16;
  site.source = "mm 'c' at f.stax:2";
  try {
    driver::ExternalPlans plans({site}, 1);
    ADD_FAILURE() << "a float16 plan was built";
  } catch (const external::LibraryError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("mm 'c' at f.stax:2"), std::string::npos) << what;
    EXPECT_NE(what.find("4x8"), std::string::npos) << what;
  }
  const driver::ExternalPlans none({}, 1);
  char err[256] = {0};
  const void* operands[2] = {nullptr, nullptr};
  // The wrapper's status for a library failure (the wrapper returns it as it is).
  EXPECT_EQ(driver::ExternalPlans::call(const_cast<driver::ExternalPlans*>(&none), 0, nullptr,
                                        operands, nullptr, 1, err, sizeof err),
            program::kStatusExternalError);
  EXPECT_NE(std::string(err).find("no plan for external call site 0"), std::string::npos) << err;
}

}  // namespace
}  // namespace stax
