// Algorithm 7.1, greedy fusion: at most 10 rounds; candidates are pairs of fused nodes that
// share a buffer; legal ones (FusionRules::can_fuse) are ranked by score (τ, σ, ω, −δ) and
// merged best first, each node at most once per round and never into a cycle
// (Proposition 7.1). Every decision is logged with its reason.
#pragma once

#include <string>
#include <vector>

#include "scheduler/fusion_rules.h"

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

constexpr int kMaxFusionRounds = 10;

// `groups` starts as one fused node per live scheduler node, in execution order; on return it
// holds the fused nodes, ordered by their first member.
void greedy_fusion(const std::vector<SchedulerNode>& nodes, std::vector<FusedNode>& groups,
                   FusionLog& log, const FusionLimits& limits = {});

}  // namespace stax::scheduler
