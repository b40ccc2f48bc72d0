// Comparison tolerances derived from the dtype's precision and reduction lengths.
#include "driver/tolerance.h"

#include <algorithm>
#include <cmath>

#include "ir/op_schema.h"

namespace stax {

int64_t longest_reduction(const ir::Graph& graph) {
  int64_t longest = 1;
  for (const ir::Node& node : graph.nodes()) {
    const ir::OpSchema* schema = ir::find_op_schema(node.op);
    if (schema == nullptr || schema->category != ir::OpCategory::Reduction) continue;
    const auto& sizes = ir::tensor_arg(graph, node, 0).type.sizes;
    int64_t n = 1;
    for (int64_t d : ir::reduction_dims(ir::int_list_arg(node, 1), sizes.size(), node.op)) {
      n *= sizes[static_cast<size_t>(d)];
    }
    longest = std::max(longest, n);
  }
  return longest;
}

Tolerance comparison_tolerance(DType dtype, int64_t reduction_length) {
  const double growth = std::sqrt(static_cast<double>(std::max<int64_t>(reduction_length, 1)));
  switch (dtype) {
    case DType::Float64:
      return {1e-7 * growth, 1e-7 * growth};
    case DType::Float32:
      return {1.3e-6 * growth, 1e-5 * growth};
    case DType::Float16:
      return {1e-3 * growth, 1e-5 * growth};
    case DType::BFloat16:
      return {1.6e-2 * growth, 1e-5 * growth};
    default:
      return {0.0, 0.0};  // integers and bool compare exactly
  }
}

}  // namespace stax
