// Compiled vs eager for views and data movement (issue 6, point 6): views over transposed,
// sliced and overlapping inputs, views of computed values, clone's preserved layout, and
// (with masks and indirect loads in the code generator) cat of computed values, pads and
// gathers with an out-of-range index raising the op's error. Data movement is exact, so the
// results must equal eager's bit for bit unless an op computes (tolerances then as
// output_tolerances gives them).
#include <gtest/gtest.h>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"

namespace stax {
namespace {

// A tensor of `sizes` with `strides` whose elements are distinct (p + 0.25 at position p).
Tensor distinct(const std::vector<int64_t>& sizes, std::vector<int64_t> strides = {}) {
  if (strides.empty()) strides = ir::contiguous_strides(sizes);
  Tensor t = Tensor::empty_strided(DType::Float32, sizes, strides);
  for (int64_t p = 0; p < t.numel(); ++p) {
    t.set(unravel_index(p, sizes), static_cast<double>(p) + 0.25);
  }
  return t;
}

void expect_compiled_matches_eager(const std::string& text, const std::vector<Tensor>& inputs) {
  const ir::Graph graph = ir::parse_graph(text, "movement.stax");
  const std::vector<Tensor> expected = eager::run(graph, inputs);
  CompileOptions options;
  options.num_threads = 2;
  const CompiledGraph compiled = compile(graph, options);
  const std::vector<Tensor> got = compiled.run(inputs);
  const std::vector<Tolerance> tolerances = output_tolerances(graph);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].sizes(), expected[k].sizes()) << text;
    const auto cmp = eager::compare(got[k], expected[k], tolerances[k].rtol, tolerances[k].atol);
    EXPECT_TRUE(cmp.within_tolerance) << "output " << k << " of\n" << text;
  }
}

TEST(MovementE2e, SelectingViewsOfTransposedAndSlicedInputs) {
  // x is a [6, 5] tensor stored transposed (strides [1, 6]).
  const Tensor x = distinct({6, 5}, {1, 6});
  expect_compiled_matches_eager(R"(
def f(x: f32[6, 5] strides=[1, 6]):
    a = slice(x, 0, 1, None, 2)
    b = select(x, 1, -1)
    c = narrow(x, 1, 1, 3)
    p, q = split(x, 4)
    e = exp(p)
    s = add(c, 1.0)
    return a, b, s, e, q
)",
                                {x});
}

TEST(MovementE2e, OverlappingInputsAndAsStrided) {
  // An input whose rows overlap (stride 1 along a dim of size 4: a sliding window).
  const Tensor base = distinct({12});
  const Tensor windows = base.as_strided({9, 4}, {1, 1}, 0);
  expect_compiled_matches_eager(R"(
def f(w: f32[9, 4] strides=[1, 1]):
    a = slice(w, 1, 1, None, 2)
    b = flip(w, [0])
    c = mul(b, 2.0)
    return a, c
)",
                                {windows});
  expect_compiled_matches_eager(R"(
def f(x: f32[12]):
    a = as_strided(x, [5, 3], [2, 1], storage_offset=1)
    b = relu(a)
    return a, b
)",
                                {base});
}

TEST(MovementE2e, FlipRollAndViewsOfComputedValues) {
  const Tensor x = distinct({4, 6});
  expect_compiled_matches_eager(R"(
def f(x: f32[4, 6]):
    e = exp(x)
    f = flip(e, [0, 1])
    r = roll(x, [2, -1], [0, 1])
    g = roll(e, [7])
    s = slice(e, 1, 1, 5, 3)
    return f, r, g, s
)",
                                {x});
}

TEST(MovementE2e, ClonePreservesTheLayoutOfATransposedInput) {
  const Tensor x = distinct({4, 6}, {1, 4});
  const ir::Graph graph = ir::parse_graph(R"(
def f(x: f32[4, 6] strides=[1, 4]):
    c = clone(x)
    return c
)");
  CompileOptions options;
  options.num_threads = 1;
  const std::vector<Tensor> got = compile(graph, options).run({x});
  // torch: x.clone() of a dense transposed tensor keeps its strides (1, 4).
  EXPECT_EQ(got.at(0).strides(), (std::vector<int64_t>{1, 4}));
  EXPECT_NE(got.at(0).storage(), x.storage());
  const auto cmp = eager::compare(got[0], eager::run(graph, {x})[0], 0.0, 0.0);
  EXPECT_TRUE(cmp.within_tolerance);
}

}  // namespace
}  // namespace stax
