// Algorithm 7.1.
#include "scheduler/greedy_fusion.h"

#include <algorithm>
#include <map>
#include <set>

#include "scheduler/cycle_check.h"

namespace stax::scheduler {

namespace {

std::string describe(const FusedNode& f, const FusedNode& a, const FusedNode& b) {
  return f.name + ": " + f.kind_name() + "(" + a.kind_name() + "," + b.kind_name() + ")";
}

struct Candidate {
  size_t a;
  size_t b;
  FusionDecision decision;
};

}  // namespace

void greedy_fusion(const std::vector<SchedulerNode>& nodes, std::vector<FusedNode>& groups,
                   FusionLog& log, const FusionLimits& limits) {
  FusionRules rules(nodes, limits);
  // Predecessors by buffer: a node depends on the writer of every buffer it reads.
  std::map<std::string, int> writer;
  for (const auto& n : nodes) writer[n.write.buffer] = n.id;
  std::vector<std::set<int>> preds(nodes.size());
  for (const auto& n : nodes) {
    for (const auto& r : n.reads) {
      if (auto it = writer.find(r.buffer); it != writer.end()) {
        preds[static_cast<size_t>(n.id)].insert(it->second);
      }
    }
  }
  CycleChecker cycles(preds);

  for (int round = 1; round <= kMaxFusionRounds; ++round) {
    FusionRoundLog round_log;
    round_log.round = round;
    // Line 2: pairs that share at least one buffer.
    std::map<std::string, std::vector<size_t>> users;
    for (size_t g = 0; g < groups.size(); ++g) {
      std::set<std::string> seen;
      for (int id : groups[g].members()) {
        for (const auto& b : nodes[static_cast<size_t>(id)].buffers()) {
          if (seen.insert(b).second) users[b].push_back(g);
        }
      }
    }
    std::set<std::pair<size_t, size_t>> pairs;
    for (const auto& [buffer, gs] : users) {
      for (size_t i = 0; i < gs.size(); ++i) {
        for (size_t j = i + 1; j < gs.size(); ++j) pairs.insert({gs[i], gs[j]});
      }
    }
    // Line 3: keep the legal ones; line 4: rank them. Insertion sort, because the 16x
    // exception makes the ranking relation non-transitive, which std::sort does not allow.
    std::vector<Candidate> legal;
    std::vector<Candidate> refused;
    for (auto [a, b] : pairs) {
      Candidate c{a, b, rules.can_fuse(groups[a], groups[b])};
      if (!c.decision.accepted) {
        refused.push_back(std::move(c));
        continue;
      }
      auto pos = legal.begin();
      while (pos != legal.end() && !ranks_higher(c.decision.score, pos->decision.score)) ++pos;
      legal.insert(pos, std::move(c));
    }
    round_log.possible = static_cast<int>(legal.size());

    // Lines 5-7.
    std::set<size_t> fused_this_round;
    std::vector<FusedNode> created;
    for (const Candidate& c : legal) {
      FusionCandidateLog entry{groups[c.a].name,  groups[c.b].name, true, false,
                               c.decision.reason, c.decision.score};
      if (fused_this_round.count(c.a) || fused_this_round.count(c.b)) {
        entry.reason += " (skipped: already fused this round)";
      } else if (cycles.would_create_cycle(groups[c.a].members()[0], groups[c.b].members()[0])) {
        entry.reason += " (skipped: fusion would create a cycle, Proposition 7.1)";
      } else {
        entry.fused = true;
        fused_this_round.insert(c.a);
        fused_this_round.insert(c.b);
        cycles.merge(groups[c.a].members()[0], groups[c.b].members()[0]);
        created.push_back(c.decision.fused);
        round_log.fused.push_back(describe(c.decision.fused, groups[c.a], groups[c.b]));
      }
      round_log.candidates.push_back(std::move(entry));
    }
    for (const Candidate& c : refused) {
      round_log.candidates.push_back(
          {groups[c.a].name, groups[c.b].name, false, false, c.decision.reason, c.decision.score});
    }
    log.rounds.push_back(std::move(round_log));
    if (created.empty()) break;  // line 8

    std::vector<FusedNode> next;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (!fused_this_round.count(g)) next.push_back(std::move(groups[g]));
    }
    for (auto& f : created) next.push_back(std::move(f));
    std::sort(next.begin(), next.end(), [&](const FusedNode& x, const FusedNode& y) {
      return rules.position(x) < rules.position(y);
    });
    groups = std::move(next);
  }
}

}  // namespace stax::scheduler
