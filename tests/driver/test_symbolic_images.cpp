// Convolutions and poolings over size symbols (issue 33: ResNet at several image sizes, one
// program): the windows' result sizes are expressions (ir::infer_symbolic_sizes), the
// library's convolutions are planned per call at each shape (driver::ExternalPlans), the
// pooling loop nests keep every mask and divisor that some size needs, and channels-last
// intermediates are laid out by expressions. Each graph is compiled once and run at sizes
// around and far from its hints (tails, odd and even sizes, windows that hang over the
// padding or not), at 1 and 2 threads, against the eager interpreter.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "ir/graph.h"
#include "symbolic_expectations.h"

namespace stax {
namespace {

using symbolic_testing::expect_matches_eager;
using symbolic_testing::expect_one_program_matches_eager;

using Values = std::vector<std::map<std::string, int64_t>>;

// Images of s0 x s1 (the hints first, then odd, even, small and large sizes).
const Values kImageSizes = {{{"s0", 20}, {"s1", 17}},
                            {{"s0", 9}, {"s1", 8}},
                            {{"s0", 33}, {"s1", 41}},
                            {{"s0", 8}, {"s1", 64}},
                            {{"s0", 20}, {"s1", 17}}};

// A ResNet stem and block in inference: a strided 7x7 convolution, a per-channel scale and a
// ReLU (stored channels last where the library runs in place so), the stem's max pool with
// its indices, a 3x3 convolution with a residual add, the head's global average, a
// non-uniform adaptive pool, avg_pool2d whose windows hang over the padding (with and without
// the padding counted), and a linear layer.
const char* const kInference =
    "def f(x: f32[2, 3, s0, s1], w1: f32[8, 3, 7, 7], s: f32[8, 1, 1], w2: f32[8, 8, 3, 3], "
    "fc: f32[8, 5]) where s0: [8, 512] hint=20, s1: [8, 512] hint=17:\n"
    "    c1 = convolution(x, w1, None, [2, 2], [3, 3], [1, 1], False, [0, 0], 1)\n"
    "    b1 = mul(c1, s)\n"
    "    r1 = relu(b1)\n"
    "    p, i = max_pool2d_with_indices(r1, [3, 3], [2, 2], [1, 1])\n"
    "    c2 = convolution(p, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
    "    a2 = add(c2, p)\n"
    "    r2 = relu(a2)\n"
    "    g = _adaptive_avg_pool2d(r2, [1, 1])\n"
    "    flat = view(g, [2, 8])\n"
    "    y = mm(flat, fc)\n"
    "    d = _adaptive_avg_pool2d(r2, [3, 2])\n"
    "    v = avg_pool2d(r1, [3, 3], [2, 2], [1, 1], False, False)\n"
    "    u = avg_pool2d(r1, [2, 3], [2, 2], [1, 1], False, True)\n"
    "    return y, i, d, v, u\n";

TEST(SymbolicImages, InferenceRunsOneProgramAtEveryImageSize) {
  expect_one_program_matches_eager(kInference, kImageSizes);
}

// The training step's backward of the same layers: the convolutions' data and weight
// gradients (the library's backward passes), the max pool's gradient through its indices
// (row-major grad_output: the runtime's scatter, whose bound is the plane at each call), the
// global average's, a non-uniform adaptive pool's and the average pools' gradients
// (gathers), and a loop-nest bias gradient. The weights are scaled by about 1/sqrt(fan-in), as a
// model's initialization scales them, so that values stay near 1 through the chain of sums
// (tolerance.h's allowances are relative to sums of terms of one sign).
const char* const kTraining =
    "def f(x: f32[2, 3, s0, s1], v1: f32[8, 3, 7, 7], v2: f32[8, 8, 3, 3]) "
    "where s0: [8, 512] hint=20, s1: [8, 512] hint=17:\n"
    "    w1 = mul(v1, 0.08)\n"
    "    w2 = mul(v2, 0.12)\n"
    "    c1 = convolution(x, w1, None, [2, 2], [3, 3], [1, 1], False, [0, 0], 1)\n"
    "    r1 = relu(c1)\n"
    "    p, i = max_pool2d_with_indices(r1, [3, 3], [2, 2], [1, 1])\n"
    "    c2 = convolution(p, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
    "    g = _adaptive_avg_pool2d(c2, [1, 1])\n"
    "    gg = _adaptive_avg_pool2d_backward(g, c2)\n"
    "    d0, d1, d2 = convolution_backward(gg, p, w2, [8], [1, 1], [1, 1], [1, 1], False, "
    "[0, 0], 1, [True, True, True])\n"
    "    m = max_pool2d_with_indices_backward(d0, r1, [3, 3], [2, 2], [1, 1], [1, 1], False, i)\n"
    "    e0, e1, e2 = convolution_backward(m, x, w1, None, [2, 2], [3, 3], [1, 1], False, "
    "[0, 0], 1, [True, True, False])\n"
    "    v = avg_pool2d(r1, [3, 3], [2, 2], [1, 1], False, False)\n"
    "    gv = avg_pool2d_backward(v, r1, [3, 3], [2, 2], [1, 1], False, False, None)\n"
    "    d = _adaptive_avg_pool2d(x, [3, 2])\n"
    "    gd = _adaptive_avg_pool2d_backward(d, x)\n"
    "    return d1, d2, e0, e1, gv, gd\n";

TEST(SymbolicImages, TrainingRunsOneProgramAtEveryImageSize) {
  expect_one_program_matches_eager(kTraining, kImageSizes);
}

// The batch over a symbol too (a last batch smaller than the others), in bfloat16: the
// library's bf16 convolutions and the pools' opmath.
TEST(SymbolicImages, SymbolicBatchInBFloat16) {
  expect_one_program_matches_eager(
      "def f(x: bf16[s2, 4, s0, s0], w: bf16[6, 4, 3, 3]) "
      "where s0: [6, 256] hint=14, s2: [1, 64] hint=3:\n"
      "    c = convolution(x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)\n"
      "    r = relu(c)\n"
      "    p, i = max_pool2d_with_indices(r, [2, 2], [2, 2])\n"
      "    a = _adaptive_avg_pool2d(r, [1, 1])\n"
      "    return p, i, a\n",
      Values{{{"s0", 14}, {"s2", 3}},
             {{"s0", 6}, {"s2", 1}},
             {{"s0", 31}, {"s2", 5}},
             {{"s0", 64}, {"s2", 2}}});
}

// A max pool with its indices over square images: its output rows of (s0 + 1) // 2 outputs
// run one output per lane along the shared outer loop (kernel_form.cpp), in blocks of eight
// vectors, single vectors and a tail of run-time length. The sizes give rows of 66 (blocks,
// vectors and a tail), 10, 8 (one vector, no tail), 5 and 2 (a tail only) outputs, with the
// hint's 20 among them; inputs with NaNs take the last NaN's index, as eager does.
TEST(SymbolicImages, MaxPoolWithIndicesRowsOfEveryLength) {
  const std::string text =
      "def f(x: f32[2, 3, s0, s0], y: bf16[2, 3, s0, s0]) where s0: [2, 512] hint=40:\n"
      "    m = neg(x)\n"
      "    n = sqrt(m)\n"
      "    c = gt(x, 0.8)\n"
      "    z = where(c, n, x)\n"
      "    v, i = max_pool2d_with_indices(z, [3, 3], [2, 2], [1, 1])\n"
      "    w, j = max_pool2d_with_indices(y, [2, 2], [2, 2])\n"
      "    return v, i, w, j\n";
  std::vector<int64_t> sizes = {40, 131, 20, 16, 9, 3};
  expect_one_program_matches_eager(text, sizes);
}

// The gradient of an adaptive pool over a window's result ((s0 + 1) // 2 positions) would
// divide by that size, which the index algebra does not take: compiled per size, by name.
TEST(SymbolicImages, AdaptivePoolingGradientOverAWindowsResultIsCompiledPerSize) {
  const ir::Graph graph = ir::parse_graph(
      "def f(x: f32[2, 3, s0, s1]) where s0: [8, 512] hint=20, s1: [8, 512] hint=17:\n"
      "    p, i = max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])\n"
      "    d = _adaptive_avg_pool2d(p, [3, 2])\n"
      "    gd = _adaptive_avg_pool2d_backward(d, p)\n"
      "    return gd\n",
      "g.stax");
  const CompiledGraph compiled = compile(graph);
  EXPECT_FALSE(compiled.takes_every_size());
  EXPECT_NE(compiled.per_size_reason().find("a division by that size is not taken yet"),
            std::string::npos)
      << compiled.per_size_reason();
  for (const auto& at : kImageSizes) expect_matches_eager(graph, compiled, at);
}

// A graph whose window fits only for some sizes the symbol's facts allow, or whose input's
// channels are a symbol (equal to the weight's only at the hint), is refused as written, by
// name (the bridge then traces such a region per size).
TEST(SymbolicImages, WindowsThatFitOnlySometimesAreRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"def f(x: f32[2, 3, s0, 9], w: f32[4, 3, 5, 5]) where s0: [2, 64] hint=9:\n"
       "    c = convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
       "    return c\n",
       "a window of 5 over a dim of size s0 fits only for some values"},
      {"def f(x: f32[2, s0, 9, 9], w: f32[4, 3, 3, 3]) where s0: [2, 64] hint=3:\n"
       "    c = convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
       "    return c\n",
       "reads an input whose channels are a size symbol"},
      {"def f(x: f32[2, 3, s0, 9]) where s0: [1, 64] hint=9:\n"
       "    p, i = max_pool2d_with_indices(x, [3, 3], [2, 2])\n"
       "    return p\n",
       "a window of 3 over a dim of size s0 fits only for some values"},
  };
  for (const auto& [text, message] : cases) {
    try {
      ir::parse_graph(text, "g.stax");
      ADD_FAILURE() << "taken: " << text;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace stax
