// Dependences of indirect reads (gather, index_select, embedding, index.Tensor): a read
// through an indirect index variable may touch any element it can reach, so its MemoryDep is
// that whole range of the buffer, and the node is never put in one loop with the producer of
// the buffer it reads indirectly (Section 7.1, Proposition 7.2).
#include <gtest/gtest.h>

#include "schedule_util.h"

namespace stax::scheduler {
namespace {

using stax::testing::schedule_text;

const SchedulerNode& node_writing(const Schedule& s, const std::string& origin) {
  for (const SchedulerNode& n : s.nodes) {
    if (n.buffer->origin == origin) return n;
  }
  throw std::logic_error("no node computes " + origin);
}

TEST(IndirectDeps, AnIndirectReadDependsOnTheWholeBuffer) {
  auto s = schedule_text(R"(
def f(w: f32[5, 3], i: i64[4], j: i64[2]):
    e = embedding(w, i)
    d = embedding(w, j)
    return e, d
)");
  const SchedulerNode& e = s->schedule.nodes.at(0);
  const SchedulerNode& d = s->schedule.nodes.at(1);
  // The index tensor is read at the loop index; the weight anywhere in its 15 elements.
  const MemoryDep whole{"w", index::Expr::var("c0"), {{"c0", 15}}, DType::Float32};
  ASSERT_EQ(e.read_deps.size(), 2u);
  EXPECT_EQ(e.read_deps[1], whole) << e.read_deps[1].to_string();
  EXPECT_EQ(e.read_deps[1].bytes({}), 60);
  ASSERT_EQ(d.read_deps.size(), 2u);
  EXPECT_EQ(d.read_deps[1], whole) << d.read_deps[1].to_string();
  // The access itself keeps the index through the indirect variable (for code generation).
  ASSERT_EQ(e.reads.size(), 2u);
  EXPECT_TRUE(index::depends_on(e.reads[1].index, "ind0"));
}

TEST(IndirectDeps, AGatherIsNotFusedWithTheProducerOfItsSource) {
  // y is stored (a graph output); g reads it through its index in loops of the same shape,
  // which the identical iteration groups would otherwise fuse.
  auto s = schedule_text(R"(
def f(x: f32[4, 5], idx: i64[4, 5]):
    y = mul(x, 2.0)
    g = gather(y, 1, idx)
    return y, g
)");
  const Schedule& schedule = s->schedule;
  ASSERT_EQ(schedule.kernels.size(), 2u);
  const SchedulerNode& gather = node_writing(schedule, "gather");
  const SchedulerNode& producer = node_writing(schedule, "mul");
  bool saw_rejection = false;
  for (const auto& round : schedule.fusion_log.rounds) {
    for (const auto& c : round.candidates) {
      if (c.reason.find(gather.name + " reads " + producer.write.buffer) != std::string::npos) {
        saw_rejection = true;
      }
    }
  }
  EXPECT_TRUE(saw_rejection);
  EXPECT_FALSE(schedule.is_elided(producer.write.buffer));
  EXPECT_FALSE(schedule.is_localized(producer.write.buffer));
}

}  // namespace
}  // namespace stax::scheduler
