// Issue 33, step 3 (docs/symbolic_sizes.md): lowering takes size symbols. A graph whose sizes
// are expressions over s0 is lowered once; its loop program (ranges, strides, indices, the
// counts of means and variances, view windows such as x[-1]) is then evaluated at many values
// of s0 and compared with the eager interpreter at those sizes. So no size at the hint can be
// baked into the loop program unseen: at any other size the values would differ. The op
// families whose lowering does not take symbols yet refuse by name.
#include <gtest/gtest.h>

#include <random>

#include "eager/interpreter.h"
#include "evaluating_handler.h"
#include "ir/graph.h"
#include "lowering/lowering.h"
#include "movement_evaluating_handler.h"

namespace stax::lowering {
namespace {

using index::Expr;

// Pointwise, reductions along the static and the symbolic dim (means and variances divide by
// s0 at run time), views over symbolic sizes (a split of the rows' channels, a transpose, the
// last row, all rows but the first) and an arange to s0.
constexpr const char* kRows =
    "def f(x: f32[s0, 16], b: f32[16]) where s0: [1, 512] hint=64:\n"
    "    a = add(x, b)\n"
    "    m = mean(a, [1], True)\n"
    "    d = sub(a, m)\n"
    "    e = exp(d)\n"
    "    s = sum(e, [1], True)\n"
    "    p = div(e, s)\n"
    "    v = var(a, 1, correction=1)\n"
    "    vz = var(a, [0], correction=0)\n"
    "    cm = mean(a, [0])\n"
    "    h = view(p, [s0, 4, 4])\n"
    "    t = transpose(h, 0, 2)\n"
    "    last = select(p, 0, -1)\n"
    "    rest = narrow(a, 0, 1, s0 - 1)\n"
    "    big = amax(rest, [1])\n"
    "    i = arange(0, s0)\n"
    "    return p, v, vz, cm, t, last, rest, big, i\n";

Tensor random_tensor(DType dtype, const std::vector<int64_t>& sizes, std::mt19937& rng) {
  std::uniform_real_distribution<double> value(-2, 2);
  Tensor t = Tensor::empty(dtype, sizes);
  for (int64_t p = 0; p < t.numel(); ++p) t.set_flat(p, value(rng));
  return t;
}

TEST(SymbolicLowering, OneLoopProgramGivesEagerAnswerAtEverySize) {
  const ir::Graph g = ir::parse_graph(kRows, "rows.stax");
  const LoweredGraph lowered = lower(g);
  ASSERT_TRUE(lowered.is_symbolic());
  ASSERT_EQ(lowered.symbols.count("s0"), 1u);
  std::mt19937 rng(33);
  // 1 (the variance over one row divides by max(0, 1 - 1)), sizes around the vector widths,
  // the hint and the top of the range.
  for (int64_t rows : {1, 2, 3, 7, 16, 33, 64, 65, 512}) {
    SCOPED_TRACE("s0 = " + std::to_string(rows));
    const std::vector<Tensor> inputs = {random_tensor(DType::Float32, {rows, 16}, rng),
                                        random_tensor(DType::Float32, {16}, rng)};
    const std::vector<Tensor> want = eager::run(g, inputs);
    testing::EvaluatingHandler h;
    h.symbols = {{"s0", rows}};
    const std::vector<std::vector<double>> got = testing::evaluate_lowered(lowered, inputs, h);
    ASSERT_EQ(got.size(), want.size());
    for (size_t o = 0; o < want.size(); ++o) {
      SCOPED_TRACE("output " + std::to_string(o));
      ASSERT_EQ(static_cast<int64_t>(got[o].size()), want[o].numel());
      for (int64_t p = 0; p < want[o].numel(); ++p) {
        const double w = want[o].get_flat(p);
        const double x = got[o][static_cast<size_t>(p)];
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(x)) << p;
          continue;
        }
        // float32 results of a few roundings each (sums in double in the handler, in the
        // dtype in eager): 8 ulps of the magnitude, at least of 1.
        EXPECT_NEAR(x, w, 8 * 0x1p-23 * std::max(1.0, std::fabs(w))) << p;
      }
    }
  }
}

// A decoder step's data movement: the key cache of s0 tokens grows by one (cat along the
// symbolic dim, s0 = 0 at the first step), the last position is read back (select -1 of a dim
// of s0 + 1), and s1 token ids index a static table (embedding, index_select).
constexpr const char* kCache =
    "def kv(cache: f32[2, s0, 4], new: f32[2, 1, 4], w: f32[10, 4], ids: i64[s1]) "
    "where s0: [0, 64] hint=8, s1: [1, 64] hint=8:\n"
    "    c = cat([cache, new], 1)\n"
    "    e = embedding(w, ids)\n"
    "    s = index_select(w, 0, ids)\n"
    "    l = select(c, 1, -1)\n"
    "    return c, e, s, l\n";

TEST(SymbolicLowering, DataMovementOverSymbolicSizesGivesEagerAnswer) {
  const ir::Graph g = ir::parse_graph(kCache, "kv.stax");
  const LoweredGraph lowered = lower(g);
  ASSERT_TRUE(lowered.is_symbolic());
  std::mt19937 rng(34);
  std::uniform_int_distribution<int64_t> token(0, 9);
  for (const auto& [cached, ids] :
       std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 3}, {7, 8}, {8, 2}, {63, 64}}) {
    SCOPED_TRACE("s0 = " + std::to_string(cached) + ", s1 = " + std::to_string(ids));
    Tensor id = Tensor::empty(DType::Int64, {ids});
    for (int64_t p = 0; p < ids; ++p) id.set_flat(p, static_cast<double>(token(rng)));
    const std::vector<Tensor> inputs = {random_tensor(DType::Float32, {2, cached, 4}, rng),
                                        random_tensor(DType::Float32, {2, 1, 4}, rng),
                                        random_tensor(DType::Float32, {10, 4}, rng), id};
    const std::vector<Tensor> want = eager::run(g, inputs);
    testing::MovementEvaluatingHandler h;
    h.symbols = {{"s0", cached}, {"s1", ids}};
    const std::vector<Tensor> got = h.run(lowered, inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t o = 0; o < want.size(); ++o) {
      ASSERT_EQ(got[o].sizes(), want[o].sizes()) << o;
      for (int64_t p = 0; p < want[o].numel(); ++p) {
        EXPECT_EQ(got[o].get_flat(p), want[o].get_flat(p)) << "output " << o << " at " << p;
      }
    }
  }
}

TEST(SymbolicLowering, LoopRangesAndStridesAreExpressionsOverTheSymbols) {
  const ir::Graph g = ir::parse_graph(kRows, "rows.stax");
  const LoweredGraph lowered = lower(g);
  const Expr s0 = Expr::var("s0");
  EXPECT_EQ(lowered.inputs[0].sizes, (std::vector<Expr>{s0, 16}));
  // The rows' sums: s0 rows of 16; the columns' sums: 16 columns of s0 rows.
  bool found = false;
  for (const ComputedBuffer& b : lowered.buffers) {
    if (b.ranges == std::vector<Expr>{s0} && b.reduction_ranges == std::vector<Expr>{16}) {
      found = true;
    }
  }
  EXPECT_TRUE(found);
  found = false;
  for (const ComputedBuffer& b : lowered.buffers) {
    if (b.ranges == std::vector<Expr>{16} && b.reduction_ranges == std::vector<Expr>{s0}) {
      found = true;
    }
  }
  EXPECT_TRUE(found);
  // The transposed view of [s0, 4, 4] is [4, 4, s0] with strides [1, 4, 16] over p's buffer.
  const OutputSpec& t = lowered.outputs[4];
  EXPECT_EQ(t.sizes, (std::vector<Expr>{4, 4, s0}));
  EXPECT_EQ(t.strides, (std::vector<Expr>{1, 4, 16}));
  // The last row starts at 16 * (s0 - 1).
  EXPECT_EQ(lowered.outputs[5].offset, 16 * (s0 - 1));
}

TEST(SymbolicLowering, FamiliesWithoutSymbolicLoweringRefuseByName) {
  // The refusals are index::SymbolicSizesRefused, so that the driver compiles per size.
  // An adaptive pool's gradient over a window's result would divide by (s0 + 1) // 2.
  const ir::Graph adaptive = ir::parse_graph(
      "def f(x: f32[2, 3, s0, 8]) where s0: [8, 512] hint=20:\n"
      "    p, i = max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])\n"
      "    d = _adaptive_avg_pool2d(p, [3, 2])\n"
      "    gd = _adaptive_avg_pool2d_backward(d, p)\n"
      "    return gd\n",
      "adaptive.stax");
  try {
    lower(adaptive);
    FAIL() << "lowered";
  } catch (const index::SymbolicSizesRefused& e) {
    EXPECT_NE(std::string(e.what()).find("lowering _adaptive_avg_pool2d_backward"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("a division by that size is not taken yet"),
              std::string::npos)
        << e.what();
  }
  // Index values bounded by a size known only at run time: not yet.
  const ir::Graph gather_rows = ir::parse_graph(
      "def f(x: f32[s0, 4], i: i64[3]):\n    y = index_select(x, 0, i)\n    return y\n",
      "rows.stax");
  try {
    lower(gather_rows);
    FAIL() << "lowered";
  } catch (const index::SymbolicSizesRefused& e) {
    EXPECT_NE(std::string(e.what()).find("lowering index_select: sizes known only at run time"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace stax::lowering
