// Binding the size symbols of a symbolic graph (issue 33, ir/symbolic_shapes.h) to the values
// of one call: the static graph that call runs. The eager interpreter runs symbolic graphs
// this way, and `stax run --sizes` compiles the bound graph until the compiled path takes
// symbols itself (docs/symbolic_sizes.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace stax::graph_passes {

// Every symbol replaced by its value. Throws ir::GraphError naming the symbol when a value is
// missing, unknown or breaks the symbol's facts, and naming the op when a static rule refuses
// the bound sizes.
ir::Graph bind_sizes(const ir::Graph& graph, const std::map<std::string, int64_t>& values);

}  // namespace stax::graph_passes
