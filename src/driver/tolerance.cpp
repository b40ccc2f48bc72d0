// Comparison tolerances derived from the dtype's precision and the sums feeding each output.
#include "driver/tolerance.h"

#include <cmath>
#include <set>

#include "ir/op_schema.h"
#include "kernel/cascade_blocking.h"

namespace stax {

namespace {

struct Base {
  double rtol;
  double atol;
  double unit_roundoff;  // of the type sums accumulate in
};

// PyTorch's assert_close defaults; f16 and bf16 sums accumulate in float32.
Base base_tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return {1e-7, 1e-7, std::ldexp(1.0, -53)};
    case DType::Float32:
      return {1.3e-6, 1e-5, std::ldexp(1.0, -24)};
    case DType::Float16:
      return {1e-3, 1e-5, std::ldexp(1.0, -24)};
    case DType::BFloat16:
      return {1.6e-2, 1e-5, std::ldexp(1.0, -24)};
    default:
      return {0.0, 0.0, 0.0};
  }
}

// Elements folded into each output element of a reduction node.
int64_t reduction_length(const ir::Graph& graph, const ir::Node& node) {
  const auto& sizes = ir::tensor_arg(graph, node, 0).type.sizes;
  int64_t n = 1;
  for (int64_t d : ir::reduction_dims(ir::int_list_arg(node, 1), sizes.size(), node.op)) {
    n *= sizes[static_cast<size_t>(d)];
  }
  return n;
}

// The sum and mean nodes among the ancestors of `value` (each once).
void collect_sums(const ir::Graph& graph, ir::ValueRef value, std::set<int>& visited,
                  std::vector<int64_t>& lengths) {
  const int producer = graph.value(value).producer;
  if (producer < 0 || !visited.insert(producer).second) return;
  const ir::Node& node = graph.nodes()[static_cast<size_t>(producer)];
  if (node.op == "sum" || node.op == "mean") lengths.push_back(reduction_length(graph, node));
  for (const ir::Arg& arg : node.args) {
    if (const auto* ref = std::get_if<ir::ValueRef>(&arg)) {
      collect_sums(graph, *ref, visited, lengths);
    }
  }
}

}  // namespace

Tolerance value_tolerance(DType dtype, const std::vector<int64_t>& sum_lengths) {
  const Base base = base_tolerance(dtype);
  double variance = base.rtol * base.rtol;
  for (int64_t length : sum_lengths) {
    const double allowance = 4.0 * base.unit_roundoff *
                             std::sqrt(static_cast<double>(kernel::cascade_error_chain(length))) /
                             3.0;
    variance += allowance * allowance;
  }
  return {std::sqrt(variance), base.atol};
}

std::vector<Tolerance> output_tolerances(const ir::Graph& graph) {
  std::vector<Tolerance> out;
  for (ir::ValueRef output : graph.outputs()) {
    std::set<int> visited;
    std::vector<int64_t> lengths;
    collect_sums(graph, output, visited, lengths);
    out.push_back(value_tolerance(graph.value(output).type.dtype, lengths));
  }
  return out;
}

}  // namespace stax
