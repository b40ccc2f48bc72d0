// The cycle test of Proposition 7.1: merging fused nodes a and b creates a cycle iff some
// third node c is a descendant of one and an ancestor of the other. The checker keeps a
// topological order of the current groups (the quotient graph); with a before b in it, such
// a c can only lie strictly between them, so the test searches forward from a only through
// the groups ordered before b. A merge then repairs the order locally (the reordering step of
// Pearce and Kelly's dynamic topological sort: the groups between that reach b move before
// the merged group, those reachable from a after it). Both cost the size of that region, not
// of the graph, so a chain of n nodes fuses in O(n) where ancestor sets took O(n^2).
#pragma once

#include <cstddef>
#include <set>
#include <vector>

namespace stax::scheduler {

class CycleChecker {
 public:
  // preds[v]: the direct predecessors of node v (nodes are 0..n-1, in any order).
  explicit CycleChecker(const std::vector<std::set<int>>& preds);

  // Merges the groups containing a and b (after the caller checked would_create_cycle).
  void merge(int a, int b);
  // Whether merging the groups of a and b would create a cycle (Proposition 7.1).
  bool would_create_cycle(int a, int b) const;
  int group_of(int v) const { return group_[static_cast<size_t>(v)]; }

 private:
  // The groups ordered strictly between `from` and `to` that `from` reaches (forward) or
  // that reach `to` (backward), searching only inside that region; `found` is set when the
  // search meets the other end through a third group.
  std::vector<int> region_search(int from, int to, bool forward, bool& found) const;

  std::vector<std::vector<int>> preds_;    // of original nodes
  std::vector<std::vector<int>> succs_;    // of original nodes
  std::vector<int> group_;                 // node -> group id
  std::vector<std::vector<int>> members_;  // group id -> nodes
  std::vector<int> order_;                 // group id -> position in a topological order
};

}  // namespace stax::scheduler
