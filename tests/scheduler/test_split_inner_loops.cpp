// Step 4c (split_inner_loops.h): a pointwise nest whose innermost loop its accesses divide is
// split so that the inner part walks every access with a constant stride, with a line in the
// schedule's log; nests the rule does not apply to keep their loops, and a split into less than
// a whole vector is refused with its reason.
#include <gtest/gtest.h>

#include "index/expr.h"
#include "lowering/lowering.h"
#include "schedule_util.h"
#include "scheduler/fusion_rules.h"

namespace stax::scheduler {
namespace {

// Attention's output [batch 2, heads 4, tokens 8, dim 32] with its heads merged for the next
// projection, then a pointwise op on the merged [16, 128] (fused into the same loop).
constexpr const char* kHeadsMerged = R"(
def merged(x: f32[2, 4, 8, 32]):
    p = permute(x, [0, 2, 1, 3])
    v = reshape(p, [16, 128])
    y = exp(v)
    return y
)";

std::unique_ptr<stax::testing::Scheduled> schedule_with_lanes(const std::string& text,
                                                              int64_t lanes) {
  auto s = std::make_unique<stax::testing::Scheduled>();
  s->lowered = lowering::lower(ir::parse_graph(text));
  ScheduleOptions options;
  options.vector_lanes = lanes;
  s->schedule = schedule(s->lowered, options);
  return s;
}

TEST(SplitInnerLoops, HeadsMergedIntoTheHiddenDimensionWalkTheirDimContiguously) {
  auto s = schedule_with_lanes(kHeadsMerged, 16);
  const Schedule& sched = s->schedule;
  ASSERT_EQ(sched.kernels.size(), 1u);
  const FusedNode& f = sched.kernels[0];
  EXPECT_EQ(f.nests[0].sizes, (std::vector<index::Expr>{16, 4, 32}));
  ASSERT_EQ(sched.loop_split_log.lines.size(), 1u);
  EXPECT_NE(sched.loop_split_log.lines[0].find("innermost loop 128 split as (4, 32)"),
            std::string::npos)
      << sched.loop_split_log.lines[0];
  // Every access of every member is now stride 1 along the inner loop.
  const index::RangeMap ranges = nest_ranges(f, 0);
  for (int id : f.members()) {
    const SchedulerNode& n = sched.nodes[static_cast<size_t>(id)];
    const Placement p = place(f, n);
    for (const Access& r : n.reads) {
      EXPECT_EQ(index::stride(placed_index(f, n, r.index, p), "x2", ranges),
                std::optional<int64_t>(1));
    }
    EXPECT_EQ(index::stride(placed_index(f, n, n.write.index, p), "x2", ranges),
              std::optional<int64_t>(1));
  }
}

TEST(SplitInnerLoops, LessThanAWholeVectorIsKeptWithItsReason) {
  auto s = schedule_with_lanes(kHeadsMerged, 64);
  const Schedule& sched = s->schedule;
  EXPECT_EQ(sched.kernels[0].nests[0].sizes, (std::vector<index::Expr>{16, 128}));
  ASSERT_EQ(sched.loop_split_log.lines.size(), 1u);
  EXPECT_NE(sched.loop_split_log.lines[0].find("kept: its accesses divide it by 32, not a whole "
                                               "number of 64-lane vectors"),
            std::string::npos)
      << sched.loop_split_log.lines[0];
}

TEST(SplitInnerLoops, ContiguousAndReductionNestsKeepTheirLoops) {
  auto s = schedule_with_lanes(R"(
def plain(x: f32[2, 4, 8, 32]):
    v = reshape(x, [64, 32])
    y = exp(v)
    p = permute(x, [0, 2, 1, 3])
    m = reshape(p, [16, 128])
    t = sum(m, dim=[1])
    return y, t
)",
                               16);
  EXPECT_TRUE(s->schedule.loop_split_log.lines.empty());
}

}  // namespace
}  // namespace stax::scheduler
