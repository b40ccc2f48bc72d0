// Unit tests of the fusion rules, one per rule, on small programs; and of the score order.
#include <gtest/gtest.h>

#include "schedule_util.h"
#include "scheduler/fusion_rules.h"

namespace stax {
namespace {

using testing::schedule_text;

const scheduler::FusionCandidateLog* find_candidate(const scheduler::Schedule& s,
                                                    const std::string& a, const std::string& b) {
  for (const auto& r : s.fusion_log.rounds) {
    for (const auto& c : r.candidates) {
      if ((c.first == a && c.second == b) || (c.first == b && c.second == a)) return &c;
    }
  }
  return nullptr;
}

TEST(FusionRules, VerticalFusionNeedsEqualReadAndWriteIndex) {
  // e is materialized (exp with two users); op2 reads it transposed while sharing x at the
  // same index: Proposition 7.2 refuses the vertical fusion.
  auto s = schedule_text(R"(
def f(x: f32[32, 32], y: f32[32, 32]):
    t = transpose(y, 0, 1)
    a = add(x, t)
    e = exp(a)
    c = add(e, 1.0)
    et = transpose(e, 0, 1)
    b = add(et, x)
    return c, b
)");
  const auto* cand = find_candidate(s->schedule, "op0", "op2");
  ASSERT_NE(cand, nullptr);
  EXPECT_FALSE(cand->fused);
  EXPECT_NE(cand->reason.find("Proposition 7.2"), std::string::npos) << cand->reason;
  // The same-index consumer fuses.
  const auto* good = find_candidate(s->schedule, "op0", "op1");
  ASSERT_NE(good, nullptr);
  EXPECT_TRUE(good->fused);
  EXPECT_EQ(good->reason, "COMPATIBLE_RANGES_NO_REDUCTION");  // (1024,) re-split as (32, 32)
}

TEST(FusionRules, ReductionResultIsNotReadInsideItsOwnLoop) {
  // mean is sum then div: the div reads the sum's result, so it cannot run inside the
  // reduction loop; it fuses by outer loops instead.
  auto s = schedule_text(R"(
def f(x: f32[16, 40]):
    m = mean(x, dim=[1])
    return m
)");
  ASSERT_EQ(s->schedule.kernels.size(), 1u);
  EXPECT_TRUE(s->schedule.kernels[0].outer_loop_fused);
  EXPECT_EQ(s->schedule.kernels[0].outer, (std::vector<int64_t>{16}));
}

TEST(FusionRules, AColumnReductionKeepsItsOutputLoopInside) {
  // The mean over rows: the sum walks each column down the rows (stride 96); sharing its
  // only output loop with the division would leave it a strided walk per column, so the two
  // stay apart and the sum reads whole rows, one column per vector lane.
  auto s = schedule_text(R"(
def f(x: f32[64, 96]):
    m = mean(x, dim=[0])
    return m
)");
  const auto* cand = find_candidate(s->schedule, "op0", "op1");
  ASSERT_NE(cand, nullptr);
  EXPECT_FALSE(cand->fused);
  EXPECT_NE(cand->reason.find("a column reduction"), std::string::npos) << cand->reason;
  for (const auto& k : s->schedule.kernels) EXPECT_FALSE(k.outer_loop_fused);
}

TEST(FusionRules, PointwiseSplitsIntoReductionCompatibleReduction) {
  // e (materialized; its loops stay (8, 24) because it reads y transposed) has the
  // reduction's shape split into (rows, columns): it runs inside the reduction loop.
  auto s = schedule_text(R"(
def f(x: f32[8, 24], y: f32[24, 8]):
    t = transpose(y, 0, 1)
    a = add(x, t)
    e = exp(a)
    sq = mul(e, e)
    s = sum(sq, dim=[1])
    d = add(e, 2.0)
    return s, d
)");
  bool found = false;
  for (const auto& r : s->schedule.fusion_log.rounds) {
    for (const auto& c : r.candidates) {
      if (c.fused && c.reason == "COMPATIBLE_REDUCTION") found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(FusionRules, NoSharedDataNoFusion) {
  // Two reductions of different inputs with identical groups share no buffer: no candidate.
  auto s = schedule_text(R"(
def f(x: f32[8, 24], y: f32[8, 24]):
    a = sum(x, dim=[1])
    b = sum(y, dim=[1])
    return a, b
)");
  EXPECT_EQ(s->schedule.kernels.size(), 2u);
  EXPECT_EQ(s->schedule.fusion_log.rounds[0].candidates.size(), 0u);
}

TEST(FusionRules, DeadNodesAreRemoved) {
  auto s = schedule_text(R"(
def f(x: f32[8, 24]):
    unused = amax(x, dim=[1])
    a = sum(x, dim=[1])
    return a
)");
  ASSERT_EQ(s->schedule.dead_node_log.size(), 1u);
  EXPECT_TRUE(s->schedule.dead[0]);
  EXPECT_EQ(s->schedule.kernels.size(), 1u);
  EXPECT_EQ(s->schedule.kernels[0].members(), (std::vector<int>{1}));
}

TEST(FusionRules, LastUseFreesIntermediate) {
  auto s = schedule_text(R"(
def f(x: f32[8, 24]):
    e = exp(x)
    a = sum(e, dim=[1])
    b = amax(e, dim=[0])
    return a, b
)");
  const auto* plan = s->schedule.plan_of("buf0");
  ASSERT_NE(plan, nullptr);
  EXPECT_FALSE(plan->is_output);
  const auto& frees = s->schedule.release_after[static_cast<size_t>(plan->last_use)];
  EXPECT_NE(std::find(frees.begin(), frees.end(), "buf0"), frees.end());
  // Nothing reads buf0 after its last use.
  for (size_t k = static_cast<size_t>(plan->last_use) + 1; k < s->schedule.kernels.size(); ++k) {
    for (int id : s->schedule.kernels[k].members()) {
      for (const auto& r : s->schedule.nodes[static_cast<size_t>(id)].reads) {
        EXPECT_NE(r.buffer, "buf0");
      }
    }
  }
}

TEST(FusionRules, BufferUsedOnlyInsideOneNestIsElided) {
  auto s = schedule_text(R"(
def f(x: f32[8, 24]):
    e = exp(x)
    a = add(e, 1.0)
    b = mul(e, 3.0)
    return a, b
)");
  ASSERT_EQ(s->schedule.kernels.size(), 1u);
  EXPECT_TRUE(s->schedule.is_elided("buf0"));
}

TEST(FusionScore, LexicographicWithSixteenfoldException) {
  scheduler::FusionScore a{1, 100, 1, 1};
  scheduler::FusionScore b{0, 1000, 5, 0};
  EXPECT_TRUE(scheduler::ranks_higher(a, b));  // τ first
  scheduler::FusionScore c{0, 2000, 1, 1};
  EXPECT_TRUE(scheduler::ranks_higher(c, a));  // σ differs by more than 16x: σ only
  scheduler::FusionScore d{1, 100, 2, 5};
  EXPECT_TRUE(scheduler::ranks_higher(d, a));  // ω before δ
  scheduler::FusionScore e{1, 100, 2, 1};
  EXPECT_TRUE(scheduler::ranks_higher(e, d));  // smaller distance
  EXPECT_FALSE(scheduler::ranks_higher(e, e));
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// Softmax over the last dim of a rows x cols input: exp is materialized (two users).
std::string softmax_program(int64_t rows, int64_t cols) {
  return "def softmax(x: f32[" + std::to_string(rows) + ", " + std::to_string(cols) + "]):\n" +
         R"(    m = amax(x, dim=[-1], keepdim=True)
    d = sub(x, m)
    e = exp(d)
    s = sum(e, dim=[-1], keepdim=True)
    y = div(e, s)
    return y
)";
}

TEST(MemoryPlan, BufferLivingWithinOneOuterIterationIsLocalized) {
  // Softmax: exp is materialized (two users) but every use is in the same row of the one
  // outer-loop fused kernel, so each row gets a local array instead of a 16 MiB buffer.
  auto s = testing::schedule_text(softmax_program(4096, 1024));
  ASSERT_EQ(s->schedule.kernels.size(), 1u);
  const auto* e = s->schedule.plan_of("buf1");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->localized);
  EXPECT_EQ(e->local_elements, 1024);
  // The row maxima: one element per row, a register.
  EXPECT_TRUE(s->schedule.plan_of("buf0")->localized);
  EXPECT_EQ(s->schedule.plan_of("buf0")->local_elements, 1);
  for (const auto& allocs : s->schedule.allocate_before) {
    EXPECT_EQ(std::find(allocs.begin(), allocs.end(), "buf1"), allocs.end());
  }
}

TEST(MemoryPlan, SliceBeyondTheStackBudgetStaysABuffer) {
  // Rows of 32768 floats (128 KiB) exceed the per-iteration stack budget: exp stays a
  // buffer in memory, and explain says why.
  auto s = testing::schedule_text(softmax_program(8, 32768));
  const auto* e = s->schedule.plan_of("buf1");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->localized);
  EXPECT_NE(e->local_reason.find("stack budget"), std::string::npos) << e->local_reason;
  EXPECT_TRUE(s->schedule.plan_of("buf0")->localized);
}

}  // namespace
}  // namespace stax
