// Algorithm 7.1.
#include "scheduler/greedy_fusion.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "scheduler/cycle_check.h"
#include "scheduler/fusion_peak.h"
#include "scheduler/peak_model.h"

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

// Line 2 of Algorithm 7.1: the pairs of groups that share a buffer. Its writer is paired with
// every reader (a vertical pair). Its readers are paired only when at most `max_distance`
// apart in the original order: a buffer read by many groups (one input feeding thousands of
// outputs) would otherwise give a quadratic number of pairs, and the peak check of each
// horizontal pair walks the groups between the two (fusion_peak.h), so unbounded pairs would
// cost O(n^3) on such graphs. This bound is for compile time only; whether a pair within it
// may fuse is can_fuse's decision, by the simulated peak. Two readers that are also producer
// and consumer meet through the buffer between them.
std::vector<std::pair<size_t, size_t>> candidate_pairs(const std::vector<SchedulerNode>& nodes,
                                                       const std::vector<FusedNode>& groups,
                                                       const FusionRules& rules, int max_distance) {
  struct Users {
    std::optional<size_t> writer;
    std::vector<size_t> readers;  // in increasing position, as groups are
  };
  std::map<std::string, Users> users;
  std::vector<int> position(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    position[g] = rules.position(groups[g]);
    std::set<std::string> seen;
    for (int id : groups[g].members()) {
      const SchedulerNode& n = nodes[static_cast<size_t>(id)];
      users[n.write.buffer].writer = g;
      for (const auto& b : n.buffers()) {
        if (b != n.write.buffer && seen.insert(b).second) users[b].readers.push_back(g);
      }
    }
  }
  std::vector<std::pair<size_t, size_t>> pairs;
  auto add = [&](size_t a, size_t b) {
    if (a != b) pairs.push_back({std::min(a, b), std::max(a, b)});
  };
  for (auto& [buffer, u] : users) {
    std::sort(u.readers.begin(), u.readers.end(),
              [&](size_t x, size_t y) { return position[x] < position[y]; });
    u.readers.erase(std::unique(u.readers.begin(), u.readers.end()), u.readers.end());
    for (size_t i = 0; i < u.readers.size(); ++i) {
      if (u.writer) add(*u.writer, u.readers[i]);
      for (size_t j = i + 1; j < u.readers.size(); ++j) {
        if (position[u.readers[j]] - position[u.readers[i]] > max_distance) break;
        add(u.readers[i], u.readers[j]);
      }
    }
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

// Line 4: a stable merge sort by ranks_higher, best first. The 16x exception makes the
// ranking relation non-transitive, which std::sort and std::stable_sort do not allow; a
// merge written out here is well defined for any relation and takes O(n log n) where the
// insertion it replaces took O(n^2) moves.
std::vector<Candidate> rank_candidates(std::vector<Candidate> candidates) {
  std::vector<size_t> order(candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<size_t> merged(order.size());
  for (size_t width = 1; width < order.size(); width *= 2) {
    for (size_t lo = 0; lo < order.size(); lo += 2 * width) {
      const size_t mid = std::min(lo + width, order.size());
      const size_t hi = std::min(lo + 2 * width, order.size());
      size_t i = lo;
      size_t j = mid;
      size_t k = lo;
      while (i < mid && j < hi) {
        const bool right_first =
            ranks_higher(candidates[order[j]].decision.score, candidates[order[i]].decision.score);
        merged[k++] = right_first ? order[j++] : order[i++];
      }
      while (i < mid) merged[k++] = order[i++];
      while (j < hi) merged[k++] = order[j++];
    }
    std::swap(order, merged);
  }
  std::vector<Candidate> ranked;
  ranked.reserve(candidates.size());
  for (size_t i : order) ranked.push_back(std::move(candidates[i]));
  return ranked;
}

// The round's graph with the fusions accepted so far merged (`class_of`: each round node's
// class, named by its smallest node), numbered as successive merge_nodes calls would number
// it: by the smallest round node of each class. One pass over the graph, however many fusions.
MemoryDag merged_round(const MemoryDag& round, std::vector<int>& class_of,
                       std::vector<int>& node_of) {
  const auto n = class_of.size();
  auto find = [&](int v) {
    while (class_of[static_cast<size_t>(v)] != v) {
      class_of[static_cast<size_t>(v)] =
          class_of[static_cast<size_t>(class_of[static_cast<size_t>(v)])];
      v = class_of[static_cast<size_t>(v)];
    }
    return v;
  };
  std::vector<int> number(n, -1);
  int next = 0;
  for (size_t v = 0; v < n; ++v) {
    if (find(static_cast<int>(v)) == static_cast<int>(v)) number[v] = next++;
  }
  for (size_t v = 0; v < n; ++v)
    node_of[v] = number[static_cast<size_t>(find(static_cast<int>(v)))];
  MemoryDag out = round;
  out.num_nodes = next;
  for (MemoryDag::Buffer& b : out.buffers) {
    b.producer = node_of[static_cast<size_t>(b.producer)];
    for (int& r : b.readers) r = node_of[static_cast<size_t>(r)];
  }
  for (auto& [before, after] : out.extra_edges) {
    before = node_of[static_cast<size_t>(before)];
    after = node_of[static_cast<size_t>(after)];
  }
  return out;
}

}  // namespace

void greedy_fusion(const std::vector<SchedulerNode>& nodes, std::vector<FusedNode>& groups,
                   const std::set<std::string>& outputs, FusionLog& log, const FusionLimits& limits,
                   const StorageOptions& storage) {
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
  for (auto [before, after] : weak_edges(nodes)) preds[static_cast<size_t>(after)].insert(before);
  CycleChecker cycles(preds);

  // Line 1: at most ten rounds (Section 7.6, step 4).
  for (int round = 1; round <= kMaxFusionRounds; ++round) {
    FusionRoundLog round_log;
    round_log.round = round;
    // Line 2: pairs that share at least one buffer.
    const std::vector<std::pair<size_t, size_t>> pairs =
        candidate_pairs(nodes, groups, rules, limits.horizontal_pair_distance);
    // Definition 7.5 over this round's groups, for the horizontal pairs (fusion_peak.h), with
    // the storage step 6 would give them (peak_model.h).
    const MergePeak peak(predicted_storage_dag(nodes, groups, outputs, storage));
    // Line 3: keep the legal ones; line 4: rank them.
    std::vector<Candidate> legal;
    std::vector<Candidate> refused;
    for (auto [a, b] : pairs) {
      const RaisedPeak raised = [&peak, a, b]() -> std::optional<PeakChange> {
        const auto after = peak.raised_peak(static_cast<int>(a), static_cast<int>(b));
        if (!after) return std::nullopt;
        return PeakChange{peak.peak(), *after};
      };
      Candidate c{a, b, rules.can_fuse(groups[a], groups[b], raised)};
      (c.decision.accepted ? legal : refused).push_back(std::move(c));
    }
    legal = rank_candidates(std::move(legal));
    round_log.possible = static_cast<int>(legal.size());

    // Lines 5-7. The peak check of line 3 saw the round's starting groups; a horizontal pair
    // is checked again against the groups as this round's earlier fusions left them (`now`,
    // its nodes numbered as merge_nodes numbers them). `now` is built only when such a pair
    // comes after a fusion it has not seen: copying the round's graph at every fusion and
    // simulating it anew for every such pair made a round quadratic (issue 32).
    std::set<size_t> fused_this_round;
    std::vector<FusedNode> created;
    std::vector<int> class_of(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) class_of[g] = static_cast<int>(g);
    std::vector<int> node_of(groups.size());
    std::optional<MergePeak> now;
    bool now_stale = true;
    for (const Candidate& c : legal) {
      FusionCandidateLog entry{groups[c.a].name,  groups[c.b].name, true, false,
                               c.decision.reason, c.decision.score};
      // Only a pair that would otherwise fuse is checked again (building `now` costs O(n)).
      auto raised_now = [&]() -> std::optional<int64_t> {
        if (fused_this_round.empty() || c.decision.vertical) return std::nullopt;
        if (now_stale) {
          now.emplace(merged_round(peak.dag(), class_of, node_of));
          now_stale = false;
        }
        return now->raised_peak(node_of[c.a], node_of[c.b]);
      };
      std::optional<int64_t> raised;
      if (fused_this_round.count(c.a) || fused_this_round.count(c.b)) {
        entry.reason += " (skipped: already fused this round)";
      } else if (cycles.would_create_cycle(groups[c.a].members()[0], groups[c.b].members()[0])) {
        entry.reason += " (skipped: fusion would create a cycle, Proposition 7.1)";
      } else if ((raised = raised_now())) {
        entry.reason += " (skipped: after this round's earlier fusions it would raise the " +
                        std::string("simulated peak to ") + std::to_string(*raised) +
                        " bytes, Definition 7.5)";
      } else {
        // Neither was fused this round: each is its own class, named by itself.
        class_of[std::max(c.a, c.b)] = static_cast<int>(std::min(c.a, c.b));
        now_stale = true;
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
