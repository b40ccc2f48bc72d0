// The cycle test of Proposition 7.1 on ancestor sets: merging fused nodes a and b creates a
// cycle iff some third node c is a descendant of one and an ancestor of the other. Ancestor
// sets of the original nodes are computed once; after fusions, new ancestor relations arise
// only through fused nodes, so a query widens the sets by searching upward through them.
#pragma once

#include <cstddef>
#include <set>
#include <vector>

namespace stax::scheduler {

class CycleChecker {
 public:
  // preds[v]: the direct predecessors of node v (nodes are 0..n-1).
  explicit CycleChecker(const std::vector<std::set<int>>& preds);

  // Merges the groups containing a and b (after the caller checked would_create_cycle).
  void merge(int a, int b);
  // Whether merging the groups of a and b would create a cycle (Proposition 7.1).
  bool would_create_cycle(int a, int b) const;
  int group_of(int v) const { return group_[static_cast<size_t>(v)]; }
  const std::set<int>& ancestors(int v) const { return ancestors_[static_cast<size_t>(v)]; }

 private:
  // Groups that can reach any member of `group`, through fused groups.
  std::set<int> group_ancestors(int group) const;

  std::vector<std::set<int>> ancestors_;   // of original nodes
  std::vector<int> group_;                 // node -> group id
  std::vector<std::vector<int>> members_;  // group id -> nodes
};

}  // namespace stax::scheduler
