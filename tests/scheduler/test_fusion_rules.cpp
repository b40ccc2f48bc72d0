// Unit tests of the fusion rules, one per rule, on small programs; and of the score order.
#include <gtest/gtest.h>

#include <stdexcept>

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
  EXPECT_EQ(s->schedule.kernels[0].outer, (std::vector<index::Expr>{16}));
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

// Definition 7.2 on the CPU, one test per condition (issue 32, point 3(e)). The CPU keeps
// each node's per-dimension ranges and decides by whether the outer loops agree (the text
// after Definition 7.2; Examples 7.1 and 7.2).
const scheduler::FusionCandidateLog& fused_candidate(const scheduler::Schedule& s,
                                                     const std::string& a, const std::string& b) {
  const scheduler::FusionCandidateLog* c = find_candidate(s, a, b);
  if (c == nullptr) throw std::logic_error(a + " and " + b + " were never candidates");
  return *c;
}

// Condition 1: two reductions of equal (n, r) share one nest.
TEST(FusionRules, Definition72BothReductionsOfEqualGroupsShareOneNest) {
  auto s = schedule_text(
      "def f(x: f32[64, 128]):\n    s = sum(x, dim=[1])\n    m = amax(x, dim=[1])\n"
      "    return s, m\n");
  const auto& c = fused_candidate(s->schedule, "op0", "op1");
  EXPECT_TRUE(c.fused);
  EXPECT_EQ(c.reason, "SAME_VARS_REDUCE");
}

// Condition 2: two pointwise nodes of equal n; exp(x)'s loops merged to (8192,), x * v's stay
// (64, 128) (v is broadcast along the rows): the merged loop re-splits into the finer ones.
TEST(FusionRules, Definition72PointwiseNodesOfEqualCountShareTheFinerLoops) {
  auto s = schedule_text(
      "def f(x: f32[64, 128], v: f32[64, 1]):\n    a = exp(x)\n    b = mul(x, v)\n"
      "    return a, b\n");
  ASSERT_EQ(s->schedule.nodes[0].sizes(), (std::vector<index::Expr>{8192}));
  ASSERT_EQ(s->schedule.nodes[1].sizes(), (std::vector<index::Expr>{64, 128}));
  const auto& c = fused_candidate(s->schedule, "op0", "op1");
  EXPECT_TRUE(c.fused);
  EXPECT_EQ(c.reason, "COMPATIBLE_RANGES_NO_REDUCTION");
  ASSERT_EQ(s->schedule.kernels.size(), 1u);
  EXPECT_EQ(s->schedule.kernels[0].nests[0].sizes, (std::vector<index::Expr>{64, 128}));
}

// Condition 3 with N = n: a pointwise node once per output of the reduction (s * s) shares
// the reduction's outer loop and runs after it in each outer iteration.
TEST(FusionRules, Definition72PointwisePerReductionOutputSharesItsOuterLoop) {
  auto s = schedule_text(
      "def f(x: f32[64, 128]):\n    s = sum(x, dim=[1])\n    t = mul(s, s)\n"
      "    return s, t\n");
  const auto& c = fused_candidate(s->schedule, "op0", "op1");
  EXPECT_TRUE(c.fused);
  EXPECT_EQ(c.reason, "OUTER_LOOP_FUSED depth 1");
}

// Condition 3 with N = nr (the split case is PointwiseSplitsIntoReductionCompatibleReduction
// and Example 7.1): a pointwise node whose loops merged, (8192,), does not split into
// ((64,), (128,)) on the CPU — Example 7.2's log refuses exp with sum at outer-loop fusion
// depth 0 — so by Definition 7.3(1) it never joins a fused node holding such a reduction,
// though it is compatible (condition 2) with that node's pointwise member. Here
// c = exp(b * r) shares b with d = x / s + b, which is outer-loop fused with the row sum s.
TEST(FusionRules, Definition72AMergedPointwiseLoopNeverJoinsAReductionOfItsCount) {
  auto s = schedule_text(
      "def f(x: f32[64, 128], p: f32[64, 32], q: f32[32, 128], r: f32[64, 128], "
      "w: f32[128, 16]):\n"
      "    s = sum(x, dim=[1], keepdim=True)\n    b = mm(p, q)\n    br = mul(b, r)\n"
      "    c = exp(br)\n    y = div(x, s)\n    d = add(y, b)\n    c1 = add(c, r)\n"
      "    c2 = mul(c, 2.0)\n    o = mm(d, w)\n    return c1, c2, o\n",
      /*with_library=*/true);
  const scheduler::Schedule& sched = s->schedule;
  ASSERT_EQ(sched.nodes[2].sizes(), (std::vector<index::Expr>{8192}));  // c
  int refusals = 0;
  for (const auto& round : sched.fusion_log.rounds) {
    for (const auto& c : round.candidates) {
      if (c.first != "op0_op5" && c.second != "op0_op5") continue;
      if (c.first.find("op2") == std::string::npos && c.second.find("op2") == std::string::npos) {
        continue;
      }
      EXPECT_FALSE(c.fused) << c.first << " with " << c.second;
      EXPECT_NE(c.reason.find("outer-loop fusion depth 0"), std::string::npos) << c.reason;
      ++refusals;
    }
  }
  EXPECT_GT(refusals, 0);
  for (const auto& kernel : sched.kernels) {
    EXPECT_FALSE(kernel.contains(0) && kernel.contains(2)) << kernel.name;
  }
}

// Section 7.3: "two reductions that require a strict reduction order cannot be fused" (issue
// 32, point 3(e3)), a rule of its own, not a consequence of scans and scatters being external
// calls: two scans of one input, and two scatters into one tensor, are refused for their
// order, each naming what it keeps in order (stax explain --verbose prints the reason).
TEST(FusionRules, TwoReductionsOfStrictOrderAreNeverFused) {
  auto scans = schedule_text(
      "def f(x: f32[32, 64]):\n    a = cumsum(x, dim=1)\n    b = cumprod(x, dim=0)\n"
      "    return a, b\n");
  const auto& c = fused_candidate(scans->schedule, "op0", "op1");
  EXPECT_FALSE(c.fused);
  EXPECT_NE(c.reason.find("strict reduction order"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("cumsum carries a running sum along dim 1"), std::string::npos)
      << c.reason;
  EXPECT_NE(c.reason.find("cumprod carries a running prod along dim 0"), std::string::npos)
      << c.reason;
  EXPECT_EQ(scans->schedule.nodes[0].strict_order.empty(), false);

  auto scatters = schedule_text(
      "def f(x: f32[32, 64], k: i64[32, 8], src: f32[32, 8]):\n"
      "    a = scatter_add(x, 1, k, src)\n    b = scatter_add(x, 1, k, src)\n"
      "    return a, b\n");
  const auto& d = fused_candidate(scatters->schedule, "op0", "op1");
  EXPECT_FALSE(d.fused);
  EXPECT_NE(d.reason.find("strict reduction order"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("scatter_add"), std::string::npos) << d.reason;

  // Loop reductions may combine in any order (their reordering rests on associativity,
  // Section 7.7): none of them keeps a strict order.
  auto sums = schedule_text(
      "def f(x: f32[64, 128]):\n    s = sum(x, dim=[1])\n    m = amax(x, dim=[1])\n"
      "    return s, m\n");
  for (const auto& n : sums->schedule.nodes) EXPECT_TRUE(n.strict_order.empty()) << n.name;
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
