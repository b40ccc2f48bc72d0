// The tolerance of an output against its eager reference (see reference_tolerance.h).
#include "fuzz/reference_tolerance.h"

#include <cmath>
#include <set>

#include "ir/op_schema.h"

namespace stax::fuzz {

namespace {

// Elements folded into each output element of a reduction node: the dims of its `dim`
// argument (an int, a list, or None / [] for all dims).
double reduction_length(const ir::Graph& graph, const ir::Node& node) {
  const std::vector<int64_t>& sizes = ir::tensor_arg(graph, node, 0).type.sizes;
  const ir::OpSchema* schema = ir::find_op_schema(node.op);
  std::optional<std::vector<int64_t>> dims;
  for (size_t p = 0; schema != nullptr && p < schema->params.size() && p < node.args.size(); ++p) {
    if (schema->params[p].name != "dim") continue;
    if (const auto* one = std::get_if<int64_t>(&node.args[p])) dims = std::vector<int64_t>{*one};
    if (const auto* many = std::get_if<std::vector<int64_t>>(&node.args[p])) dims = *many;
  }
  double n = 1;
  for (int64_t d : ir::reduction_dims(dims, sizes.size(), node.op)) {
    n *= static_cast<double>(sizes[static_cast<size_t>(d)]);
  }
  return n;
}

double accumulation_roundoff(DType dtype) {
  return std::ldexp(1.0, dtype == DType::Float64 ? -53 : -24);
}

// Sum of squared allowances of the accumulating reductions among the ancestors of `value`.
double extra_variance(const ir::Graph& graph, ir::ValueRef value, double u, std::set<int>& seen) {
  const int producer = graph.value(value).producer;
  if (producer < 0 || !seen.insert(producer).second) return 0.0;
  const ir::Node& node = graph.nodes()[static_cast<size_t>(producer)];
  double variance = 0.0;
  const bool sum_like =
      node.op == "var" || node.op == "std" || node.op == "var_mean" || node.op == "logsumexp";
  if (sum_like || node.op == "prod") {
    const double length = reduction_length(graph, node);
    const double allowance = 4.0 * u * std::sqrt(length) / (sum_like ? 3.0 : std::sqrt(3.0));
    variance += allowance * allowance;
  }
  for (const ir::Arg& arg : node.args) {
    if (const auto* ref = std::get_if<ir::ValueRef>(&arg)) {
      variance += extra_variance(graph, *ref, u, seen);
    }
  }
  return variance;
}

}  // namespace

Tolerance reference_tolerance(const ir::Graph& graph, size_t output) {
  Tolerance tol = output_tolerances(graph).at(output);
  const ir::ValueRef ref = graph.outputs().at(output);
  const DType dtype = graph.value(ref).type.dtype;
  if (!is_floating(dtype)) return tol;
  std::set<int> seen;
  const double extra = extra_variance(graph, ref, accumulation_roundoff(dtype), seen);
  tol.rtol = std::sqrt(tol.rtol * tol.rtol + extra);
  return tol;
}

}  // namespace stax::fuzz
