// The graph passes, in order (graph_passes.h).
#include "graph_passes/graph_passes.h"

#include "graph_passes/fuse_written_attention.h"

namespace stax::graph_passes {

GraphPassResult run_graph_passes(const ir::Graph& graph, const GraphPassOptions& options) {
  GraphPassResult result{graph, {}};
  auto after = [&](const char* pass) {
    if (options.after_pass) options.after_pass(pass, result.graph);
  };
  // Issue 15, point 1: matmul -> scale -> mask -> softmax -> matmul as one blocked attention
  // where the cost model finds that it moves fewer bytes.
  result.graph = fuse_written_attention(result.graph, options, result.log);
  after("fuse_written_attention");
  return result;
}

}  // namespace stax::graph_passes
