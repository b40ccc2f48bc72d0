// The graph nodes composed into a value's loader, for provenance (source_op.h). Values share
// them as they share loaders: a value's set is its own node over its operands' sets, made in
// O(1) (a DAG, never a copied list), and flattened only when a buffer stores the value, so a
// long chain of views costs linear time, not quadratic.
#pragma once

#include <memory>
#include <vector>

namespace stax::lowering {

class ComposedNodes {
 public:
  ComposedNodes() = default;  // nothing composed: a load of stored data
  // Graph node `node` composed over what `operands` composed.
  ComposedNodes(int node, std::vector<ComposedNodes> operands);

  // Every node reachable, each once, ascending (graph order).
  std::vector<int> flatten() const;

 private:
  struct Entry {
    int node;
    std::vector<ComposedNodes> operands;
  };
  std::shared_ptr<const Entry> entry_;
};

}  // namespace stax::lowering
