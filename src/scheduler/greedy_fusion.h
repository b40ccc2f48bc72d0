// Algorithm 7.1, greedy fusion: at most 10 rounds; candidates are pairs of fused nodes that
// share a buffer; legal ones (FusionRules::can_fuse, whose peak check simulates each round's
// groups, fusion_peak.h) are ranked by score (τ, σ, ω, −δ) and merged best first, each node at
// most once per round and never into a cycle (Proposition 7.1). Every decision is logged with
// its reason.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "scheduler/fusion_rules.h"
#include "scheduler/peak_model.h"

namespace stax::scheduler {

struct FusionCandidateLog {
  std::string first;
  std::string second;
  bool legal = false;
  bool fused = false;
  std::string reason;  // the fusion reason, or why it was refused
  FusionScore score;
};

struct FusionRoundLog {
  int round = 0;
  int possible = 0;                            // legal candidates ("found N possible fusions")
  std::vector<FusionCandidateLog> candidates;  // in rank order (legal first)
  std::vector<std::string> fused;              // "op0_op1: OuterLoopFusedSchedulerNode(...)"
};

struct FusionLog {
  std::vector<FusionRoundLog> rounds;
};

// Line 1 of Algorithm 7.1 and step 4 of Section 7.6: "at most 10 rounds".
constexpr int kMaxFusionRounds = 10;

// `groups` starts as one fused node per live scheduler node, in execution order; on return it
// holds the fused nodes, ordered by their first member. `outputs`: the buffers the graph
// returns (live to the end in the peak simulation); `storage`: what step 6 will do with each
// buffer, which the peak simulation counts (peak_model.h).
void greedy_fusion(const std::vector<SchedulerNode>& nodes, std::vector<FusedNode>& groups,
                   const std::set<std::string>& outputs, FusionLog& log,
                   const FusionLimits& limits = {}, const StorageOptions& storage = {});

}  // namespace stax::scheduler
