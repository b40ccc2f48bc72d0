// Ancestor sets and the Proposition 7.1 query.
#include "scheduler/cycle_check.h"

#include <algorithm>
#include <stdexcept>

namespace stax::scheduler {

CycleChecker::CycleChecker(const std::vector<std::set<int>>& preds)
    : ancestors_(preds.size()), group_(preds.size()), members_(preds.size()) {
  // Nodes are numbered in a topological order only when built by the scheduler; do not rely
  // on it: compute ancestors by memoized depth-first search.
  std::vector<int> state(preds.size(), 0);  // 0 new, 1 visiting, 2 done
  std::vector<std::pair<int, bool>> stack;
  for (size_t root = 0; root < preds.size(); ++root) {
    if (state[root]) continue;
    stack.push_back({static_cast<int>(root), false});
    while (!stack.empty()) {
      auto [v, expanded] = stack.back();
      stack.pop_back();
      const auto vi = static_cast<size_t>(v);
      if (expanded) {
        for (int p : preds[vi]) {
          ancestors_[vi].insert(p);
          const auto& pa = ancestors_[static_cast<size_t>(p)];
          ancestors_[vi].insert(pa.begin(), pa.end());
        }
        state[vi] = 2;
        continue;
      }
      if (state[vi] == 2) continue;
      if (state[vi] == 1) throw std::logic_error("dependence graph has a cycle");
      state[vi] = 1;
      stack.push_back({v, true});
      for (int p : preds[vi]) {
        if (state[static_cast<size_t>(p)] == 0)
          stack.push_back({p, false});
        else if (state[static_cast<size_t>(p)] == 1)
          throw std::logic_error("dependence graph has a cycle");
      }
    }
  }
  for (size_t v = 0; v < preds.size(); ++v) {
    group_[v] = static_cast<int>(v);
    members_[v] = {static_cast<int>(v)};
  }
}

std::set<int> CycleChecker::group_ancestors(int group) const {
  std::set<int> result;
  std::vector<int> todo = {group};
  std::set<int> expanded;
  while (!todo.empty()) {
    const int g = todo.back();
    todo.pop_back();
    if (!expanded.insert(g).second) continue;
    for (int m : members_[static_cast<size_t>(g)]) {
      for (int anc : ancestors_[static_cast<size_t>(m)]) {
        const int ag = group_[static_cast<size_t>(anc)];
        if (ag == group) continue;
        if (result.insert(ag).second && members_[static_cast<size_t>(ag)].size() > 1) {
          todo.push_back(ag);  // a fused group: its other members' ancestors count too
        }
      }
    }
  }
  return result;
}

bool CycleChecker::would_create_cycle(int a, int b) const {
  const int ga = group_of(a);
  const int gb = group_of(b);
  if (ga == gb) return false;
  // A path between a and b through a third group c: c is an ancestor of one of them, and
  // the other is an ancestor of c.
  for (auto [lo, hi] : {std::pair{ga, gb}, std::pair{gb, ga}}) {
    for (int c : group_ancestors(hi)) {
      if (c == lo) continue;
      if (group_ancestors(c).count(lo)) return true;
    }
  }
  return false;
}

void CycleChecker::merge(int a, int b) {
  const int ga = group_of(a);
  const int gb = group_of(b);
  if (ga == gb) return;
  for (int m : members_[static_cast<size_t>(gb)]) {
    group_[static_cast<size_t>(m)] = ga;
    members_[static_cast<size_t>(ga)].push_back(m);
  }
  members_[static_cast<size_t>(gb)].clear();
}

}  // namespace stax::scheduler
