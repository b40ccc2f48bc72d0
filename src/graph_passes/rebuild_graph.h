// Copying a graph node by node into a new one, for passes that replace some values: the copy
// keeps every name, type, location and argument, and maps the old graph's values to the new
// graph's.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace stax::graph_passes {

class GraphRebuild {
 public:
  // The new graph has `from`'s name, size symbols and inputs; nodes are added by the caller.
  // With `bound_sizes`, every size symbol takes its value there instead (bind_sizes.h): the
  // new graph is static.
  explicit GraphRebuild(const ir::Graph& from,
                        const std::map<std::string, int64_t>* bound_sizes = nullptr);

  // Copies node `k` of the old graph (and, for a multi-result op, its further results, which
  // follow it); returns the index of the last old node copied.
  size_t copy_node(size_t k);
  // The new graph's value for an old value (copied or mapped).
  ir::ValueRef operator[](ir::ValueRef old) const;
  // From now on, uses of `old` read `replacement` (a value of the new graph).
  void map(ir::ValueRef old, ir::ValueRef replacement);
  // A name in neither graph, from `base`.
  std::string fresh_name(const std::string& base) const;
  // Adds a node to the new graph with old-graph operands already mapped by the caller.
  ir::ValueRef add(const std::string& op, std::vector<ir::Arg> args,
                   std::vector<std::pair<std::string, ir::Arg>> kwargs, const std::string& name);

  // Sets the outputs (mapped) and gives the graph away.
  ir::Graph finish();

 private:
  ir::Arg mapped(const ir::Arg& arg) const;

  const ir::Graph& from_;
  ir::Graph to_;
  std::vector<int> map_;  // old value index -> new value index (-1: none yet)
  const std::map<std::string, int64_t>* bound_sizes_ = nullptr;
};

}  // namespace stax::graph_passes
