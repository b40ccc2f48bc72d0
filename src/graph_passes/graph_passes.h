// The graph passes: rewrites of the graph IR that run before lowering and change which ops
// compute a value, each decided by a cost model and logged with its reason (`stax explain`
// shows the log under "lowering"). They are listed in order in graph_passes.cpp. Nothing
// device-specific lives here: what the target's runtime can do and how it blocks its work
// comes in through GraphPassOptions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace stax::graph_passes {

// How the target's runtime attention blocks one (batch, head) pair's work: query rows per
// block and keys per block.
struct AttentionBlocking {
  int64_t query_rows = 0;
  int64_t keys = 0;
};

struct GraphPassOptions {
  // The runtime attention's blocking for query length Lq, key length Lk, head sizes E and Ev
  // and the dtype, or nullopt when the target runs no such attention (the written-out
  // attention then stays as it is). Empty: none.
  std::function<std::optional<AttentionBlocking>(int64_t lq, int64_t lk, int64_t e, int64_t ev,
                                                 DType dtype)>
      attention_blocks;
  // Called after every pass with its name and the graph (STAX_LOGS=graph_passes).
  std::function<void(const std::string& pass, const ir::Graph& graph)> after_pass;
};

struct GraphPassResult {
  ir::Graph graph;
  std::vector<std::string> log;  // one line per decision, with its reason
};

GraphPassResult run_graph_passes(const ir::Graph& graph, const GraphPassOptions& options);

}  // namespace stax::graph_passes
