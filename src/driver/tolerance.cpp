// Comparison tolerances derived from the dtype's precision and the sums feeding each output.
#include "driver/tolerance.h"

#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "ir/attention_args.h"
#include "ir/contraction_args.h"
#include "ir/convolution_args.h"
#include "ir/op_schema.h"
#include "ir/pooling_args.h"
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

// Elements folded into each output element of a reduction node: the dims of its `dim`
// argument (an int, a list, or None / [] for all dims).
int64_t reduction_length(const ir::Graph& graph, const ir::Node& node) {
  const std::vector<int64_t>& sizes = ir::tensor_arg(graph, node, 0).type.sizes;
  const ir::OpSchema* schema = ir::find_op_schema(node.op);
  std::optional<std::vector<int64_t>> dims;
  for (size_t p = 0; schema != nullptr && p < schema->params.size() && p < node.args.size(); ++p) {
    if (schema->params[p].name != "dim") continue;
    if (const auto* one = std::get_if<int64_t>(&node.args[p])) dims = std::vector<int64_t>{*one};
    if (const auto* many = std::get_if<std::vector<int64_t>>(&node.args[p])) dims = *many;
  }
  int64_t n = 1;
  for (int64_t d : ir::reduction_dims(dims, sizes.size(), node.op)) {
    n *= sizes[static_cast<size_t>(d)];
  }
  return n;
}

// The ways a reduction or a contraction accumulates rounding errors (tolerance.h).
enum class Accumulation { CascadeSum, PlainSum, Product, Contraction };

struct AccumulatingReduction {
  Accumulation kind;
  int64_t length;
  double unit_roundoff = 0;  // of the type it accumulates in, where not the base's
};

std::optional<Accumulation> accumulation_of(const std::string& op) {
  // A convolution sums products per output element like a contraction (tolerance.h).
  if (const ir::OpSchema* schema = ir::find_op_schema(op);
      schema != nullptr && (schema->category == ir::OpCategory::Contraction ||
                            schema->category == ir::OpCategory::Convolution)) {
    return Accumulation::Contraction;
  }
  if (op == "sum" || op == "mean") return Accumulation::CascadeSum;
  if (op == "var" || op == "std" || op == "var_mean" || op == "logsumexp") {
    return Accumulation::PlainSum;
  }
  if (op == "prod") return Accumulation::Product;
  // The average pools add each window's elements in one plain chain (a sum of at most the
  // window's elements: ir::PoolingArgs::window_elements) before dividing; max pooling is exact.
  if (op == "avg_pool2d" || op == "_adaptive_avg_pool2d") return Accumulation::PlainSum;
  // Their backward ops add each element's terms (ir::PoolingArgs::summed_terms) in one chain,
  // in the dtype itself (a 16-bit sum rounded after each addition).
  if (op == "max_pool2d_with_indices_backward" || op == "avg_pool2d_backward" ||
      op == "_adaptive_avg_pool2d_backward") {
    return Accumulation::PlainSum;
  }
  return std::nullopt;
}

// The accumulating reductions among the ancestors of `value` (each node once), through
// tensor and tensor-list arguments.
void collect_reductions(const ir::Graph& graph, ir::ValueRef value, std::set<int>& visited,
                        std::vector<AccumulatingReduction>& out) {
  const int producer = graph.value(value).producer;
  if (producer < 0 || !visited.insert(producer).second) return;
  const ir::Node& node = graph.nodes()[static_cast<size_t>(producer)];
  if (ir::is_attention_op(node.op)) {
    // Attention (tolerance.h): the scores are contractions over the head size, the softmax
    // adds Lk exponentials, and the output a contraction over the keys whose probabilities
    // a 16-bit attention rounds to the dtype first. The backward's dQ sums over the keys,
    // dK and dV over every query row of the heads sharing a key/value head.
    const ir::AttentionArgs a = ir::attention_args(graph, node);
    const double sixteen_bit = a.dtype == DType::BFloat16  ? std::ldexp(1.0, -8)
                               : a.dtype == DType::Float16 ? std::ldexp(1.0, -11)
                                                           : 0.0;
    out.push_back({Accumulation::Contraction, a.head_size, 0});
    out.push_back({Accumulation::PlainSum, a.key_length, 0});
    out.push_back({Accumulation::Contraction, a.key_length, sixteen_bit});
    if (a.backward) {
      const int64_t rows = a.kv_heads > 0 ? a.query_length * (a.query_heads / a.kv_heads) : 0;
      out.push_back({Accumulation::Contraction, a.head_size, 0});
      out.push_back({Accumulation::Contraction, rows, sixteen_bit});
    }
  } else if (const auto kind = accumulation_of(node.op)) {
    // A contraction's length is its inner size K (the products summed per output element), a
    // convolution's C_in/groups * prod(kernel).
    // A pooling's, the elements of its window.
    int64_t length = 0;
    double unit_roundoff = 0;
    if (ir::is_pooling_op(node.op)) {
      const ir::PoolingArgs a = ir::pooling_args(graph, node);
      length = a.summed_terms();
      if (a.backward && a.dtype == DType::BFloat16) unit_roundoff = std::ldexp(1.0, -8);
      if (a.backward && a.dtype == DType::Float16) unit_roundoff = std::ldexp(1.0, -11);
    } else if (*kind != Accumulation::Contraction) {
      length = reduction_length(graph, node);
    } else {
      length = ir::find_op_schema(node.op)->category == ir::OpCategory::Convolution
                   ? ir::convolution_products_per_element(graph, node)
                   : ir::contraction_args(graph, node).k;
    }
    out.push_back({*kind, length, unit_roundoff});
  }
  for (const ir::Arg& arg : node.args) {
    if (const auto* ref = std::get_if<ir::ValueRef>(&arg)) {
      collect_reductions(graph, *ref, visited, out);
    } else if (const auto* list = std::get_if<ir::TensorList>(&arg)) {
      for (const auto& item : list->items) {
        if (item) collect_reductions(graph, *item, visited, out);
      }
    }
  }
}

// 4 standard deviations of one reduction's relative error (tolerance.h).
double allowance(const AccumulatingReduction& r, double unit_roundoff) {
  const double length = static_cast<double>(r.length);
  switch (r.kind) {
    case Accumulation::CascadeSum:
      return 4.0 * unit_roundoff *
             std::sqrt(static_cast<double>(kernel::cascade_error_chain(r.length))) / 3.0;
    case Accumulation::PlainSum:
      return 4.0 * unit_roundoff * std::sqrt(length) / 3.0;
    case Accumulation::Product:
      return 4.0 * unit_roundoff * std::sqrt(length) / std::sqrt(3.0);
    case Accumulation::Contraction:
      return 4.0 * unit_roundoff * std::sqrt(length + 9.0) / 3.0;
  }
  return 0.0;
}

Tolerance combined_tolerance(DType dtype, const std::vector<AccumulatingReduction>& reductions) {
  const Base base = base_tolerance(dtype);
  double variance = base.rtol * base.rtol;
  for (const AccumulatingReduction& r : reductions) {
    const double a = allowance(r, r.unit_roundoff > 0 ? r.unit_roundoff : base.unit_roundoff);
    variance += a * a;
  }
  return {std::sqrt(variance), base.atol};
}

}  // namespace

Tolerance value_tolerance(DType dtype, const std::vector<int64_t>& sum_lengths) {
  std::vector<AccumulatingReduction> sums;
  for (int64_t length : sum_lengths) sums.push_back({Accumulation::CascadeSum, length});
  return combined_tolerance(dtype, sums);
}

Tolerance graph_value_tolerance(const ir::Graph& graph, ir::ValueRef value) {
  std::set<int> visited;
  std::vector<AccumulatingReduction> reductions;
  collect_reductions(graph, value, visited, reductions);
  return combined_tolerance(graph.value(value).type.dtype, reductions);
}

std::vector<Tolerance> output_tolerances(const ir::Graph& graph) {
  std::vector<Tolerance> out;
  for (ir::ValueRef output : graph.outputs()) out.push_back(graph_value_tolerance(graph, output));
  return out;
}

}  // namespace stax
