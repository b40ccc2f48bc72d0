// Lowering of views and data movement (issue 6, point 6) against the eager interpreter: each
// program is lowered and its loop bodies run by the evaluating handler on the same inputs;
// results must equal eager's element for element (data movement is exact), errors must name
// the op and the value. Also what the bodies ask of the handler: masks around cat and pad
// regions, indirect indices for gathers, strided layouts for selecting views.
#include <gtest/gtest.h>

#include "eager/interpreter.h"
#include "ir/graph.h"
#include "lowering/lowering.h"
#include "movement_evaluating_handler.h"
#include "scheduler/recording_handler.h"

namespace stax::lowering {
namespace {

using testing::MovementEvaluatingHandler;

// A tensor of `dtype` with the values 0, 1, 2, ... (or given values) laid out with `strides`.
Tensor iota(DType dtype, const std::vector<int64_t>& sizes, std::vector<int64_t> strides = {},
            const std::vector<double>& values = {}) {
  if (strides.empty()) strides = ir::contiguous_strides(sizes);
  Tensor t = Tensor::empty_strided(dtype, sizes, strides);
  for (int64_t p = 0; p < t.numel(); ++p) {
    t.set(unravel_index(p, sizes),
          values.empty() ? static_cast<double>(p) : values[static_cast<size_t>(p)]);
  }
  return t;
}

std::vector<double> elements(const Tensor& t) {
  std::vector<double> out;
  for (int64_t p = 0; p < t.numel(); ++p) out.push_back(t.get_flat(p));
  return out;
}

// Lowers and evaluates `text`, runs it in eager, and compares every output.
void expect_lowering_matches_eager(const std::string& text, const std::vector<Tensor>& inputs) {
  const ir::Graph graph = ir::parse_graph(text, "movement.stax");
  const std::vector<Tensor> expected = eager::run(graph, inputs);
  const LoweredGraph lowered = lower(graph);
  MovementEvaluatingHandler handler;
  const std::vector<Tensor> got = handler.run(lowered, inputs);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].dtype(), expected[k].dtype()) << text;
    EXPECT_EQ(got[k].sizes(), expected[k].sizes()) << text;
    EXPECT_EQ(elements(got[k]), elements(expected[k])) << "output " << k << " of\n" << text;
  }
}

const Tensor x34 = iota(DType::Float32, {3, 4});
// The same values seen transposed: a [4, 3] input with strides [1, 4].
const Tensor xt = iota(DType::Float32, {4, 3}, {1, 4});
// A [3, 4] input stored column-major.
const Tensor x34t = iota(DType::Float32, {3, 4}, {1, 3});

TEST(LowerMovement, SelectingViewsOverContiguousAndTransposedInputs) {
  for (const char* decl : {"x: f32[3, 4]", "x: f32[3, 4] strides=[1, 3]"}) {
    const Tensor& in = std::string(decl).find("strides") != std::string::npos ? x34t : x34;
    const std::string head = std::string("def f(") + decl + "):\n";
    expect_lowering_matches_eager(head + "    y = slice(x, 1, -2, 100, 1)\n    return y\n", {in});
    expect_lowering_matches_eager(head + "    y = slice(x, 0, None, None, 2)\n    return y\n",
                                  {in});
    expect_lowering_matches_eager(head + "    y = select(x, 1, -1)\n    return y\n", {in});
    expect_lowering_matches_eager(head + "    y = narrow(x, 0, -2, 2)\n    return y\n", {in});
    expect_lowering_matches_eager(
        head + "    a, b = split(x, 2, 1)\n    c = add(a, b)\n    return c, b\n", {in});
    expect_lowering_matches_eager(
        head + "    a, b = split_with_sizes(x, [1, 2])\n    return b, a\n", {in});
  }
}

TEST(LowerMovement, ReshapesMapEachGroupOfDimsOnItsOwn) {
  // Reshapes are index maps per group of dims with equal element counts (size-1 dims, merges,
  // splits, and a regrouping of [2, 3] as [3, 2]); and the operand region of a cat reads a
  // reshaped value at a shifted index (ViT's class token in front of its patches).
  const Tensor x = iota(DType::Float32, {2, 3, 4});
  expect_lowering_matches_eager(R"(
def f(x: f32[2, 3, 4]):
    m = mul(x, 2.0)
    a = view(m, [2, 1, 12, 1])
    b = view(a, [6, 4])
    c = view(m, [3, 2, 4])
    d = view(c, [3, 2, 2, 2])
    e = view(d, [24])
    return b, c, d, e
)",
                                {x});
  expect_lowering_matches_eager(R"(
def f(x: f32[2, 3, 4], cls: f32[1, 1, 3]):
    m = mul(x, 2.0)
    v = view(m, [2, 3, 2, 2])
    w = view(v, [2, 3, 4])
    t = transpose(w, 1, 2)
    e = expand(cls, [2, -1, -1], implicit=False)
    c = cat([e, t], 1)
    return c
)",
                                {x, iota(DType::Float32, {1, 1, 3}, {}, {-1, -2, -3})});
}

TEST(LowerMovement, ViewsOfComputedValuesComposeIndices) {
  // The slice of a computed (unstored) value reads it through the rewritten index.
  expect_lowering_matches_eager(R"(
def f(x: f32[3, 4]):
    m = mul(x, 2.0)
    s = slice(m, 1, 1, None, 2)
    t = select(s, 0, 2)
    return t
)",
                                {x34});
}

TEST(LowerMovement, CatStackOfInputsAndComputedValuesWithPromotion) {
  const Tensor a = iota(DType::Float32, {2, 3});
  const Tensor b = iota(DType::Int64, {1, 3}, {}, {-7, 8, 9});
  const Tensor e = iota(DType::Float32, {0});
  expect_lowering_matches_eager(R"(
def f(a: f32[2, 3], b: i64[1, 3], e: f32[0]):
    m = mul(a, 10.0)
    c = cat([a, e, b, m], 0)
    d = cat([a, m], -1)
    return c, d
)",
                                {a, b, e});
  expect_lowering_matches_eager(R"(
def f(a: f32[2, 3], b: i64[1, 3], e: f32[0]):
    t = transpose(a, 0, 1)
    s = stack([t, t], 1)
    return s
)",
                                {a, b, e});
}

TEST(LowerMovement, PadFlipRoll) {
  const Tensor i = iota(DType::Int32, {2, 3});
  expect_lowering_matches_eager(R"(
def f(x: f32[4, 3] strides=[1, 4], i: i32[2, 3]):
    p = constant_pad_nd(x, [2, -1, -1, 1], -1.5)
    q = constant_pad_nd(i, [1, 1], 2.9)
    r = constant_pad_nd(x, [-1, 0, 0, -2])
    return p, q, r
)",
                                {xt, i});
  expect_lowering_matches_eager(R"(
def f(x: f32[4, 3] strides=[1, 4]):
    a = flip(x, [0, -1])
    b = roll(x, [1, -4], [0, 1])
    c = roll(x, [5])
    return a, b, c
)",
                                {xt});
}

TEST(LowerMovement, IndirectLoadsMatchEager) {
  // Only index.Tensor takes negative indices (wrapped once); the others take [0, size).
  const Tensor w = iota(DType::Float32, {4, 2});
  const Tensor idx = iota(DType::Int64, {2, 2}, {}, {3, 0, 0, 1});
  const Tensor idx1 = iota(DType::Int32, {3}, {}, {2, 3, 0});
  const Tensor idx2 = iota(DType::Int32, {3}, {}, {2, -1, -4});
  expect_lowering_matches_eager(R"(
def f(w: f32[4, 2], idx: i64[2, 2], j: i32[3], k: i32[3]):
    e = embedding(w, idx)
    s = index_select(w, 0, j)
    t = transpose(w, 0, 1)
    g = index(t, [None, k])
    m = mul(w, 2.0)
    h = gather(m, 0, idx)
    return e, s, g, h
)",
                                {w, idx, idx1, idx2});
}

TEST(LowerMovement, OutOfRangeIndexNamesTheOpAndTheValue) {
  const ir::Graph graph = ir::parse_graph(R"(
def f(w: f32[3, 2], idx: i64[2, 1]):
    g = gather(w, 1, idx)
    return g
)",
                                          "g.stax");
  const Tensor w = iota(DType::Float32, {3, 2});
  const Tensor idx = iota(DType::Int64, {2, 1}, {}, {1, 2});
  // torch 2.13.0: "index 2 is out of bounds for dimension 1 with size 2".
  const std::string message = "gather: index 2 is out of bounds for dimension 1 with size 2";
  try {
    eager::run(graph, {w, idx});
    FAIL() << "eager accepted an out-of-range index";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
  MovementEvaluatingHandler handler;
  try {
    handler.run(lower(graph), {w, idx});
    FAIL() << "the lowered body accepted an out-of-range index";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("gather 'g' at g.stax:3: " + message), std::string::npos)
        << e.what();
  }
}

TEST(LowerMovement, CatRegionsAreMaskedAndGathersIndirect) {
  const LoweredGraph g = lower(ir::parse_graph(R"(
def f(a: f32[2, 3], b: f32[4, 3], w: f32[5, 3], i: i64[4]):
    c = cat([a, b], 0)
    e = embedding(w, i)
    return c, e
)"));
  ASSERT_EQ(g.buffers.size(), 2u);
  scheduler::RecordingHandler cat;
  std::vector<index::Expr> idx = {index::Expr::var("i0"), index::Expr::var("i1")};
  g.buffers[0].run_body(cat, idx, {});
  ASSERT_EQ(cat.loads.size(), 2u);
  // b's region is masked and read at its own row (i0 - 2); a's too (its rows end at 2).
  EXPECT_TRUE(cat.loads[0].masked);
  EXPECT_TRUE(cat.loads[1].masked);
  EXPECT_EQ(cat.loads[0].buffer, "b");
  EXPECT_EQ(index::to_string(cat.loads[0].index), index::to_string(idx[0] * 3 + idx[1] - 6));
  scheduler::RecordingHandler emb;
  g.buffers[1].run_body(emb, idx, {});
  ASSERT_EQ(emb.indirect.size(), 1u);
  EXPECT_EQ(emb.indirect[0].size, 5);
  ASSERT_EQ(emb.loads.size(), 2u);
  EXPECT_EQ(emb.loads[1].buffer, "w");
  EXPECT_EQ(index::to_string(emb.loads[1].index),
            index::to_string(index::Expr::var("ind0") * 3 + idx[1]));
}

TEST(LowerMovement, SelectingViewOutputsAreStridedViewsOfTheInput) {
  const LoweredGraph g = lower(ir::parse_graph(R"(
def f(x: f32[4, 3] strides=[1, 4]):
    s = slice(x, 0, 1, None, 2)
    t = select(x, 1, 2)
    return s, t
)"));
  EXPECT_TRUE(g.buffers.empty());
  ASSERT_EQ(g.outputs.size(), 2u);
  EXPECT_TRUE(g.outputs[0].is_input);
  EXPECT_EQ(index::static_values(g.outputs[0].strides, "test"), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(g.outputs[0].offset, 1);
  EXPECT_EQ(index::static_values(g.outputs[1].strides, "test"), (std::vector<int64_t>{1}));
  EXPECT_EQ(g.outputs[1].offset, 8);
}

TEST(LowerMovement, AsStridedAndViewSeeTheEagerStorage) {
  // exp(x) transposed and stored (two reads of a transcendental value), then as_strided:
  // it addresses exp's storage in eager's (row-major) order, not the transposed buffer.
  expect_lowering_matches_eager(R"(
def f(x: f32[3, 4]):
    m = mul(x, 3.0)
    t = transpose(m, 0, 1)
    u = add(t, t)
    a = as_strided(t, [2, 2], [1, 4], 1)
    return a, u
)",
                                {x34});
  expect_lowering_matches_eager(R"(
def f(x: f32[4, 3] strides=[1, 4]):
    a = as_strided(x, [3], [5], storage_offset=0)
    return a
)",
                                {xt});
  // view of a transposed value is refused in lowering as in eager (PyTorch's rule).
  const ir::Graph graph = ir::parse_graph(R"(
def f(x: f32[3, 4]):
    m = mul(x, 3.0)
    t = transpose(m, 0, 1)
    v = view(t, [12])
    return v
)");
  EXPECT_THROW(eager::run(graph, {x34}), std::invalid_argument);
  EXPECT_THROW(lower(graph), std::invalid_argument);
  // as_strided past the storage is refused by both.
  const ir::Graph past = ir::parse_graph(R"(
def f(x: f32[3, 4]):
    a = as_strided(x, [2, 2], [1, 4], 8)
    return a
)");
  EXPECT_ANY_THROW(eager::run(past, {x34}));
  EXPECT_THROW(lower(past), std::invalid_argument);
}

TEST(LowerMovement, ClonePreservesTheLayoutOfADenseInputAsAnOutput) {
  const LoweredGraph g = lower(ir::parse_graph(R"(
def f(x: f32[4, 3] strides=[1, 4]):
    c = clone(x)
    return c
)"));
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_FALSE(g.outputs[0].is_input);
  // torch 2.13.0: a transposed contiguous tensor clones with strides (1, 4).
  EXPECT_EQ(index::static_values(g.outputs[0].strides, "test"), (std::vector<int64_t>{1, 4}));
  expect_lowering_matches_eager(R"(
def f(x: f32[4, 3] strides=[1, 4]):
    c = clone(x)
    s = slice(c, 1, 1)
    return c, s
)",
                                {xt});
}

}  // namespace
}  // namespace stax::lowering
