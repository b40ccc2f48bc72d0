// bind_sizes (bind_sizes.h): the graph copied node by node onto inputs of the bound sizes, so
// that every static shape rule checks the call's sizes again.
#include "graph_passes/bind_sizes.h"

#include "graph_passes/rebuild_graph.h"
#include "ir/symbolic_shapes.h"

namespace stax::graph_passes {

ir::Graph bind_sizes(const ir::Graph& graph, const std::map<std::string, int64_t>& values) {
  ir::check_size_values(graph, values, /*require_all=*/true);
  GraphRebuild rebuild(graph, &values);
  for (size_t k = 0; k < graph.nodes().size(); ++k) k = rebuild.copy_node(k);
  return rebuild.finish();
}

}  // namespace stax::graph_passes
