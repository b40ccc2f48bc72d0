// Every limit of can_fuse and of Algorithm 7.1 (Section 7.3), each reached by one test that
// fails when the limit moves: at most 128 nodes and 32 distinct buffers after fusion, the
// shared-bytes threshold, the ten-round cap (Section 7.6, step 4), each term of the score
// (τ, σ, ω, −δ) deciding on its own, the 16x exception, and the peak-memory condition on
// horizontal fusion, checked with Definition 7.5's simulation (fusion_peak.h).
#include <gtest/gtest.h>

#include "schedule_util.h"
#include "scheduler/fusion_peak.h"
#include "scheduler/fusion_rules.h"
#include "scheduler/greedy_fusion.h"

namespace stax::scheduler {
namespace {

// Lowered and scheduled without fusion: the nodes, for building groups by hand.
std::unique_ptr<testing::Scheduled> unfused(const std::string& text) {
  auto s = std::make_unique<testing::Scheduled>();
  s->lowered = lowering::lower(ir::parse_graph(text));
  ScheduleOptions options;
  options.fuse = false;
  s->schedule = schedule(s->lowered, options);
  return s;
}

// Nodes [first, last) as one fused node of one loop nest (they share their loops).
FusedNode group(const std::vector<SchedulerNode>& nodes, int first, int last) {
  FusedNode f;
  const SchedulerNode& n = nodes.at(static_cast<size_t>(first));
  f.nests = {LoopNest{n.sizes(), n.reduction_sizes(), {}}};
  for (int id = first; id < last; ++id) {
    f.name += (id == first ? "" : "_") + nodes.at(static_cast<size_t>(id)).name;
    f.nests[0].nodes.push_back(id);
  }
  return f;
}

// n outputs, each x times a constant: every node reads x and writes its own buffer.
std::string readers_of_x(int n) {
  std::string text = "def f(x: f32[8, 16]):\n";
  std::string outputs;
  for (int i = 0; i < n; ++i) {
    text += "    o" + std::to_string(i) + " = mul(x, " + std::to_string(i + 1) + ".0)\n";
    outputs += (i ? ", o" : "o") + std::to_string(i);
  }
  return text + "    return " + outputs + "\n";
}

const FusionCandidateLog* find_candidate(const Schedule& s, const std::string& a,
                                         const std::string& b) {
  for (const auto& r : s.fusion_log.rounds) {
    for (const auto& c : r.candidates) {
      if ((c.first == a && c.second == b) || (c.first == b && c.second == a)) return &c;
    }
  }
  return nullptr;
}

TEST(FusionLimits, AtMost128NodesAfterFusion) {
  // Section 7.3: "at most 128 nodes after fusion". 129 readers of x; the buffer limit is
  // lifted so that only the node limit (left at its default) can refuse.
  auto s = unfused(readers_of_x(129));
  const auto& nodes = s->schedule.nodes;
  ASSERT_EQ(nodes.size(), 129u);
  FusionLimits limits;
  limits.max_buffers = 1000;
  const FusionRules rules(nodes, limits);
  const FusionDecision at_128 = rules.can_fuse(group(nodes, 0, 64), group(nodes, 64, 128));
  EXPECT_TRUE(at_128.accepted) << at_128.reason;
  const FusionDecision at_129 = rules.can_fuse(group(nodes, 0, 64), group(nodes, 64, 129));
  EXPECT_FALSE(at_129.accepted);
  EXPECT_EQ(at_129.reason, "129 nodes after fusion: more than 128");
}

TEST(FusionLimits, AtMost32DistinctBuffersAfterFusion) {
  // Section 7.3: "at most 32 distinct buffers involved". n readers of x involve x and their n
  // results: 31 of them make 32 buffers, 32 make 33. Default limits.
  auto s = unfused(readers_of_x(32));
  const auto& nodes = s->schedule.nodes;
  const FusionRules rules(nodes);
  const FusionDecision at_32 = rules.can_fuse(group(nodes, 0, 16), group(nodes, 16, 31));
  EXPECT_TRUE(at_32.accepted) << at_32.reason;
  const FusionDecision at_33 = rules.can_fuse(group(nodes, 0, 16), group(nodes, 16, 32));
  EXPECT_FALSE(at_33.accepted);
  EXPECT_EQ(at_33.reason, "33 distinct buffers after fusion: more than 32");
}

TEST(FusionLimits, SharedBytesNoLowerThanTheThreshold) {
  // Section 7.3: "a number of shared data bytes no lower than a threshold". Two readers of x
  // share its 512 bytes at the same index.
  auto s = unfused(readers_of_x(2));
  const auto& nodes = s->schedule.nodes;
  const FusedNode a = group(nodes, 0, 1);
  const FusedNode b = group(nodes, 1, 2);
  ASSERT_EQ(FusionRules(nodes).score(a, b).shared_bytes, 8 * 16 * 4);
  FusionLimits limits;
  limits.min_shared_bytes = 512;
  EXPECT_TRUE(FusionRules(nodes, limits).can_fuse(a, b).accepted);
  limits.min_shared_bytes = 513;
  const FusionDecision below = FusionRules(nodes, limits).can_fuse(a, b);
  EXPECT_FALSE(below.accepted);
  EXPECT_EQ(below.reason, "512 bytes of shared data: below the threshold of 513");

  // The default threshold (1 byte): x read straight and transposed shares no access.
  auto t = testing::schedule_text(R"(
def f(x: f32[16, 16]):
    a = mul(x, 2.0)
    xt = transpose(x, 0, 1)
    b = mul(xt, 3.0)
    return a, b
)");
  const auto* cand = find_candidate(t->schedule, "op0", "op1");
  ASSERT_NE(cand, nullptr);
  EXPECT_FALSE(cand->legal);
  EXPECT_EQ(cand->reason, "no shared data with identical indices (score 0)");
  EXPECT_EQ(t->schedule.kernels.size(), 2u);
}

TEST(FusionLimits, AtMostTenRounds) {
  // Algorithm 7.1, line 1, and Section 7.6, step 4: at most 10 rounds.
  ASSERT_EQ(kMaxFusionRounds, 10);
  // A path of 1025 nodes, o_i = x_i + x_(i+1): neighbours share an input, and each round
  // fuses neighbouring groups in pairs, halving their number (1025, 513, 257, ..., 3, 2), so
  // one group needs 11 rounds. Node, buffer and pair-distance limits lifted.
  const int n = 1025;
  std::string text = "def path(";
  std::string body;
  std::string outputs;
  for (int i = 0; i <= n; ++i) text += (i ? ", x" : "x") + std::to_string(i) + ": f32[4]";
  for (int i = 0; i < n; ++i) {
    body += "    o" + std::to_string(i) + " = add(x" + std::to_string(i) + ", x" +
            std::to_string(i + 1) + ")\n";
    outputs += (i ? ", o" : "o") + std::to_string(i);
  }
  auto s = unfused(text + "):\n" + body + "    return " + outputs + "\n");
  const auto& nodes = s->schedule.nodes;
  ASSERT_EQ(nodes.size(), static_cast<size_t>(n));
  FusionLimits limits;
  limits.max_nodes = 1 << 20;
  limits.max_buffers = 1 << 20;
  limits.horizontal_pair_distance = 1 << 20;
  std::vector<FusedNode> groups;
  std::set<std::string> returned;
  for (int id = 0; id < n; ++id) {
    groups.push_back(group(nodes, id, id + 1));
    returned.insert(nodes[static_cast<size_t>(id)].write.buffer);
  }
  FusionLog log;
  greedy_fusion(nodes, groups, returned, log, limits);
  ASSERT_EQ(log.rounds.size(), 10u);
  for (const auto& round : log.rounds) EXPECT_FALSE(round.fused.empty()) << round.round;
  // It stopped at the cap, not at line 8: the two groups left may still fuse.
  ASSERT_EQ(groups.size(), 2u);
  const FusionDecision eleventh = FusionRules(nodes, limits).can_fuse(groups[0], groups[1]);
  EXPECT_TRUE(eleventh.accepted) << eleventh.reason;
}

// Line 4 of Algorithm 7.1: candidates ranked by (τ, σ, ω, −δ) lexicographically, except that
// only σ is compared when the σ of two candidates differ by more than a factor of 16. Each
// test makes one term decide with the terms before it equal and those after it against it.

TEST(FusionScore, TypeDecidesFirst) {
  const FusionScore same_type{1, 100, 1, 9};
  const FusionScore other{0, 1000, 9, 1};  // more bytes (10x), buffers, nearer
  EXPECT_TRUE(ranks_higher(same_type, other));
  EXPECT_FALSE(ranks_higher(other, same_type));
}

TEST(FusionScore, SharedBytesDecideWhenTypesAreEqual) {
  const FusionScore more_bytes{1, 200, 1, 9};
  const FusionScore other{1, 100, 9, 1};
  EXPECT_TRUE(ranks_higher(more_bytes, other));
  EXPECT_FALSE(ranks_higher(other, more_bytes));
}

TEST(FusionScore, SharedBuffersDecideWhenTypeAndBytesAreEqual) {
  const FusionScore more_buffers{1, 100, 3, 9};
  const FusionScore other{1, 100, 2, 1};
  EXPECT_TRUE(ranks_higher(more_buffers, other));
  EXPECT_FALSE(ranks_higher(other, more_buffers));
}

TEST(FusionScore, TheNearerPairRanksHigherWhenAllElseIsEqual) {
  const FusionScore nearer{1, 100, 2, 1};
  const FusionScore farther{1, 100, 2, 2};
  EXPECT_TRUE(ranks_higher(nearer, farther));
  EXPECT_FALSE(ranks_higher(farther, nearer));
  EXPECT_FALSE(ranks_higher(nearer, nearer));
}

TEST(FusionScore, MoreThanSixteenfoldBytesOverrideTheType) {
  const FusionScore same_type{1, 100, 9, 1};
  // 17x the bytes: only σ is compared, so the type no longer decides.
  EXPECT_TRUE(ranks_higher(FusionScore{0, 1700, 1, 9}, same_type));
  EXPECT_FALSE(ranks_higher(same_type, FusionScore{0, 1700, 1, 9}));
  // Exactly 16x is not more than 16x: the type decides.
  EXPECT_TRUE(ranks_higher(same_type, FusionScore{0, 1600, 1, 9}));
  EXPECT_FALSE(ranks_higher(FusionScore{0, 1600, 1, 9}, same_type));
  // Nor do ω and δ count past the exception.
  EXPECT_TRUE(ranks_higher(FusionScore{1, 1700, 1, 9}, FusionScore{1, 100, 9, 1}));
}

TEST(FusionScore, TheTypeDecidesWhichOfTwoConflictingPairsFuses) {
  // op0 (pointwise) could fuse with op1 (pointwise, sharing x) or with op2 (a reduction
  // sharing x and z: twice the bytes, within 16x). Greedy fusion takes the pair of equal
  // types first; op0 is then fused for this round, and op2 joins in the next.
  auto s = testing::schedule_text(R"(
def f(x: f32[64, 128], z: f32[128, 64]):
    zt = transpose(z, 0, 1)
    p = add(x, zt)
    q = mul(x, 3.0)
    w = add(x, zt)
    r = sum(w, dim=[1])
    return p, q, r
)");
  const auto& round = s->schedule.fusion_log.rounds.at(0);
  ASSERT_EQ(round.candidates.size(), 3u);
  EXPECT_EQ(round.candidates[0].first, "op0");
  EXPECT_EQ(round.candidates[0].second, "op1");
  EXPECT_TRUE(round.candidates[0].fused);
  EXPECT_EQ(round.candidates[0].score.to_string(), "(1, 32768, 1, -1)");
  EXPECT_EQ(round.candidates[1].second, "op2");
  EXPECT_FALSE(round.candidates[1].fused);
  EXPECT_EQ(round.candidates[1].score.to_string(), "(0, 65536, 2, -2)");
}

// Section 7.3: horizontal fusion must not extend the lifetime of what the two share so far
// that peak memory rises. a and b read x; between them a 256 KiB exp lives while its row sum
// and column max run.
constexpr const char* kFarApart = R"(
def f(x: f32[64, 64], y: f32[256, 256]):
    a = mul(x, 2.0)
    e = exp(y)
    s = sum(e, dim=[1])
    m = amax(e, dim=[0])
    b = mul(x, 3.0)
    return a, s, m, b
)";

TEST(FusionPeak, HorizontalFusionThatRaisesThePeakIsRefused) {
  auto s = testing::schedule_text(kFarApart);
  const auto* cand = find_candidate(s->schedule, "op0", "op4");
  ASSERT_NE(cand, nullptr);
  EXPECT_FALSE(cand->legal);
  EXPECT_LE(cand->score.distance, 64);  // the old distance rule would have let it fuse
  // Before: a (16 KiB) and the exp (256 KiB) live while s and m (1 KiB each) are written; b
  // comes after the exp is freed. Merged with a, b's 16 KiB live through all of it.
  const int64_t before = 16384 + 262144 + 1024 + 1024;
  EXPECT_EQ(cand->reason, "horizontal fusion would raise the simulated peak from " +
                              std::to_string(before) + " to " + std::to_string(before + 16384) +
                              " bytes (Definition 7.5)");
  for (const auto& k : s->schedule.kernels) EXPECT_EQ(k.members().size(), 1u) << k.name;
}

TEST(FusionPeak, HorizontalFusionThatKeepsThePeakIsAccepted) {
  // The same, but only a small row sum of z runs between a and b: b's result, live earlier,
  // raises that step's live bytes, not the peak (the exp's steps, after both).
  auto s = testing::schedule_text(R"(
def f(x: f32[64, 64], z: f32[64, 64], y: f32[256, 256]):
    a = mul(x, 2.0)
    c = sum(z, dim=[1])
    b = mul(x, 3.0)
    e = exp(y)
    s = sum(e, dim=[1])
    m = amax(e, dim=[0])
    return a, c, b, s, m
)");
  const auto* cand = find_candidate(s->schedule, "op0", "op2");
  ASSERT_NE(cand, nullptr);
  EXPECT_TRUE(cand->fused) << cand->reason;
  EXPECT_EQ(cand->reason, "SAME_VARS_REDUCE");
  // The merge leaves the simulated peak exactly where it was (a refusal at equality would
  // refuse it).
  std::vector<FusedNode> groups;
  for (const auto& n : s->schedule.nodes) {
    groups.push_back(group(s->schedule.nodes, n.id, n.id + 1));
  }
  std::set<std::string> returned;
  for (const auto& out : s->lowered.outputs) returned.insert(out.buffer);
  const MergePeak peak(predicted_storage_dag(s->schedule.nodes, groups, returned, {}));
  EXPECT_EQ(peak.merged_peak(0, 2), peak.peak());
  EXPECT_GT(peak.merged_peak(0, 2).value(), 0);
}

// The peak check is made again when a round fuses a horizontal pair after other fusions:
// two pairs (a, b over x; a2, b2 over w) that each keep the peak alone (their results live
// through the first exp's steps, 16 KiB each) raise it together above the second exp's steps.
TEST(FusionPeak, ARoundsEarlierFusionsCountInTheCheckOfALaterHorizontalPair) {
  auto s = testing::schedule_text(R"(
def f(x: f32[64, 64], w: f32[64, 64], y: f32[256, 256], y2: f32[248, 256]):
    a = mul(x, 2.0)
    a2 = mul(w, 2.0)
    e = exp(y)
    s = sum(e, dim=[1])
    m = amax(e, dim=[0])
    b = mul(x, 3.0)
    b2 = mul(w, 3.0)
    e2 = exp(y2)
    s2 = sum(e2, dim=[1])
    m2 = amax(e2, dim=[0])
    return a, a2, s, m, b, b2, s2, m2
)");
  const FusionRoundLog& round = s->schedule.fusion_log.rounds.at(0);
  const FusionCandidateLog* first = nullptr;
  const FusionCandidateLog* second = nullptr;
  for (const auto& c : round.candidates) {
    if (c.first == "op0" && c.second == "op5") first = &c;
    if (c.first == "op1" && c.second == "op6") second = &c;
  }
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  // Both pass line 3's check against the round's starting groups.
  EXPECT_TRUE(first->legal && second->legal);
  EXPECT_TRUE(first->fused);
  EXPECT_FALSE(second->fused);
  EXPECT_NE(second->reason.find("after this round's earlier fusions it would raise the simulated "
                                "peak"),
            std::string::npos)
      << second->reason;
  for (const auto& k : s->schedule.kernels) EXPECT_NE(k.name, "op1_op6");
}

}  // namespace
}  // namespace stax::scheduler
