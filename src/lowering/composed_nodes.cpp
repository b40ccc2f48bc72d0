// Flattening the DAG of composed graph nodes (composed_nodes.h).
#include "lowering/composed_nodes.h"

#include <algorithm>
#include <unordered_set>

namespace stax::lowering {

ComposedNodes::ComposedNodes(int node, std::vector<ComposedNodes> operands)
    : entry_(std::make_shared<const Entry>(Entry{node, std::move(operands)})) {}

std::vector<int> ComposedNodes::flatten() const {
  std::vector<int> nodes;
  std::unordered_set<const Entry*> seen;
  // Iterative: a chain of views is as deep as the graph is long.
  std::vector<const Entry*> pending;
  if (entry_) pending.push_back(entry_.get());
  while (!pending.empty()) {
    const Entry* e = pending.back();
    pending.pop_back();
    if (!seen.insert(e).second) continue;
    nodes.push_back(e->node);
    for (const ComposedNodes& operand : e->operands) {
      if (operand.entry_) pending.push_back(operand.entry_.get());
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

}  // namespace stax::lowering
