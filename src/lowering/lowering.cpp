// The lowering pass: walks the graph in order, turning every value into a LoweredValue and
// every stored result into a ComputedBuffer of the LoweredGraph.
#include "lowering/lowering.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "ir/op_schema.h"
#include "ir/view_strides.h"
#include "lowering/lowered_value.h"
#include "lowering/views.h"

namespace stax::lowering {

using index::Expr;

namespace {

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

void append_unique(std::vector<std::string>& ops, const std::string& op) {
  if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
}

int rank_of_category(DType d) {
  if (d == DType::Bool) return 0;
  if (is_integral(d)) return 1;
  return 2;
}

// PyTorch's result type for the operands of a node: tensors decide within a category; a scalar
// only raises the category (to the default dtype of that category).
DType promote_operands(const ir::Graph& graph, const ir::Node& node,
                       const std::vector<size_t>& positions) {
  std::optional<DType> tensor_type;
  int scalar_category = -1;
  for (size_t pos : positions) {
    if (ir::is_tensor_arg(node, pos)) {
      DType d = ir::tensor_arg(graph, node, pos).type.dtype;
      if (!tensor_type || rank_of_category(d) > rank_of_category(*tensor_type) ||
          (rank_of_category(d) == rank_of_category(*tensor_type) &&
           dtype_size(d) > dtype_size(*tensor_type))) {
        tensor_type = d;
      }
    } else {
      const ir::Scalar& s = ir::scalar_arg(node, pos);
      int c = s.kind == ir::Scalar::Kind::Float ? 2 : s.kind == ir::Scalar::Kind::Int ? 1 : 0;
      scalar_category = std::max(scalar_category, c);
    }
  }
  if (!tensor_type) return scalar_category == 2 ? DType::Float32 : DType::Int64;
  if (scalar_category > rank_of_category(*tensor_type)) {
    return scalar_category == 2 ? DType::Float32 : DType::Int64;
  }
  return *tensor_type;
}

class Lowerer {
 public:
  Lowerer(const ir::Graph& graph, const LoweringOptions& options)
      : graph_(graph), options_(options), values_(graph.values().size()) {
    // Every operand runs its value's loader once per element, so add(v, v) reads v twice.
    for (const ir::Node& node : graph.nodes()) {
      for (const ir::Arg& arg : node.args) {
        if (const auto* ref = std::get_if<ir::ValueRef>(&arg)) ++reads_[ref->index];
      }
    }
    for (ir::ValueRef out : graph.outputs()) outputs_.insert(out.index);
  }

  LoweredGraph run() {
    result_.name = graph_.name();
    for (ir::ValueRef in : graph_.inputs()) lower_input(in);
    for (const ir::Node& node : graph_.nodes()) {
      current_node_ = ir::describe_node(graph_, node);
      try {
        lower_node(node);
      } catch (const std::exception&) {
        ir::rethrow_with_context("lowering " + current_node_);
      }
    }
    current_node_.clear();
    for (ir::ValueRef out : graph_.outputs()) {
      const LoweredValue& v = value(out.index);
      if (!v.layout) throw std::logic_error("graph output was not stored");
      result_.outputs.push_back(OutputSpec{v.layout->buffer, v.layout->is_input, v.dtype, v.sizes,
                                           v.layout->strides, v.layout->offset});
    }
    return std::move(result_);
  }

 private:
  const LoweredValue& value(int index) const {
    const auto& v = values_.at(static_cast<size_t>(index));
    if (!v) throw std::logic_error("value used before it was lowered");
    return *v;
  }

  void lower_input(ir::ValueRef ref) {
    const ir::Value& in = graph_.value(ref);
    result_.inputs.push_back(InputBuffer{in.name, in.type.dtype, in.type.sizes, in.type.strides});
    LoweredValue v;
    v.dtype = in.type.dtype;
    v.sizes = in.type.sizes;
    v.layout = StridedLayout{in.name, true, in.type.strides, 0};
    v.pure_view = true;
    v.loader = make_load(in.name, in.type.dtype, in.type.strides, 0);
    v.stats = load_stats();
    values_[static_cast<size_t>(ref.index)] = std::move(v);
  }

  static Loader make_load(const std::string& buffer, DType dtype, std::vector<int64_t> strides,
                          int64_t offset) {
    return [buffer, dtype, strides, offset](OpsHandler& h, const std::vector<Expr>& idx) {
      return h.load(buffer, strided_offset(idx, strides, offset), dtype);
    };
  }

  // buf0, buf1, ...: one name space with the graph inputs, so skip any name an input has.
  std::string next_buffer_name() const {
    std::string name = "buf" + std::to_string(result_.buffers.size());
    while (result_.find_input(name) != nullptr) name += "_";
    return name;
  }

  // Stores a value into a new contiguous buffer and returns the value that reads it back.
  LoweredValue realize(const LoweredValue& v, const std::string& why) {
    ComputedBuffer buf;
    buf.name = next_buffer_name();
    buf.dtype = v.dtype;
    buf.sizes = v.sizes;
    buf.strides = ir::contiguous_strides(v.sizes);
    buf.ranges = v.sizes;
    const auto strides = buf.strides;
    buf.output_index = [strides](const std::vector<Expr>& idx) {
      return strided_offset(idx, strides);
    };
    Loader loader = v.loader;
    buf.value = [loader](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      return loader(h, idx);
    };
    buf.origin = v.origin.empty() ? "copy" : join(v.origin, "+");
    result_.log.push_back(buf.name + " (" + buf.origin + "): " + why);
    return add_buffer(std::move(buf));
  }

  LoweredValue add_buffer(ComputedBuffer buf) {
    buf.source = current_node_;
    LoweredValue out;
    out.dtype = buf.dtype;
    out.sizes = buf.sizes;
    out.layout = StridedLayout{buf.name, false, buf.strides, 0};
    out.pure_view = true;
    out.loader = make_load(buf.name, buf.dtype, buf.strides, 0);
    out.stats = load_stats();
    result_.buffers.push_back(std::move(buf));
    return out;
  }

  // A loader for operand `pos` broadcast to `out_sizes` and converted to `dtype`.
  Loader operand(const ir::Node& node, size_t pos, DType dtype,
                 const std::vector<int64_t>& out_sizes) {
    if (!ir::is_tensor_arg(node, pos)) {
      const double scalar = ir::scalar_arg(node, pos).value;
      return [scalar, dtype](OpsHandler& h, const std::vector<Expr>&) {
        return h.constant(scalar, dtype);
      };
    }
    const auto ref = std::get<ir::ValueRef>(node.args[pos]);
    const LoweredValue& v = value(ref.index);
    IndexMap map = broadcast_index(v.sizes, out_sizes);
    Loader inner = v.loader;
    const DType from = v.dtype;
    return [inner, map, dtype, from](OpsHandler& h, const std::vector<Expr>& idx) {
      OpsValue x = inner(h, map(idx));
      return from == dtype ? x : h.to_dtype(x, dtype);
    };
  }

  std::vector<std::string> operand_origin(const ir::Node& node) const {
    std::vector<std::string> origin;
    for (const ir::Arg& arg : node.args) {
      if (const auto* ref = std::get_if<ir::ValueRef>(&arg)) {
        // A value used by several operands is composed once per use, but named once.
        for (const auto& op : value(ref->index).origin) append_unique(origin, op);
      }
    }
    return origin;
  }

  void lower_node(const ir::Node& node) {
    const ir::Value& out = graph_.value(node.output);
    const ir::OpSchema* schema = ir::find_op_schema(node.op);
    if (schema == nullptr) throw std::invalid_argument("lowering: unknown op " + node.op);
    LoweredValue v;
    switch (schema->category) {
      case ir::OpCategory::Pointwise:
        v = lower_pointwise(node, out);
        break;
      case ir::OpCategory::Reduction:
        v = lower_reduction(node, out);
        break;
      case ir::OpCategory::View:
        v = lower_view(node, out);
        break;
      case ir::OpCategory::Copy:
        v = lower_copy(node);
        break;
    }
    const int idx = node.output.index;
    if (outputs_.count(idx) && !v.layout) {
      v = realize(v, "graph output");
    } else if (!v.pure_view || !v.layout) {
      // A view that no strided layout expresses composes index arithmetic; it is priced too.
      const auto reads = reads_.count(idx) ? reads_.at(idx) : 0;
      auto decision = decide_materialization(options_.device, v.stats, reads);
      if (decision.materialize) v = realize(v, decision.reason);
    }
    values_[static_cast<size_t>(idx)] = std::move(v);
  }

  LoweredValue lower_pointwise(const ir::Node& node, const ir::Value& out) {
    static const std::map<std::string, PointwiseOp> kUnary = {
        {"neg", PointwiseOp::Neg},   {"abs", PointwiseOp::Abs},
        {"exp", PointwiseOp::Exp},   {"log", PointwiseOp::Log},
        {"sqrt", PointwiseOp::Sqrt}, {"rsqrt", PointwiseOp::Rsqrt},
        {"tanh", PointwiseOp::Tanh}, {"sigmoid", PointwiseOp::Sigmoid},
        {"relu", PointwiseOp::Relu},
    };
    static const std::map<std::string, PointwiseOp> kBinary = {
        {"add", PointwiseOp::Add},         {"sub", PointwiseOp::Sub},
        {"mul", PointwiseOp::Mul},         {"div", PointwiseOp::Div},
        {"maximum", PointwiseOp::Maximum}, {"minimum", PointwiseOp::Minimum},
        {"gt", PointwiseOp::Gt},           {"lt", PointwiseOp::Lt},
        {"ge", PointwiseOp::Ge},           {"le", PointwiseOp::Le},
        {"eq", PointwiseOp::Eq},           {"ne", PointwiseOp::Ne},
    };
    LoweredValue v;
    v.dtype = out.type.dtype;
    v.sizes = out.type.sizes;
    v.origin = operand_origin(node);
    append_unique(v.origin, node.op);
    const auto& sizes = out.type.sizes;
    v.stats = operand_stats(node);
    if (auto it = kUnary.find(node.op); it != kUnary.end()) {
      Loader x = operand(node, 0, out.type.dtype, sizes);
      const PointwiseOp op = it->second;
      v.loader = [x, op](OpsHandler& h, const std::vector<Expr>& idx) {
        return apply(h, op, {x(h, idx)});
      };
      v.stats += op_stats(op);
    } else if (node.op == "pow") {
      Loader x = operand(node, 0, out.type.dtype, sizes);
      const double exponent = ir::scalar_arg(node, 1).value;
      const DType x_dtype = out.type.dtype;
      v.loader = [x, exponent, x_dtype](OpsHandler& h, const std::vector<Expr>& idx) {
        return apply(h, PointwiseOp::Pow, {x(h, idx), h.constant(exponent, x_dtype)});
      };
      v.stats += op_stats(PointwiseOp::Pow);
    } else if (node.op == "where") {
      Loader cond = operand(node, 0, DType::Bool, sizes);
      Loader a = operand(node, 1, out.type.dtype, sizes);
      Loader b = operand(node, 2, out.type.dtype, sizes);
      v.loader = [cond, a, b](OpsHandler& h, const std::vector<Expr>& idx) {
        return apply(h, PointwiseOp::Where, {cond(h, idx), a(h, idx), b(h, idx)});
      };
      v.stats += op_stats(PointwiseOp::Where);
    } else if (auto bit = kBinary.find(node.op); bit != kBinary.end()) {
      const PointwiseOp op = bit->second;
      const DType compute =
          op_info(op).produces_bool ? promote_operands(graph_, node, {0, 1}) : out.type.dtype;
      Loader a = operand(node, 0, compute, sizes);
      Loader b = operand(node, 1, compute, sizes);
      if ((op == PointwiseOp::Add || op == PointwiseOp::Sub) && node.args.size() > 2) {
        const double alpha = ir::scalar_arg(node, 2).value;
        if (alpha != 1.0) {
          Loader unscaled = b;
          b = [unscaled, alpha, compute](OpsHandler& h, const std::vector<Expr>& idx) {
            return apply(h, PointwiseOp::Mul, {unscaled(h, idx), h.constant(alpha, compute)});
          };
          v.stats += op_stats(PointwiseOp::Mul);
        }
      }
      v.loader = [a, b, op](OpsHandler& h, const std::vector<Expr>& idx) {
        return apply(h, op, {a(h, idx), b(h, idx)});
      };
      v.stats += op_stats(op);
    } else {
      throw std::invalid_argument("lowering: no lowering for pointwise op " + node.op);
    }
    return v;
  }

  // The cost of running every tensor operand's loader once.
  BodyStats operand_stats(const ir::Node& node) const {
    BodyStats stats;
    for (const ir::Arg& arg : node.args) {
      if (const auto* ref = std::get_if<ir::ValueRef>(&arg)) stats += value(ref->index).stats;
    }
    return stats;
  }

  LoweredValue lower_reduction(const ir::Node& node, const ir::Value& out) {
    const ir::Value& in = ir::tensor_arg(graph_, node, 0);
    const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
    const auto dims = ir::reduction_dims(ir::int_list_arg(node, 1), in.type.sizes.size(), node.op);
    const bool keepdim = ir::bool_arg(node, 2);
    std::vector<bool> reduced(in.type.sizes.size(), false);
    for (int64_t d : dims) reduced[static_cast<size_t>(d)] = true;

    ReductionType type = ReductionType::Sum;
    if (node.op == "amax") type = ReductionType::Max;
    if (node.op == "amin") type = ReductionType::Min;
    const bool is_mean = node.op == "mean";

    ComputedBuffer buf;
    buf.name = next_buffer_name();
    buf.dtype = out.type.dtype;
    buf.sizes = out.type.sizes;
    buf.strides = ir::contiguous_strides(out.type.sizes);
    buf.reduction = type;
    std::vector<int64_t> out_dim_of_kept;  // output dim index of each kept input dim
    int64_t reduced_count = 1;
    for (size_t d = 0; d < in.type.sizes.size(); ++d) {
      if (reduced[d]) {
        buf.reduction_ranges.push_back(in.type.sizes[d]);
        reduced_count *= in.type.sizes[d];
      } else {
        buf.ranges.push_back(in.type.sizes[d]);
        out_dim_of_kept.push_back(keepdim ? static_cast<int64_t>(d)
                                          : static_cast<int64_t>(buf.ranges.size() - 1));
      }
    }
    const auto strides = buf.strides;
    buf.output_index = [strides, out_dim_of_kept](const std::vector<Expr>& idx) {
      Expr offset(0);
      for (size_t k = 0; k < idx.size(); ++k) {
        offset = offset + idx[k] * Expr(strides[static_cast<size_t>(out_dim_of_kept[k])]);
      }
      return offset;
    };
    Loader loader = src.loader;
    const DType from = src.dtype;
    const DType to = out.type.dtype;
    buf.value = [loader, reduced, from, to](OpsHandler& h, const std::vector<Expr>& idx,
                                            const std::vector<Expr>& ridx) {
      std::vector<Expr> full;
      size_t k = 0;
      size_t r = 0;
      for (bool is_reduced : reduced) full.push_back(is_reduced ? ridx[r++] : idx[k++]);
      OpsValue x = loader(h, full);
      return from == to ? x : h.to_dtype(x, to);
    };
    std::vector<std::string> origin = src.origin;
    origin.push_back(is_mean ? "sum" : node.op);
    buf.origin = join(origin, "+");
    LoweredValue stored = add_buffer(std::move(buf));
    stored.origin.clear();
    if (!is_mean) return stored;

    LoweredValue mean;
    mean.dtype = stored.dtype;
    mean.sizes = stored.sizes;
    mean.origin = {"mean"};
    Loader sum = stored.loader;
    const double count = static_cast<double>(reduced_count);
    const DType dtype = stored.dtype;
    mean.loader = [sum, count, dtype](OpsHandler& h, const std::vector<Expr>& idx) {
      return apply(h, PointwiseOp::Div, {sum(h, idx), h.constant(count, dtype)});
    };
    mean.stats = stored.stats;
    mean.stats += op_stats(PointwiseOp::Div);
    return mean;
  }

  LoweredValue lower_view(const ir::Node& node, const ir::Value& out) {
    const ir::Value& in = ir::tensor_arg(graph_, node, 0);
    const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
    const auto& in_sizes = in.type.sizes;
    const auto& out_sizes = out.type.sizes;
    IndexMap map;
    std::optional<std::vector<int64_t>> strides;  // layout of the view, when strided
    const std::vector<int64_t>* src_strides = src.layout ? &src.layout->strides : nullptr;
    if (node.op == "permute" || node.op == "transpose") {
      std::vector<int64_t> dims(in_sizes.size());
      for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
      if (node.op == "permute") {
        const auto given = *ir::int_list_arg(node, 1);
        for (size_t d = 0; d < dims.size(); ++d) {
          dims[d] = ir::normalize_dim(given[d], in_sizes.size(), node.op);
        }
      } else if (!in_sizes.empty()) {
        std::swap(dims[static_cast<size_t>(
                      ir::normalize_dim(ir::int_arg(node, 1), in_sizes.size(), node.op))],
                  dims[static_cast<size_t>(
                      ir::normalize_dim(ir::int_arg(node, 2), in_sizes.size(), node.op))]);
      }
      map = permute_index(dims);
      if (src_strides) {
        strides.emplace();
        for (int64_t d : dims) strides->push_back((*src_strides)[static_cast<size_t>(d)]);
      }
    } else if (node.op == "unsqueeze") {
      const int64_t dim = ir::normalize_dim(ir::int_arg(node, 1), in_sizes.size() + 1, node.op);
      map = unsqueeze_index(dim);
      if (src_strides) {
        strides = *src_strides;
        const auto pos = static_cast<size_t>(dim);
        const int64_t s = pos < in_sizes.size() ? (*src_strides)[pos] * in_sizes[pos] : 1;
        strides->insert(strides->begin() + dim, s);
      }
    } else if (node.op == "squeeze") {
      std::vector<bool> removed(in_sizes.size(), false);
      const auto dims = ir::int_list_arg(node, 1);
      for (size_t d = 0; d < in_sizes.size(); ++d) removed[d] = !dims && in_sizes[d] == 1;
      if (dims) {
        for (int64_t d : *dims) {
          if (in_sizes.empty()) continue;  // squeezing a 0-dim tensor leaves it as it is
          const auto nd = static_cast<size_t>(ir::normalize_dim(d, in_sizes.size(), node.op));
          removed[nd] = in_sizes[nd] == 1;
        }
      }
      map = squeeze_index(removed);
      if (src_strides) {
        strides.emplace();
        for (size_t d = 0; d < in_sizes.size(); ++d) {
          if (!removed[d]) strides->push_back((*src_strides)[d]);
        }
      }
    } else if (node.op == "expand") {
      map = broadcast_index(in_sizes, out_sizes);
      if (src_strides) {
        strides.emplace(out_sizes.size(), 0);
        const size_t lead = out_sizes.size() - in_sizes.size();
        for (size_t d = 0; d < in_sizes.size(); ++d) {
          const bool broadcast = in_sizes[d] == 1 && out_sizes[lead + d] != 1;
          (*strides)[lead + d] = broadcast ? 0 : (*src_strides)[d];
        }
      }
    } else if (node.op == "reshape" || node.op == "view") {
      map = reshape_index(in_sizes, out_sizes);
      if (src_strides) strides = ir::view_strides(in_sizes, *src_strides, out_sizes);
      if (node.op == "view" && src_strides && !strides) {
        throw std::invalid_argument(
            "view: size " + std::to_string(out_sizes.size()) +
            "-d target is not compatible with the input's strides; use reshape");
      }
    } else {
      throw std::invalid_argument("lowering: no lowering for view op " + node.op);
    }
    LoweredValue v;
    v.dtype = src.dtype;
    v.sizes = out_sizes;
    v.origin = src.origin;
    v.pure_view = src.pure_view;
    v.stats = src.stats;
    Loader inner = src.loader;
    v.loader = [inner, map](OpsHandler& h, const std::vector<Expr>& idx) {
      return inner(h, map(idx));
    };
    if (src.layout && strides) {
      v.layout =
          StridedLayout{src.layout->buffer, src.layout->is_input, *strides, src.layout->offset};
    } else {
      v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
    }
    return v;
  }

  LoweredValue lower_copy(const ir::Node& node) {
    const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
    LoweredValue v = src;
    // A clone never aliases its input; `contiguous` may, when the input already is.
    const bool alias = node.op == "contiguous" && src.layout &&
                       src.layout->strides == ir::contiguous_strides(src.sizes);
    if (!alias) {
      v.layout.reset();
      v.pure_view = false;
      append_unique(v.origin, node.op);
    }
    return v;
  }

  const ir::Graph& graph_;
  LoweringOptions options_;
  LoweredGraph result_;
  std::vector<std::optional<LoweredValue>> values_;
  std::unordered_map<int, int> reads_;
  std::string current_node_;  // the node being lowered, for errors and buffer provenance
  std::set<int> outputs_;
};

}  // namespace

LoweredGraph lower(const ir::Graph& graph, const LoweringOptions& options) {
  return Lowerer(graph, options).run();
}

int64_t ComputedBuffer::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

void ComputedBuffer::run_body(OpsHandler& handler, const std::vector<Expr>& index,
                              const std::vector<Expr>& reduction_index) const {
  OpsValue v = value(handler, index, reduction_index);
  if (reduction) {
    handler.store_reduction(name, output_index(index), handler.reduction(*reduction, v));
  } else {
    handler.store(name, output_index(index), v);
  }
}

const InputBuffer* LoweredGraph::find_input(const std::string& n) const {
  for (const auto& in : inputs) {
    if (in.name == n) return &in;
  }
  return nullptr;
}

const ComputedBuffer* LoweredGraph::find_buffer(const std::string& n) const {
  for (const auto& b : buffers) {
    if (b.name == n) return &b;
  }
  return nullptr;
}

}  // namespace stax::lowering
