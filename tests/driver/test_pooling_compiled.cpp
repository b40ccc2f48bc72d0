// Compiled pooling (max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d as Stax loop
// nests) against the eager oracle: one graph of pooling cases per dtype (ResNet's stem pool,
// NaNs and infinities, windows of nothing but -inf with padding and dilation, ceil_mode,
// count_include_pad, divisor_override, uneven and global adaptive windows, a channels-last
// input read in place, a computed input, a 3-D input, odd sizes for vector tails, empty
// results, and a size that reaches the parallel paths with a fused reader after it), at every
// SIMD level this CPU runs, 1 and 2 threads. Max pooling's values and indices must equal
// eager's exactly (NaN rule, tie rule, the first position inside the input); the averages are
// within the tolerance of their window sums (driver/tolerance.h).
// The backward ops likewise (max_pool2d_with_indices_backward, avg_pool2d_backward,
// _adaptive_avg_pool2d_backward: a gather per input element over the window offsets, or for
// max pooling along a row-major W with a stride above 1 eager's scatter-add of grad_output at
// the indices in Stax's runtime), over
// overlapping windows (3x3 stride 2), odd sizes, padding, dilation, ceil_mode, the divisor
// rules, uneven, global and upsampling adaptive windows, channels-last operands, computed
// gradients, empty batches and parallel sizes: gradients of windows of up to 64 offsets equal
// eager's bit for bit (the same additions in the same order and roundings); larger windows
// (9x9) are a Sum reduction within the tolerance of their sums.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/compiler.h"
#include "eager/interpreter.h"
#include "eager/ops.h"
#include "eager/tensor_io.h"
#include "eager_test_util.h"
#include "expect_outputs_match.h"
#include "ir/graph.h"
#include "pooling_torch_cases.h"
#include "runtime/simd.h"

namespace stax {
namespace {

// The program for dtype `t`: max pooling for every dtype, avg_pool2d for floating dtypes and
// i64, _adaptive_avg_pool2d for floating dtypes (what eager implements).
std::string pooling_program(DType dtype) {
  const std::string t(dtype_name(dtype));
  const bool avg = is_floating(dtype) || dtype == DType::Int64;
  const bool adaptive = is_floating(dtype);
  std::string p = "def f(x: " + t + "[2, 6, 13, 11], xn: " + t + "[2, 4, 9, 10], xi: " + t +
                  "[1, 3, 8, 9], cl: " + t + "[2, 6, 13, 11] strides=[858, 1, 66, 6], x3: " + t +
                  "[5, 17, 15], big: " + t + "[2, 32, 57, 57], e: " + t + "[0, 6, 13, 11]):\n";
  // ResNet's stem pool (ties: dyadic values); NaNs and infinities; windows of only -inf,
  // padded and dilated, under ceil_mode; a channels-last input; a computed input; 3-D.
  p += "    v1, i1 = max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])\n"
       "    v2, i2 = max_pool2d_with_indices(xn, [3, 2], [1, 2], [1, 1])\n"
       "    v3, i3 = max_pool2d_with_indices(xi, [3, 2], [2, 1], [1, 1], [2, 3], True)\n"
       "    v4, i4 = max_pool2d_with_indices(cl, [2, 3], [2, 2], [1, 1], [1, 1], True)\n"
       "    r = abs(x)\n"
       "    v5, i5 = max_pool2d_with_indices(r, 3, 2, 1)\n"
       "    v6, i6 = max_pool2d_with_indices(x3, [2, 3], [1, 2])\n"
       "    vb, ib = max_pool2d_with_indices(big, 3, 2, 1)\n"
       "    ve, ie = max_pool2d_with_indices(e, 2)\n";
  std::string outputs = "v1, i1, v2, i2, v3, i3, v4, i4, v5, i5, v6, i6, vb, ib, ve, ie";
  if (avg) {
    p += "    a1 = avg_pool2d(x, [3, 3], [2, 2], [1, 1])\n"
         "    a2 = avg_pool2d(cl, [3, 2], [2, 3], [1, 1], True, False)\n"
         "    a3 = avg_pool2d(x3, [4, 4], [3, 3], [2, 2], True, True)\n"
         "    a4 = avg_pool2d(xn, [2, 3], [1, 2], [1, 1], True, True, -5)\n"
         "    a5 = avg_pool2d(big, 3, 2, 1, False, False)\n"
         "    a6 = neg(a5)\n"
         "    ae = avg_pool2d(e, 2)\n";
    outputs += ", a1, a2, a3, a4, a6, ae";
  }
  if (adaptive) {
    p += "    d1 = _adaptive_avg_pool2d(x, [4, 5])\n"
         "    d2 = _adaptive_avg_pool2d(cl, [1, 1])\n"
         "    d3 = _adaptive_avg_pool2d(x3, [7, 9])\n"
         "    d4 = _adaptive_avg_pool2d(x, [19, 3])\n"
         "    d5 = _adaptive_avg_pool2d(big, [7, 7])\n"
         "    de = _adaptive_avg_pool2d(x, [0, 3])\n";
    outputs += ", d1, d2, d3, d4, d5, de";
  }
  return p + "    return " + outputs + "\n";
}

// Inputs drawn as the eager golden cases draw theirs (pooling_torch_cases.h): ties for x and
// cl, NaNs and infinities for xn, mostly -inf for xi, rounding sums for big and for the
// gradients g* (integers: small values for all).
std::vector<Tensor> pooling_inputs(const ir::Graph& g) {
  std::vector<Tensor> inputs;
  uint64_t seed = 5;
  for (ir::ValueRef in : g.inputs()) {
    const ir::Value& v = g.value(in);
    const ir::TensorType& type = v.type;
    std::string kind = v.name == "xn" ? "coarse" : v.name == "xi" ? "neginf" : "dyadic";
    if (v.name == "big" || v.name[0] == 'g') kind = "positive";
    if (!is_floating(type.dtype)) kind = "int";
    Tensor t = Tensor::empty_strided(type.dtype, type.sizes, type.strides);
    for (int64_t p = 0; p < t.numel(); ++p) {
      const eager::testing::OperandValue x =
          eager::testing::pooling_value(kind, seed, static_cast<uint64_t>(p));
      const std::vector<int64_t> index = unravel_index(p, type.sizes);
      if (x.is_int) {
        eager::detail::store_int(t, index, x.i);
      } else {
        t.set(index, x.f);
      }
    }
    inputs.push_back(t);
    ++seed;
  }
  return inputs;
}

class CompiledPooling : public ::testing::TestWithParam<DType> {};

TEST_P(CompiledPooling, MatchesEagerAtEverySimdLevelAndThreadCount) {
  const DType dtype = GetParam();
  const std::string t(dtype_name(dtype));
  const ir::Graph g = ir::parse_graph(pooling_program(dtype));
  const std::vector<Tensor> inputs = pooling_inputs(g);
  const std::vector<Tensor> expected = eager::run(g, inputs);
  for (runtime::SimdLevel simd : runtime::runnable_simd_levels()) {
    CompileOptions o;
    o.simd = simd;
    o.num_threads = 2;
    const CompiledGraph compiled = compile(g, o);
    // Loop nests only: no library computes pooling.
    EXPECT_EQ(compiled.compilation().module.externals.size(), 0u);
    for (int threads : {1, 2}) {
      RunOptions r;
      r.num_threads = threads;
      const std::string where = t + ", simd " + std::string(runtime::simd_level_name(simd)) + ", " +
                                std::to_string(threads) + " threads";
      const std::vector<Tensor> actual = compiled.run(inputs, r);
      expect_outputs_match(g, actual, expected, where);
      // Max pooling is exact: the same maxima and the same indices.
      for (size_t k = 0; k < actual.size(); ++k) {
        const std::string name = g.value(g.outputs()[k]).name;
        if (name[0] != 'v' && name[0] != 'i') continue;
        EXPECT_TRUE(eager::compare(actual[k], expected[k], 0, 0).within_tolerance)
            << where << ", output " << name;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CompiledPooling,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16,
                                           DType::Float64, DType::Int64, DType::Int8, DType::UInt8),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// The backward program for dtype `t` (floating dtypes: all three ops; i64: avg_pool2d_backward,
// the only one eager implements for it). Gradients are inputs (g*, channels last for gc) or
// the forward's own results (computed operands; their sums of few elements are eager's bit for
// bit, as a gradient must be to give eager's result exactly). Outputs named l* have windows of more
// than 64 offsets (a Sum reduction); the others must equal eager's exactly.
std::string pooling_backward_program(DType dtype) {
  const std::string t(dtype_name(dtype));
  std::string p = "def f(x: " + t + "[2, 6, 13, 11], g1: " + t + "[2, 6, 7, 6], cl: " + t +
                  "[2, 6, 13, 11] strides=[858, 1, 66, 6], gc: " + t +
                  "[2, 6, 7, 6] strides=[252, 1, 36, 6], x3: " + t + "[5, 17, 15], xn: " + t +
                  "[2, 4, 9, 10], big: " + t + "[2, 32, 57, 57], gb: " + t +
                  "[2, 32, 29, 29], g7: " + t + "[2, 32, 7, 7], e: " + t + "[0, 6, 13, 11]):\n";
  std::string outputs;
  if (is_floating(dtype)) {
    // ResNet's stem pool (overlapping 3x3 windows, stride 2; ties from dyadic inputs);
    // channels-last operands; dilation and ceil_mode over a 3-D input with its own maxima as
    // the gradient; a parallel size; a 9x9 window (stride 1 along W: the gather); an empty
    // batch.
    p += "    v1, i1 = max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])\n"
         "    m1 = max_pool2d_with_indices_backward(g1, x, [3, 3], [2, 2], [1, 1], [1, 1], False, "
         "i1)\n"
         "    v2, i2 = max_pool2d_with_indices(cl, 3, 2, 1)\n"
         "    m2 = max_pool2d_with_indices_backward(gc, cl, [3, 3], [2, 2], [1, 1], [1, 1], "
         "False, i2)\n"
         "    v3, i3 = max_pool2d_with_indices(x3, [3, 2], [2, 1], [1, 1], [2, 3], True)\n"
         "    m3 = max_pool2d_with_indices_backward(v3, x3, [3, 2], [2, 1], [1, 1], [2, 3], True, "
         "i3)\n"
         "    vb, ib = max_pool2d_with_indices(big, 3, 2, 1)\n"
         "    mb = max_pool2d_with_indices_backward(gb, big, [3, 3], [2, 2], [1, 1], [1, 1], "
         "False, ib)\n"
         "    vl, il = max_pool2d_with_indices(x, 9, [2, 1], 4)\n"
         "    lm = max_pool2d_with_indices_backward(vl, x, [9, 9], [2, 1], [4, 4], [1, 1], False, "
         "il)\n"
         "    ve, ie = max_pool2d_with_indices(e, 2)\n"
         "    me = max_pool2d_with_indices_backward(ve, e, [2, 2], [2, 2], [0, 0], [1, 1], False, "
         "ie)\n";
    outputs += "m1, m2, m3, mb, lm, me, ";
  }
  // count_include_pad's divisor, channels last; without it under ceil_mode; a negative
  // divisor_override; a parallel size; a 9x9 window.
  p += "    a1 = avg_pool2d_backward(g1, x, [3, 3], [2, 2], [1, 1], False, True, None)\n"
       "    a2 = avg_pool2d_backward(gc, cl, [3, 3], [2, 2], [1, 1], False, True, None)\n"
       "    f3 = avg_pool2d(cl, [3, 2], [2, 3], [1, 1], True, False)\n"
       "    a3 = avg_pool2d_backward(f3, cl, [3, 2], [2, 3], [1, 1], True, False, None)\n"
       "    f4 = avg_pool2d(x3, [4, 4], [3, 3], [2, 2], True, True)\n"
       "    a4 = avg_pool2d_backward(f4, x3, [4, 4], [3, 3], [2, 2], True, True, None)\n"
       "    f5 = avg_pool2d(xn, [2, 3], [1, 2], [1, 1], True, True, -5)\n"
       "    a5 = avg_pool2d_backward(f5, xn, [2, 3], [1, 2], [1, 1], True, True, -5)\n"
       "    ab = avg_pool2d_backward(gb, big, [3, 3], [2, 2], [1, 1], False, False, None)\n"
       "    la = avg_pool2d_backward(g1, x, [9, 9], [2, 2], [4, 4], False, True, None)\n";
  outputs += "a1, a2, a3, a4, a5, ab, la";
  if (is_floating(dtype)) {
    // Uneven, global (channels last), upsampling and 3-D adaptive windows; an empty batch.
    p += "    d1 = _adaptive_avg_pool2d(x, [4, 5])\n"
         "    b1 = _adaptive_avg_pool2d_backward(d1, x)\n"
         "    d2 = _adaptive_avg_pool2d(cl, [1, 1])\n"
         "    b2 = _adaptive_avg_pool2d_backward(d2, cl)\n"
         "    d3 = _adaptive_avg_pool2d(x3, [7, 9])\n"
         "    b3 = _adaptive_avg_pool2d_backward(d3, x3)\n"
         "    d4 = _adaptive_avg_pool2d(x, [19, 3])\n"
         "    b4 = _adaptive_avg_pool2d_backward(d4, x)\n"
         "    b5 = _adaptive_avg_pool2d_backward(g7, big)\n"
         "    de = _adaptive_avg_pool2d(e, [2, 3])\n"
         "    be = _adaptive_avg_pool2d_backward(de, e)\n";
    outputs += ", b1, b2, b3, b4, b5, be";
  }
  return p + "    return " + outputs + "\n";
}

class CompiledPoolingBackward : public ::testing::TestWithParam<DType> {};

TEST_P(CompiledPoolingBackward, MatchesEagerAtEverySimdLevelAndThreadCount) {
  const DType dtype = GetParam();
  const std::string t(dtype_name(dtype));
  const ir::Graph g = ir::parse_graph(pooling_backward_program(dtype));
  const std::vector<Tensor> inputs = pooling_inputs(g);
  const std::vector<Tensor> expected = eager::run(g, inputs);
  for (runtime::SimdLevel simd : runtime::runnable_simd_levels()) {
    CompileOptions o;
    o.simd = simd;
    o.num_threads = 2;
    const CompiledGraph compiled = compile(g, o);
    // m1 and mb (row-major, stride 2 along W) are runtime scatters; the others loop nests.
    EXPECT_EQ(compiled.compilation().module.externals.size(), is_floating(dtype) ? 2u : 0u);
    for (int threads : {1, 2}) {
      RunOptions r;
      r.num_threads = threads;
      const std::string where = t + ", simd " + std::string(runtime::simd_level_name(simd)) + ", " +
                                std::to_string(threads) + " threads";
      const std::vector<Tensor> actual = compiled.run(inputs, r);
      expect_outputs_match(g, actual, expected, where);
      for (size_t k = 0; k < actual.size(); ++k) {
        const std::string name = g.value(g.outputs()[k]).name;
        if (name[0] == 'l') continue;
        EXPECT_TRUE(eager::compare(actual[k], expected[k], 0, 0).within_tolerance)
            << where << ", output " << name << " is not eager's bit for bit";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CompiledPoolingBackward,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16,
                                           DType::Float64, DType::Int64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// The windows of ATen's rules that only show at the edges, each against eager: ceil_mode
// windows past the right padding (avg_pool2d's two divisors), a dilated window holding no
// input position (max pooling's -inf and the position past the padding), and int64 sums that
// wrap divided by a negative divisor.
TEST(CompiledPoolingEdges, ClippedWindowsAndWrappingSums) {
  const ir::Graph g = ir::parse_graph(
      "def f(x: f32[1, 1, 8], y: f32[1, 2, 2], z: i64[1, 6, 6]):\n"
      "    a = avg_pool2d(x, [1, 4], [1, 3], [0, 2], True, True)\n"
      "    b = avg_pool2d(x, [1, 4], [1, 3], [0, 2], True, False)\n"
      "    v, i = max_pool2d_with_indices(y, 2, 1, 1, 3)\n"
      "    c = avg_pool2d(z, [2, 3], [2, 2], [1, 1], False, True, -3)\n"
      "    return a, b, v, i, c\n");
  std::vector<Tensor> inputs = {
      eager::testing::make(DType::Float32, {1, 1, 8}, {1, 2, 3, 4, 5, 6, 7, 9}),
      eager::testing::make(DType::Float32, {1, 2, 2}, {0, 1, 2, 3}),
      Tensor::empty(DType::Int64, {1, 6, 6})};
  for (int64_t p = 0; p < 36; ++p) {
    eager::detail::store_int(inputs[2], unravel_index(p, {1, 6, 6}),
                             eager::testing::pooling_value("wide", 3, static_cast<uint64_t>(p)).i);
  }
  const std::vector<Tensor> expected = eager::run(g, inputs);
  EXPECT_EQ(eager::testing::values(expected[0]), (std::vector<double>{0.75, 3.5, 6.75, 3}));
  EXPECT_EQ(eager::testing::values(expected[1]), (std::vector<double>{1.5, 3.5, 6.75, 9}));
  EXPECT_EQ(eager::testing::int64_values(expected[3]), (std::vector<int64_t>{6}));
  for (runtime::SimdLevel simd : runtime::runnable_simd_levels()) {
    CompileOptions o;
    o.simd = simd;
    const std::vector<Tensor> actual = compile(g, o).run(inputs);
    for (size_t k = 0; k < actual.size(); ++k) {
      EXPECT_TRUE(eager::compare(actual[k], expected[k], 0, 0).within_tolerance)
          << runtime::simd_level_name(simd) << ", output " << k;
    }
    // The int64 averages bit for bit (compare reads them as doubles).
    EXPECT_EQ(eager::testing::int64_values(actual[4]), eager::testing::int64_values(expected[4]));
  }
}

// A channels-last input (stored, or computed from stored channels-last operands) is pooled by
// loops over the channels innermost, its results stored channels last as eager's are, and
// the kernel vectorizes across outputs; a row-major input keeps row-major results.
TEST(CompiledPoolingLayouts, ChannelsLastInputsGiveChannelsLastResults) {
  const ir::Graph g = ir::parse_graph(
      "def f(x: f32[2, 32, 15, 13] strides=[6240, 1, 416, 32], b: f32[32, 1, 1], "
      "y: f32[2, 32, 15, 13]):\n"
      "    v, i = max_pool2d_with_indices(x, 3, 2, 1)\n"
      "    s = mul(x, b)\n"
      "    a = avg_pool2d(s, 2)\n"
      "    w, j = max_pool2d_with_indices(y, 3, 2, 1)\n"
      "    return v, i, a, w\n");
  const auto c = analyze(g);
  const std::vector<lowering::OutputSpec>& outputs = c->lowered.outputs;
  ASSERT_EQ(outputs.size(), 4u);
  // [2, 32, 8, 7] channels last: strides [56 * 32, 1, 7 * 32, 32].
  const std::vector<int64_t> channels_last = {1792, 1, 224, 32};
  EXPECT_EQ(stax::index::static_values(outputs[0].strides, "test"), channels_last);
  EXPECT_EQ(stax::index::static_values(outputs[1].strides, "test"), channels_last);
  EXPECT_EQ(stax::index::static_values(outputs[2].strides, "test"),
            (std::vector<int64_t>{1344, 1, 192, 32}));  // [2, 32, 7, 6]
  EXPECT_EQ(stax::index::static_values(outputs[3].strides, "test"),
            (std::vector<int64_t>{1792, 56, 7, 1}));
  const std::vector<Tensor> inputs = pooling_inputs(g);
  const std::vector<Tensor> expected = eager::run(g, inputs);
  CompileOptions o;
  const std::vector<Tensor> actual = compile(g, o).run(inputs);
  expect_outputs_match(g, actual, expected, "layouts");
  EXPECT_TRUE(eager::compare(actual[0], expected[0], 0, 0).within_tolerance);
  EXPECT_TRUE(eager::compare(actual[1], expected[1], 0, 0).within_tolerance);
}

// A channels-last grad_output gives loops over the channels innermost and a channels-last
// gradient (as eager's); a row-major one a row-major gradient.
TEST(CompiledPoolingLayouts, ChannelsLastGradientsGiveChannelsLastResults) {
  const ir::Graph g = ir::parse_graph(
      "def f(x: f32[2, 32, 15, 13] strides=[6240, 1, 416, 32], "
      "gc: f32[2, 32, 8, 7] strides=[1792, 1, 224, 32], y: f32[2, 32, 15, 13], "
      "g: f32[2, 32, 8, 7]):\n"
      "    v, i = max_pool2d_with_indices(x, 3, 2, 1)\n"
      "    m = max_pool2d_with_indices_backward(gc, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i)\n"
      "    a = avg_pool2d_backward(gc, x, [3, 3], [2, 2], [1, 1], False, True, None)\n"
      "    w, j = max_pool2d_with_indices(y, 3, 2, 1)\n"
      "    n = max_pool2d_with_indices_backward(g, y, [3, 3], [2, 2], [1, 1], [1, 1], False, j)\n"
      "    return m, a, n\n");
  const auto c = analyze(g);
  const std::vector<lowering::OutputSpec>& outputs = c->lowered.outputs;
  ASSERT_EQ(outputs.size(), 3u);
  const std::vector<int64_t> channels_last = {6240, 1, 416, 32};
  EXPECT_EQ(stax::index::static_values(outputs[0].strides, "test"), channels_last);
  EXPECT_EQ(stax::index::static_values(outputs[1].strides, "test"), channels_last);
  EXPECT_EQ(stax::index::static_values(outputs[2].strides, "test"),
            (std::vector<int64_t>{6240, 195, 13, 1}));
  const std::vector<Tensor> inputs = pooling_inputs(g);
  const std::vector<Tensor> expected = eager::run(g, inputs);
  CompileOptions o;
  const std::vector<Tensor> actual = compile(g, o).run(inputs);
  for (size_t k = 0; k < actual.size(); ++k) {
    EXPECT_TRUE(eager::compare(actual[k], expected[k], 0, 0).within_tolerance) << "output " << k;
  }
}

// Max pooling's scatter (row-major, stride 2 along W) adds a gradient at any index of its
// plane, as eager does, even one outside its output's window, in eager's order (bfloat16
// rounds each addition), skips -1 as eager does, and refuses any other index outside the
// plane (eager writes out of bounds there) with an error naming the op, the index and the
// plane.
TEST(CompiledPoolingBackwardScatter, AddsAtAnyIndexOfThePlaneAndRefusesOthers) {
  const ir::Graph g = ir::parse_graph(
      "def f(g: bf16[1, 2, 3, 3], x: bf16[1, 2, 6, 6], i: i64[1, 2, 3, 3]):\n"
      "    m = max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i)\n"
      "    return m\n");
  // Every gradient goes to plane position 35 (the last), outside most outputs' windows: 1
  // first, then eight terms of 2^-8 that bfloat16 rounds away one by one (a float sum keeps
  // them: 1.03125).
  std::vector<double> grads(18, 1.0 / 256), indices(18, 35);
  grads[0] = grads[9] = 1.0;
  // An index of -1 is skipped, as eager skips it (wrapped, its 4 would land on position 35).
  grads[1] = 4.0;
  indices[1] = -1;
  std::vector<Tensor> inputs = {
      eager::testing::make(DType::BFloat16, {1, 2, 3, 3}, grads),
      eager::testing::make(DType::BFloat16, {1, 2, 6, 6}, std::vector<double>(72, 0.0)),
      eager::testing::make(DType::Int64, {1, 2, 3, 3}, indices)};
  const std::vector<Tensor> expected = eager::run(g, inputs);
  std::vector<double> want(72, 0.0);
  want[35] = want[71] = 1.0;
  EXPECT_EQ(eager::testing::values(expected[0]), want);
  for (runtime::SimdLevel simd : runtime::runnable_simd_levels()) {
    CompileOptions o;
    o.simd = simd;
    const CompiledGraph compiled = compile(g, o);
    EXPECT_EQ(compiled.compilation().module.externals.size(), 1u);
    for (int threads : {1, 2}) {
      RunOptions r;
      r.num_threads = threads;
      EXPECT_EQ(eager::testing::values(compiled.run(inputs, r)[0]), want)
          << runtime::simd_level_name(simd) << ", " << threads << " threads";
    }
    std::vector<Tensor> bad = inputs;
    bad[2] = eager::testing::make(DType::Int64, {1, 2, 3, 3}, indices);
    bad[2].set_flat(10, 36);
    try {
      compiled.run(bad);
      ADD_FAILURE() << "an index outside the plane was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("max_pool2d_with_indices_backward: index 36 is "
                                           "outside the input plane of 6x6"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace stax
