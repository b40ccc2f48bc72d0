// The Proposition 7.1 query on a maintained topological order of the quotient graph.
#include "scheduler/cycle_check.h"

#include <algorithm>
#include <stdexcept>

namespace stax::scheduler {

CycleChecker::CycleChecker(const std::vector<std::set<int>>& preds)
    : preds_(preds.size()),
      succs_(preds.size()),
      group_(preds.size()),
      members_(preds.size()),
      order_(preds.size(), -1) {
  for (size_t v = 0; v < preds.size(); ++v) {
    for (int p : preds[v]) {
      preds_[v].push_back(p);
      succs_[static_cast<size_t>(p)].push_back(static_cast<int>(v));
    }
    group_[v] = static_cast<int>(v);
    members_[v] = {static_cast<int>(v)};
  }
  // Kahn's algorithm: callers need not number nodes topologically.
  std::vector<size_t> indegree(preds.size());
  std::vector<int> ready;
  for (size_t v = 0; v < preds.size(); ++v) {
    indegree[v] = preds_[v].size();
    if (indegree[v] == 0) ready.push_back(static_cast<int>(v));
  }
  int next = 0;
  while (!ready.empty()) {
    const int v = ready.back();
    ready.pop_back();
    order_[static_cast<size_t>(v)] = next++;
    for (int s : succs_[static_cast<size_t>(v)]) {
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
  }
  if (next != static_cast<int>(preds.size())) {
    throw std::logic_error("dependence graph has a cycle");
  }
}

std::vector<int> CycleChecker::region_search(int from, int to, bool forward, bool& found) const {
  const int lo = std::min(order_[static_cast<size_t>(from)], order_[static_cast<size_t>(to)]);
  const int hi = std::max(order_[static_cast<size_t>(from)], order_[static_cast<size_t>(to)]);
  const auto& edges = forward ? succs_ : preds_;
  std::vector<int> region;
  std::set<int> seen;
  std::vector<int> todo = {from};
  while (!todo.empty()) {
    const int g = todo.back();
    todo.pop_back();
    for (int m : members_[static_cast<size_t>(g)]) {
      for (int next : edges[static_cast<size_t>(m)]) {
        const int h = group_[static_cast<size_t>(next)];
        if (h == g) continue;
        if (h == to) {
          if (g != from) found = true;  // from -> g -> ... -> to through a third group
          continue;
        }
        const int pos = order_[static_cast<size_t>(h)];
        if (pos <= lo || pos >= hi || !seen.insert(h).second) continue;
        region.push_back(h);
        todo.push_back(h);
      }
    }
  }
  return region;
}

bool CycleChecker::would_create_cycle(int a, int b) const {
  int ga = group_of(a);
  int gb = group_of(b);
  if (ga == gb) return false;
  if (order_[static_cast<size_t>(ga)] > order_[static_cast<size_t>(gb)]) std::swap(ga, gb);
  // In a topological order every path from ga to gb stays strictly between them.
  bool found = false;
  region_search(ga, gb, /*forward=*/true, found);
  return found;
}

void CycleChecker::merge(int a, int b) {
  int ga = group_of(a);
  int gb = group_of(b);
  if (ga == gb) return;
  if (order_[static_cast<size_t>(ga)] > order_[static_cast<size_t>(gb)]) std::swap(ga, gb);
  bool found = false;
  std::vector<int> after = region_search(ga, gb, /*forward=*/true, found);
  std::vector<int> before = region_search(gb, ga, /*forward=*/false, found);
  if (found) throw std::logic_error("merging these groups would create a cycle");
  // Reuse the positions of everything that moves: groups reaching gb first, then the merged
  // group, then groups reachable from ga, each set in its old relative order. Every moved
  // group before the merged one only moves earlier and every one after it only later, so
  // their edges to the groups that stay keep pointing forward.
  auto by_order = [&](int x, int y) {
    return order_[static_cast<size_t>(x)] < order_[static_cast<size_t>(y)];
  };
  std::sort(before.begin(), before.end(), by_order);
  std::sort(after.begin(), after.end(), by_order);
  std::vector<int> slots = {order_[static_cast<size_t>(ga)], order_[static_cast<size_t>(gb)]};
  for (int g : before) slots.push_back(order_[static_cast<size_t>(g)]);
  for (int g : after) slots.push_back(order_[static_cast<size_t>(g)]);
  std::sort(slots.begin(), slots.end());
  // The merged group keeps the id of the larger member list, so that moving members costs
  // O(n log n) over all merges.
  const bool keep_a =
      members_[static_cast<size_t>(ga)].size() >= members_[static_cast<size_t>(gb)].size();
  const int kept = keep_a ? ga : gb;
  const int dropped = keep_a ? gb : ga;
  size_t k = 0;
  for (int g : before) order_[static_cast<size_t>(g)] = slots[k++];
  order_[static_cast<size_t>(kept)] = slots[k++];
  ++k;  // one slot goes unused: the merged group has one position
  for (int g : after) order_[static_cast<size_t>(g)] = slots[k++];
  order_[static_cast<size_t>(dropped)] = -1;
  for (int m : members_[static_cast<size_t>(dropped)]) {
    group_[static_cast<size_t>(m)] = kept;
    members_[static_cast<size_t>(kept)].push_back(m);
  }
  members_[static_cast<size_t>(dropped)].clear();
}

}  // namespace stax::scheduler
