// Lowering of the factory ops (issue 7, point 3): a factory is an index -> element function
// that reads nothing, so it is composed into every user however many there are (never
// materialized), stored only as a graph output, and a range over arange(n) computes the index
// value alone. The values themselves are checked against eager in tests/driver.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "lowering/lowering.h"
#include "scheduler/recording_handler.h"

namespace stax::lowering {
namespace {

LoweredGraph lower_text(const std::string& text) {
  return lower(ir::parse_graph(text));
}

TEST(LowerFactory, FactoriesWithSeveralUsersAreComposedNotStored) {
  const LoweredGraph g = lower_text(R"(
def f(x: f32[64, 128]):
    i = arange(0, 384, 3, dtype='f32')
    a = mul(x, i)
    b = add(x, i)
    w = full_like(x, 0.5)
    c = mul(b, w)
    s = sum(a, dim=[-1])
    m = amax(c, dim=[-1])
    return s, m
)");
  ASSERT_EQ(g.buffers.size(), 2u);
  EXPECT_EQ(g.buffers[0].origin, "arange+mul+sum");
  EXPECT_EQ(g.buffers[1].origin, "arange+add+full_like+mul+amax");
  // The only data either body reads is x.
  for (const ComputedBuffer& b : g.buffers) {
    scheduler::RecordingHandler rec;
    b.run_body(rec, {index::Expr::var("i0")}, {index::Expr::var("r0")});
    for (const auto& load : rec.loads) EXPECT_EQ(load.buffer, "x") << b.origin;
  }
}

TEST(LowerFactory, AFactoryOutputIsStoredAndReadsNothing) {
  const LoweredGraph g = lower_text(R"(
def f():
    m = full([4, 8], 1.5)
    r = arange(2, 20, 3, dtype='i32')
    return m, r
)");
  EXPECT_TRUE(g.inputs.empty());
  ASSERT_EQ(g.buffers.size(), 2u);
  EXPECT_EQ(g.buffers[0].origin, "full");
  EXPECT_EQ(index::static_values(g.buffers[0].sizes, "test"), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(g.buffers[1].dtype, DType::Int32);
  scheduler::RecordingHandler fill;
  g.buffers[0].run_body(fill, {index::Expr::var("i0"), index::Expr::var("i1")}, {});
  EXPECT_TRUE(fill.loads.empty());
  EXPECT_TRUE(fill.ops.empty());
  ASSERT_EQ(fill.stores.size(), 1u);
  // start + step * i in int64, then stored as i32.
  scheduler::RecordingHandler range;
  g.buffers[1].run_body(range, {index::Expr::var("i0")}, {});
  EXPECT_TRUE(range.loads.empty());
  EXPECT_EQ(range.ops, (std::vector<PointwiseOp>{PointwiseOp::Mul, PointwiseOp::Add}));
  ASSERT_EQ(range.stores.size(), 1u);
  EXPECT_EQ(range.stores[0].dtype, DType::Int32);
}

TEST(LowerFactory, UnitRangesComputeTheIndexAlone) {
  // arange(0, n): no multiply by 1 and no add of 0 (exact to leave out); a float range from
  // +0.0 with step 1 likewise, while a negative step keeps the add (0.0 + -0.0 is +0.0).
  const LoweredGraph g = lower_text(R"(
def f():
    a = arange(0, 16)
    b = arange(0, 16, dtype='f64')
    c = arange(0.0, -16.0, -1.0, dtype='f64')
    return a, b, c
)");
  ASSERT_EQ(g.buffers.size(), 3u);
  std::vector<std::vector<PointwiseOp>> ops;
  for (const ComputedBuffer& b : g.buffers) {
    scheduler::RecordingHandler rec;
    b.run_body(rec, {index::Expr::var("i0")}, {});
    ops.push_back(rec.ops);
  }
  EXPECT_EQ(ops[0], std::vector<PointwiseOp>{});
  EXPECT_EQ(ops[1], std::vector<PointwiseOp>{});
  EXPECT_EQ(ops[2], (std::vector<PointwiseOp>{PointwiseOp::Mul, PointwiseOp::Add}));
}

}  // namespace
}  // namespace stax::lowering
