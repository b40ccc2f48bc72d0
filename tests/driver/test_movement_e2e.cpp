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

TEST(MovementE2e, CatAndStackOfComputedValues) {
  const Tensor a = distinct({5, 7});
  const Tensor b = distinct({3, 7}, {1, 3});
  expect_compiled_matches_eager(R"(
def f(a: f32[5, 7], b: f32[3, 7] strides=[1, 3]):
    e = exp(a)
    r = relu(b)
    c = cat([e, r, a], 0)
    t = transpose(e, 0, 1)
    d = cat([t, t], 1)
    s = stack([a, e], 2)
    return c, d, s
)",
                                {a, b});
}

TEST(MovementE2e, ConstantPadWithNegativeAndPositivePads) {
  const Tensor x = distinct({6, 5}, {1, 6});
  expect_compiled_matches_eager(R"(
def f(x: f32[6, 5] strides=[1, 6]):
    p = constant_pad_nd(x, [2, -1, -2, 3], -1.5)
    e = exp(x)
    q = constant_pad_nd(e, [17, 17])
    return p, q
)",
                                {x});
}

TEST(MovementE2e, SliceAndSelectScatter) {
  // Windows with a step, at the start, in the middle and at the end, of computed values and
  // of strided inputs; vector tails along the scattered dim (37 columns) and across it.
  const Tensor x = distinct({6, 37}, {1, 6});
  const Tensor s = distinct({6, 12});
  const Tensor r = distinct({37});
  expect_compiled_matches_eager(R"(
def f(x: f32[6, 37] strides=[1, 6], s: f32[6, 12], r: f32[37]):
    a = slice_scatter(x, s, 1, 3, 100, 3)
    e = exp(s)
    b = slice_scatter(x, e, 1, -12)
    c = slice_scatter(x, e, 1, 0, 12)
    n = neg(r)
    d = select_scatter(x, n, 0, 4)
    z = zeros([6, 37])
    g = slice_scatter(z, s, 1, 25, 37)
    t = sum(g, [1])
    return a, b, c, d, t
)",
                                {x, s, r});
}

TEST(MovementE2e, GathersAndEmbeddings) {
  // Only index.Tensor wraps negative indices; embedding and gather take [0, size).
  const Tensor w = distinct({40, 6});
  const Tensor idx = Tensor::empty(DType::Int64, {3, 11});
  for (int64_t p = 0; p < idx.numel(); ++p) idx.set_flat(p, static_cast<double>((p * 7) % 80 - 40));
  const Tensor rows = Tensor::empty(DType::Int64, {3, 11});
  for (int64_t p = 0; p < rows.numel(); ++p) rows.set_flat(p, static_cast<double>((p * 7) % 40));
  const Tensor col = Tensor::empty(DType::Int64, {40, 6});
  for (int64_t p = 0; p < col.numel(); ++p) col.set_flat(p, static_cast<double>((p * 5) % 6));
  expect_compiled_matches_eager(R"(
def f(w: f32[40, 6], idx: i64[3, 11], rows: i64[3, 11], col: i64[40, 6]):
    e = embedding(w, rows)
    m = mul(w, 2.0)
    g = gather(m, 1, col)
    t = transpose(w, 0, 1)
    i = index(t, [None, idx])
    return e, g, i
)",
                                {w, idx, rows, col});
}

// index.Tensor with several tensor indices: transformers' padding mask (mask[b, kv] with the
// aranges broadcast to [B, 1, 1, K]: a bool source), adjacent indices in the middle of a
// transposed source, separated ones (their broadcast dims first), over sizes the kernels
// split and vectorize; then a bad value raising the op's error.
TEST(MovementE2e, SeveralTensorIndices) {
  const Tensor w = distinct({48, 40, 6});
  Tensor mask = Tensor::empty(DType::Bool, {4, 300});
  for (int64_t p = 0; p < mask.numel(); ++p) mask.set_flat(p, (p * 7) % 5 < 3 ? 1.0 : 0.0);
  auto ints = [](DType dtype, const std::vector<int64_t>& sizes, int64_t mod, int64_t shift) {
    Tensor t = Tensor::empty(dtype, sizes);
    for (int64_t p = 0; p < t.numel(); ++p) {
      t.set_flat(p, static_cast<double>((p * 13) % mod - shift));
    }
    return t;
  };
  const std::string program = R"(
def f(w: f32[48, 40, 6], mask: bool[4, 300], i: i64[37, 1], j: i32[29], k: i64[37, 29]):
    b = arange(0, 4, 1, dtype='i64')
    bb = reshape(b, [4, 1, 1, 1])
    kv = arange(0, 300, 1, dtype='i64')
    kk = reshape(kv, [1, 1, 1, 300])
    m = index(mask, [bb, kk])
    t = transpose(w, 0, 2)
    a = index(t, [None, i, j])
    s = index(w, [j, None, k])
    return m, a, s
)";
  expect_compiled_matches_eager(
      program, {w, mask, ints(DType::Int64, {37, 1}, 80, 40), ints(DType::Int32, {29}, 96, 48),
                ints(DType::Int64, {37, 29}, 12, 6)});
  const ir::Graph graph = ir::parse_graph(program, "several.stax");
  Tensor j = ints(DType::Int32, {29}, 96, 48);
  j.set_flat(11, 48.0);  // one past the 48 rows of w (s) and columns of t (a)
  const std::vector<Tensor> bad = {w, mask, ints(DType::Int64, {37, 1}, 80, 40), j,
                                   ints(DType::Int64, {37, 29}, 12, 6)};
  EXPECT_THROW(eager::run(graph, bad), ir::IndexError);
  CompileOptions options;
  options.num_threads = 2;
  try {
    compile(graph, options).run(bad);
    FAIL() << "an out-of-range index ran";
  } catch (const ir::IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index 48 is out of bounds for dimension"),
              std::string::npos)
        << e.what();
  }
}

TEST(MovementE2e, AnOutOfRangeIndexRaisesTheOpsError) {
  const ir::Graph graph = ir::parse_graph(R"(
def f(w: f32[40, 6], idx: i64[3, 11]):
    e = embedding(w, idx)
    return e
)",
                                          "emb.stax");
  const Tensor w = distinct({40, 6});
  const Tensor idx = Tensor::empty(DType::Int64, {3, 11});
  idx.set_flat(20, 40.0);  // one element past the 40 rows
  CompileOptions options;
  options.num_threads = 3;
  const CompiledGraph compiled = compile(graph, options);
  try {
    compiled.run({w, idx});
    FAIL() << "an out-of-range index ran";
  } catch (const std::exception& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("embedding 'e' at emb.stax:3"), std::string::npos) << message;
    EXPECT_NE(message.find("embedding: index out of range in self (index 40 for dimension 0 with "
                           "size 40)"),
              std::string::npos)
        << message;
  }
  EXPECT_THROW(eager::run(graph, {w, idx}), ir::IndexError);
}

// Copies of other dtypes: promotion inside cat, 16-bit floats chosen in float32, integer
// pads, int32 indices.
TEST(MovementE2e, OtherDtypes) {
  const Tensor h = Tensor::empty(DType::Float16, {4, 9});
  const Tensor i = Tensor::empty(DType::Int64, {2, 9});
  const Tensor u = Tensor::empty(DType::UInt8, {4, 9});
  const Tensor j = Tensor::empty(DType::Int32, {5});
  for (int64_t p = 0; p < h.numel(); ++p) h.set_flat(p, 0.1 * static_cast<double>(p) - 1.0);
  for (int64_t p = 0; p < i.numel(); ++p) i.set_flat(p, static_cast<double>(p * 3 - 20));
  for (int64_t p = 0; p < u.numel(); ++p) u.set_flat(p, static_cast<double>((p * 37) % 256));
  for (int64_t p = 0; p < j.numel(); ++p) j.set_flat(p, static_cast<double>(8 - 2 * p));
  expect_compiled_matches_eager(R"(
def f(h: f16[4, 9], i: i64[2, 9], u: u8[4, 9], j: i32[5]):
    c = cat([h, i], 0)
    d = cat([h, h], 1)
    p = constant_pad_nd(u, [3, 2], 200)
    q = constant_pad_nd(h, [1, 1, 1, 0], 0.1)
    s = index_select(u, 1, j)
    f = flip(i, [1])
    return c, d, p, q, s, f
)",
                                {h, i, u, j});
}

}  // namespace
}  // namespace stax
