// Comparison tolerances derived from the dtype's precision and the sums feeding each output.
#include "driver/tolerance.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "driver/condition_number.h"
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

// The accumulations a node performs (none for most ops): a reduction's or pooling's sum, a
// contraction's or convolution's, attention's three (five backward).
std::vector<AccumulatingReduction> accumulations_of(const ir::Graph& graph, const ir::Node& node) {
  if (ir::is_attention_op(node.op)) {
    // Attention (tolerance.h): the scores are contractions over the head size, the softmax
    // adds Lk exponentials, and the output a contraction over the keys whose probabilities
    // a 16-bit attention rounds to the dtype first. The backward's dQ sums over the keys,
    // dK and dV over every query row of the heads sharing a key/value head.
    const ir::AttentionArgs a = ir::attention_args(graph, node);
    const double sixteen_bit = a.dtype == DType::BFloat16  ? std::ldexp(1.0, -8)
                               : a.dtype == DType::Float16 ? std::ldexp(1.0, -11)
                                                           : 0.0;
    std::vector<AccumulatingReduction> out = {
        {Accumulation::Contraction, a.head_size, 0},
        {Accumulation::PlainSum, a.key_length, 0},
        {Accumulation::Contraction, a.key_length, sixteen_bit}};
    if (a.backward) {
      const int64_t rows = a.kv_heads > 0 ? a.query_length * (a.query_heads / a.kv_heads) : 0;
      out.push_back({Accumulation::Contraction, a.head_size, 0});
      out.push_back({Accumulation::Contraction, rows, sixteen_bit});
    }
    return out;
  }
  const auto kind = accumulation_of(node.op);
  if (!kind) return {};
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
  return {{*kind, length, unit_roundoff}};
}

// Pointwise ops whose compiled result is the oracle's bit for bit, given the same operands:
// one IEEE operation correctly rounded in both, or none. The others (exp, sin, rsqrt, gelu,
// pow, ...) differ by the few ulps the base rtol covers (tolerance.h).
bool rounds_like_the_oracle(const std::string& op) {
  static const std::set<std::string, std::less<>> exact = {"add",
                                                           "sub",
                                                           "mul",
                                                           "div",
                                                           "remainder",
                                                           "fmod",
                                                           "floor_divide",
                                                           "maximum",
                                                           "minimum",
                                                           "fmax",
                                                           "fmin",
                                                           "gt",
                                                           "lt",
                                                           "ge",
                                                           "le",
                                                           "eq",
                                                           "ne",
                                                           "logical_and",
                                                           "logical_or",
                                                           "logical_xor",
                                                           "logical_not",
                                                           "bitwise_and",
                                                           "bitwise_or",
                                                           "bitwise_xor",
                                                           "bitwise_not",
                                                           "bitwise_left_shift",
                                                           "bitwise_right_shift",
                                                           "where",
                                                           "sqrt",
                                                           "reciprocal",
                                                           "neg",
                                                           "abs",
                                                           "relu",
                                                           "floor",
                                                           "ceil",
                                                           "trunc",
                                                           "sign",
                                                           "round",
                                                           "frac",
                                                           "isnan",
                                                           "isinf",
                                                           "isfinite",
                                                           "nan_to_num",
                                                           "clamp",
                                                           "clamp_min",
                                                           "clamp_max",
                                                           "hardtanh",
                                                           "copysign",
                                                           "leaky_relu",
                                                           "_to_copy",
                                                           "convert_element_type"};
  return exact.contains(op);
}

// The error sources that reach one value, each with the largest factor by which the ops on a
// path from it to the value magnify its relative error (1: passed on unchanged).
struct ErrorSources {
  std::map<int, double> accumulations;  // accumulating node -> amplification
  double pointwise = 0;                 // of the pointwise ops' own rounding; 0: none
  bool empty() const { return accumulations.empty() && pointwise == 0; }
};

// Follows every error source forward through the graph, node by node (tolerance.h).
class ErrorPropagation {
 public:
  ErrorPropagation(const ir::Graph& graph, const std::vector<Tensor>* oracle_values)
      : graph_(graph), oracle_(oracle_values), sources_(graph.values().size()) {
    if (oracle_ != nullptr && oracle_->size() != graph.values().size()) {
      throw std::invalid_argument("tolerance: the oracle gave " + std::to_string(oracle_->size()) +
                                  " values, graph " + graph.name() + " has " +
                                  std::to_string(graph.values().size()));
    }
    accumulations_.resize(graph.nodes().size());
    for (size_t n = 0; n < graph.nodes().size(); ++n) propagate(n);
  }

  Tolerance tolerance(ir::ValueRef value) const {
    return tolerance_of(sources_.at(static_cast<size_t>(value.index)),
                        graph_.value(value).type.dtype);
  }

 private:
  // Nodes come in an order where every operand is produced before its uses.
  void propagate(size_t n) {
    const ir::Node& node = graph_.nodes()[n];
    ErrorSources out;
    const double result_atol = base_tolerance(graph_.value(node.output).type.dtype).atol;
    auto take = [&](ir::ValueRef operand, std::optional<size_t> position) {
      const ErrorSources& in = sources_.at(static_cast<size_t>(operand.index));
      if (in.empty()) return;  // the oracle's own value: nothing to magnify
      double factor = 1.0;
      if (oracle_ != nullptr && position && may_magnify_error(node, *position)) {
        factor = error_amplification(node, *position, oracle_value(operand),
                                     tolerance(operand).rtol, result_atol);
      }
      for (const auto& [source, amplification] : in.accumulations) {
        double& a = out.accumulations[source];
        a = std::max(a, amplification * factor);
      }
      out.pointwise = std::max(out.pointwise, in.pointwise * factor);
    };
    for (size_t p = 0; p < node.args.size(); ++p) {
      if (const auto* ref = std::get_if<ir::ValueRef>(&node.args[p])) {
        take(*ref, p);
      } else if (const auto* list = std::get_if<ir::TensorList>(&node.args[p])) {
        for (const auto& item : list->items) {
          if (item) take(*item, std::nullopt);
        }
      }
    }
    accumulations_[n] = accumulations_of(graph_, node);
    if (!accumulations_[n].empty()) out.accumulations[static_cast<int>(n)] = 1.0;
    const ir::OpSchema* schema = ir::find_op_schema(node.op);
    if (schema != nullptr && schema->category == ir::OpCategory::Pointwise &&
        !rounds_like_the_oracle(node.op)) {
      out.pointwise = std::max(out.pointwise, 1.0);
    }
    sources_.at(static_cast<size_t>(node.output.index)) = std::move(out);
  }

  const Tensor& oracle_value(ir::ValueRef value) const {
    const Tensor& t = oracle_->at(static_cast<size_t>(value.index));
    if (!t.defined()) {
      throw std::invalid_argument("tolerance: the oracle gave no value for '" +
                                  graph_.value(value).name + "'");
    }
    return t;
  }

  // The base, magnified as much as any pointwise op's rounding is on its way here, in
  // quadrature with each accumulation's allowance times its amplification (tolerance.h).
  Tolerance tolerance_of(const ErrorSources& in, DType dtype) const {
    const Base base = base_tolerance(dtype);
    const double pointwise = base.rtol * std::max(1.0, in.pointwise);
    double variance = pointwise * pointwise;
    for (const auto& [source, amplification] : in.accumulations) {
      for (const AccumulatingReduction& r : accumulations_[static_cast<size_t>(source)]) {
        const double a = allowance(r, r.unit_roundoff > 0 ? r.unit_roundoff : base.unit_roundoff) *
                         amplification;
        variance += a * a;
      }
    }
    return {std::sqrt(variance), base.atol};
  }

  const ir::Graph& graph_;
  const std::vector<Tensor>* oracle_;
  std::vector<ErrorSources> sources_;                              // by value index
  std::vector<std::vector<AccumulatingReduction>> accumulations_;  // by node index
};

}  // namespace

Tolerance value_tolerance(DType dtype, const std::vector<int64_t>& sum_lengths) {
  const Base base = base_tolerance(dtype);
  double variance = base.rtol * base.rtol;
  for (int64_t length : sum_lengths) {
    const double a = allowance({Accumulation::CascadeSum, length}, base.unit_roundoff);
    variance += a * a;
  }
  return {std::sqrt(variance), base.atol};
}

Tolerance graph_value_tolerance(const ir::Graph& graph, ir::ValueRef value,
                                const std::vector<Tensor>* oracle_values) {
  return ErrorPropagation(graph, oracle_values).tolerance(value);
}

std::vector<Tolerance> output_tolerances(const ir::Graph& graph,
                                         const std::vector<Tensor>* oracle_values) {
  const ErrorPropagation propagation(graph, oracle_values);
  std::vector<Tolerance> out;
  for (ir::ValueRef output : graph.outputs()) out.push_back(propagation.tolerance(output));
  return out;
}

}  // namespace stax
