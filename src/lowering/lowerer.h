// The lowering pass's state (internal to the lowering module): the Lowerer walks the graph in
// order, turning every value into a LoweredValue and every stored result into a
// ComputedBuffer. The shared machinery (operands, realization, the materialization decision)
// lives here; each op family is lowered by its own file.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "index/shape_exprs.h"
#include "ir/convolution_args.h"
#include "ir/eager_storage.h"
#include "ir/op_schema.h"
#include "ir/pooling_args.h"
#include "ir/symbolic_shapes.h"
#include "ir/view_strides.h"
#include "lowering/channels_last.h"
#include "lowering/lowered_value.h"
#include "lowering/lowering.h"
#include "lowering/pointwise_decompositions.h"
#include "lowering/views.h"

namespace stax::lowering {

using index::Expr;

inline std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

inline void append_unique(std::vector<std::string>& ops, const std::string& op) {
  if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
}

class Lowerer {
 public:
  Lowerer(const ir::Graph& graph, const LoweringOptions& options)
      : eager_layouts_(graph), graph_(graph), options_(options), values_(graph.values().size()) {
    // Every operand runs its value's loader once per element, so add(v, v) reads v twice. A
    // reader whose result is k times larger than the operand (a broadcast: T5's position bias
    // added to every batch's scores) runs it k times per element: evaluations_ counts that.
    // (Only pointwise ops and expand broadcast: a larger result of cat, pad or a gather still
    // reads each element of an operand at most once.)
    for (const ir::Node& node : graph.nodes()) {
      const ir::OpSchema* schema = ir::find_op_schema(node.op);
      const bool broadcasts = node.op == "expand" ||
                              (schema != nullptr && schema->category == ir::OpCategory::Pointwise);
      const int64_t out_numel = graph.value(node.output).type.numel();
      for (ir::ValueRef ref : ir::tensor_operands(node)) {
        ++reads_[ref.index];
        const int64_t in_numel = graph.value(ref).type.numel();
        int64_t k = broadcasts && in_numel > 0 && out_numel > in_numel ? out_numel / in_numel : 1;
        // A convolution's loop nest reads each input element once per window it lies in.
        if (schema != nullptr && schema->category == ir::OpCategory::Convolution && in_numel > 0) {
          const double products =
              static_cast<double>(out_numel) *
              static_cast<double>(ir::convolution_products_per_element(graph, node));
          k = static_cast<int64_t>(std::clamp(products / static_cast<double>(in_numel), 1.0,
                                              static_cast<double>(1 << 20)));
        }
        // So does a pooling's (each of its reductions).
        if (schema != nullptr && schema->category == ir::OpCategory::Pooling && in_numel > 0) {
          const double reads = static_cast<double>(out_numel) *
                               static_cast<double>(ir::pooling_args(graph, node).window_elements());
          k = static_cast<int64_t>(
              std::clamp(reads / static_cast<double>(in_numel), 1.0, static_cast<double>(1 << 20)));
        }
        evaluations_[ref.index] = std::min<int64_t>(evaluations_[ref.index] + k, 1 << 20);
      }
    }
    for (ir::ValueRef out : graph.outputs()) outputs_.insert(out.index);
    // Values a graph output reaches through views: stored in eager's layout, as the output is.
    for (ir::ValueRef out : graph.outputs()) {
      for (int idx = out.index; idx >= 0 && seen_by_outputs_.insert(idx).second;) {
        const int producer = graph.value(ir::ValueRef{idx}).producer;
        if (producer < 0) break;
        const ir::Node& p = graph.nodes()[static_cast<size_t>(producer)];
        const ir::OpSchema* schema = ir::find_op_schema(p.op);
        if (schema == nullptr || schema->category != ir::OpCategory::View ||
            !ir::is_tensor_arg(p, 0)) {
          break;
        }
        idx = std::get<ir::ValueRef>(p.args[0]).index;
      }
    }
  }

  LoweredGraph run() {
    result_.name = graph_.name();
    result_.symbols = graph_.size_symbols();
    find_values_stored_for_libraries();
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
    check_no_output_sees_mutated_input();
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
    result_.inputs.push_back(
        InputBuffer{in.name, in.type.dtype, sizes_of(in.type), strides_of(in.type)});
    LoweredValue v;
    v.dtype = in.type.dtype;
    v.sizes = sizes_of(in.type);
    v.layout = StridedLayout{in.name, true, strides_of(in.type), 0};
    v.pure_view = true;
    v.loader = make_load(in.name, in.type.dtype, strides_of(in.type), 0);
    v.stats = load_stats();
    values_[static_cast<size_t>(ref.index)] = std::move(v);
  }

  // A value's sizes and strides as expressions over the size symbols (issue 33): its symbolic
  // ones, or its static ones as constants. Lowering reads sizes only through these (the
  // type's integers are values at the hints, which a program for every size must not use).
  static std::vector<Expr> sizes_of(const ir::TensorType& type) {
    return ir::symbolic_sizes_of(type);
  }
  static std::vector<Expr> strides_of(const ir::TensorType& type) {
    return ir::symbolic_strides_of(type);
  }
  static Loader make_load(const std::string& buffer, DType dtype, std::vector<Expr> strides,
                          Expr offset) {
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

  // A new pointwise buffer storing `v` laid out with `strides` (not added yet).
  ComputedBuffer buffer_storing(const LoweredValue& v, std::vector<Expr> strides) const {
    ComputedBuffer buf;
    buf.name = next_buffer_name();
    buf.dtype = v.dtype;
    buf.sizes = v.sizes;
    buf.strides = std::move(strides);
    buf.ranges = v.sizes;
    const auto laid = buf.strides;
    buf.output_index = [laid](const std::vector<Expr>& idx) { return strided_offset(idx, laid); };
    Loader loader = v.loader;
    buf.value = [loader](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      return loader(h, idx);
    };
    buf.origin = v.origin.empty() ? "copy" : join(v.origin, "+");
    return buf;
  }

  // Stores a value into a new contiguous buffer and returns the value that reads it back.
  LoweredValue realize(const LoweredValue& v, const std::string& why) {
    ComputedBuffer buf = buffer_storing(v, index::contiguous_strides(v.sizes));
    result_.log.push_back(buf.name + " (" + buf.origin + "): " + why);
    return add_buffer(std::move(buf), v.composed);
  }

  // Stores a value that only the program's own kernels and calls read (value `idx`, or -1 for
  // a private copy an external call reads): channels last where it is an image batch
  // computed from channels-last data (channels_last.h), else contiguous.
  LoweredValue realize_for_readers(const LoweredValue& v, int idx, const std::string& why) {
    const index::SymbolTable& symbols = graph_.size_symbols();
    if (!options_.channels_last_intermediates || (idx >= 0 && seen_by_outputs_.count(idx)) ||
        !is_image_batch(v.sizes, symbols) ||
        !reads_channels_last(v.loader, v.sizes, kImageChannelDim, symbols)) {
      return realize(v, why);
    }
    return realize_in_loops(v, StoreLoops(v.sizes, kImageChannelDim),
                            why + "; stored channels last, as the data it is computed from");
  }

  // Stores `v` by loops in the order `loops` gives, densely in that order (channels_last.h).
  LoweredValue realize_in_loops(const LoweredValue& v, const StoreLoops& loops,
                                const std::string& why) {
    ComputedBuffer buf = buffer_storing(v, loops.strides);
    buf.ranges = loops.loop_sizes;
    const std::vector<Expr> loop_strides = loops.loop_strides;
    buf.output_index = [loop_strides](const std::vector<Expr>& at) {
      return strided_offset(at, loop_strides);
    };
    const Loader loader = v.loader;
    buf.value = [loader, loops](OpsHandler& h, const std::vector<Expr>& at,
                                const std::vector<Expr>&) { return loader(h, loops.logical(at)); };
    result_.log.push_back(buf.name + " (" + buf.origin + "): " + why);
    return add_buffer(std::move(buf), v.composed);
  }

  // Whether value `idx` may be stored in a layout of lowering's choice: no graph output
  // reaches it through views.
  bool layout_is_free(int idx) const { return !seen_by_outputs_.count(idx); }

  // Stores `buf`, whose body computes the nodes of `composed`.
  LoweredValue add_buffer(ComputedBuffer buf, const ComposedNodes& composed) {
    buf.source = current_node_;
    for (int n : composed.flatten()) {
      const ir::Node& node = graph_.nodes()[static_cast<size_t>(n)];
      buf.source_ops.push_back(SourceOp{n, node.op, graph_.value(node.output).name});
    }
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

  // A loader for operand `pos` broadcast to `out_sizes` and converted to `dtype` (a scalar
  // literal becomes a constant of `dtype`).
  Loader operand(const ir::Node& node, size_t pos, DType dtype,
                 const std::vector<Expr>& out_sizes) {
    if (!ir::is_tensor_arg(node, pos)) {
      const ir::Scalar scalar = ir::scalar_arg(node, pos);
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
      return from == dtype ? x : convert(h, x, dtype);
    };
  }

  // `call` as the target's library is asked about it: at the symbols' hints for a call over
  // them. The library's choices (whether it runs the call, in which layout) rest on the dtypes
  // and the layouts' kinds, which every size shares; a size it refuses is refused by the plan
  // built for it, per call.
  ExternalCall call_at_hints(const ExternalCall& call) const {
    return call.is_symbolic() ? bind_external_call(call, index::hint_values(graph_.size_symbols()))
                              : call;
  }
  // The target's library for `call` (LoweringOptions::library_for), asked at the hints.
  std::optional<std::string> library_for_call(const ExternalCall& call, std::string* why) const {
    return options_.library_for(call_at_hints(call), why);
  }

  // Whether `node` reads or makes sizes known only at run time (issue 33).
  bool has_symbolic_sizes(const ir::Node& node) const {
    if (graph_.value(node.output).type.is_symbolic()) return true;
    for (ir::ValueRef ref : ir::tensor_operands(node)) {
      if (graph_.value(ref).type.is_symbolic()) return true;
    }
    for (const ir::Arg& arg : node.args) {
      if (std::holds_alternative<ir::SymInt>(arg) || std::holds_alternative<ir::SymIntList>(arg)) {
        return true;
      }
    }
    return false;
  }
  // Refuses a node of symbolic sizes whose lowering does not take them yet, by name, so that
  // no size at the symbols' hints is baked into a program meant for every size.
  void refuse_symbolic_sizes(const ir::Node& node) const {
    if (has_symbolic_sizes(node)) {
      throw index::SymbolicSizesRefused("lowering " + node.op +
                                        ": sizes known only at run time are not taken by this "
                                        "op's lowering yet");
    }
  }
  // Issue 33: refuses an int argument over size symbols that the op's lowering would read at
  // the symbols' hints (ir::scalar_arg and int_arg give the hint's value), where the value is
  // computed with rather than a size: full's fill, scalar_tensor, addmm's alpha, a
  // reduction's correction. Views and window scatters read theirs as expressions; a factory
  // its sizes and arange's bounds; pointwise ops check theirs (lower_pointwise).
  void refuse_symbolic_values(const ir::Node& node, ir::OpCategory category) const {
    if (category == ir::OpCategory::View || category == ir::OpCategory::Pointwise) return;
    // Their window is read over the symbols (ir::symbolic_window, lower_scatter_window).
    if (node.op == "slice_scatter" || node.op == "select_scatter") return;
    const bool range = node.op == "arange";
    for (size_t p = 0; p < node.args.size(); ++p) {
      const ir::Arg& arg = node.args[p];
      std::optional<Expr> symbolic;
      if (const auto* s = std::get_if<ir::SymInt>(&arg); s && !s->expr.is_constant()) {
        if (category == ir::OpCategory::Factory && range && p <= 1) continue;
        symbolic = s->expr;
      } else if (const auto* l = std::get_if<ir::SymIntList>(&arg)) {
        if (category == ir::OpCategory::Factory) continue;  // the sizes of zeros, empty, ...
        for (const Expr& e : l->items) {
          if (!e.is_constant()) symbolic = e;
        }
      }
      if (symbolic) {
        throw index::SymbolicSizesRefused(
            "lowering " + node.op + ": argument " + std::to_string(p) + " (" +
            index::to_string(*symbolic) +
            ") is a value over size symbols, which this op's lowering reads at the symbols' "
            "hints only");
      }
    }
  }
  // The graph position of `node`.
  int node_index(const ir::Node& node) const { return graph_.value(node.output).producer; }

  // What a value computing `node` from its tensor operands composes (source_op.h).
  ComposedNodes composed_over_operands(const ir::Node& node) const {
    std::vector<ComposedNodes> operands;
    for (ir::ValueRef ref : ir::tensor_operands(node)) {
      operands.push_back(value(ref.index).composed);
    }
    return ComposedNodes(node_index(node), std::move(operands));
  }

  std::vector<std::string> operand_origin(const ir::Node& node) const {
    std::vector<std::string> origin;
    for (ir::ValueRef ref : ir::tensor_operands(node)) {
      // A value used by several operands is composed once per use, but named once.
      for (const auto& op : value(ref.index).origin) append_unique(origin, op);
    }
    return origin;
  }

  // A value that `node` computes from its tensor operands, of the result's dtype and sizes,
  // named and composed over them; the caller gives it a loader and stats.
  LoweredValue computed_value(const ir::Node& node, const ir::Value& out) const {
    LoweredValue v;
    v.dtype = out.type.dtype;
    v.sizes = sizes_of(out.type);
    v.origin = operand_origin(node);
    append_unique(v.origin, node.op);
    v.composed = composed_over_operands(node);
    return v;
  }

  void lower_node(const ir::Node& node) {
    const ir::Value& out = graph_.value(node.output);
    const ir::OpSchema* schema = ir::find_op_schema(node.op);
    if (schema == nullptr) throw std::invalid_argument("lowering: unknown op " + node.op);
    // Issue 33: the families whose lowering reads sizes as expressions so far.
    switch (schema->category) {
      case ir::OpCategory::Pointwise:
      case ir::OpCategory::Reduction:
      case ir::OpCategory::View:
      case ir::OpCategory::Copy:
      case ir::OpCategory::Factory:
      case ir::OpCategory::Contraction:
      case ir::OpCategory::Attention:
      case ir::OpCategory::Scatter:
      case ir::OpCategory::Convolution:
      case ir::OpCategory::Pooling:
      case ir::OpCategory::Scan:
        break;
      default:
        refuse_symbolic_sizes(node);
    }
    refuse_symbolic_values(node, schema->category);
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
      case ir::OpCategory::Factory:  // issue 7, point 3 (lower_factory.cpp)
        v = lower_factory(node, out);
        break;
      case ir::OpCategory::Contraction:  // issue 14 (lower_contraction.cpp)
        v = lower_contraction(node, out);
        break;
      case ir::OpCategory::Convolution:  // issue 15 (lower_convolution.cpp)
        v = lower_convolution(node, out);
        break;
      case ir::OpCategory::Pooling:  // lower_pooling.cpp
        v = lower_pooling(node, out);
        break;
      case ir::OpCategory::Scatter:  // issue 15, point 4 (lower_scatter.cpp)
        v = lower_scatter(node, out);
        break;
      case ir::OpCategory::Attention:  // issue 15, point 1 (lower_attention.cpp)
        v = lower_attention(node, out);
        break;
      case ir::OpCategory::Scan:  // issue 16, point 7 (lower_scan.cpp)
        v = lower_scan(node, out);
        break;
      case ir::OpCategory::Mutation:  // issue 16, point 6 (lower_mutation.cpp)
        v = lower_copy_in_place(node, out);
        break;
    }
    // Each result of a multi-result op (split, var_mean) is its own node, lowered alone.
    std::vector<LoweredValue> results = {std::move(v)};
    std::vector<ir::ValueRef> refs = {node.output};
    if (results.size() != refs.size()) {
      throw std::logic_error("lowering " + node.op + " gave " + std::to_string(results.size()) +
                             " values for " + std::to_string(refs.size()) + " results");
    }
    for (size_t r = 0; r < refs.size(); ++r) {
      const int idx = refs[r].index;
      LoweredValue& result = results[r];
      if (outputs_.count(idx) && !result.layout) {
        result = realize(result, "graph output");
      } else if (!result.layout && stored_for_library_.count(idx)) {
        result = realize_for_readers(result, idx, stored_for_library_.at(idx));
      } else if (!result.pure_view || !result.layout) {
        // A view that no strided layout expresses composes index arithmetic; it is priced too.
        const int reads = reads_.count(idx) ? reads_.at(idx) : 0;
        const int64_t evaluations = evaluations_.count(idx) ? evaluations_.at(idx) : 0;
        auto decision = decide_materialization(options_.device, result.stats, evaluations);
        if (evaluations != reads) {
          decision.reason += " (" + std::to_string(reads) + " reads, broadcast to " +
                             std::to_string(evaluations) + " evaluations per element)";
        }
        if (decision.materialize) {
          result = realize_for_readers(result, idx, decision.reason);
        } else if (evaluations > 1) {
          // A value read more than once and still recomputed by each reader is a decision
          // too (Example 7.2 on the GPU): explain shows it beside the stored ones.
          result_.log.push_back(ir::describe_node(graph_, node) +
                                " (not stored): " + decision.reason);
        }
      }
      values_[static_cast<size_t>(idx)] = std::move(result);
    }
  }

  // A library call reads its matrix operands whole from memory, so a computed value it reads
  // (through views and copies) is stored anyway. Where that value has other readers too, it
  // is stored once, as the value itself, and every reader loads it: otherwise the call would
  // get a private copy and each other reader would recompute the value (a layernorm's output
  // feeding a linear layer and the residual add after it). A value with no other reader is
  // left to the call, which stores exactly what it reads. Fills stored_for_library_.
  void find_values_stored_for_libraries();
  // The operands of a contraction or convolution node that the target's library runs,
  // which it reads whole (a, mat2, and the bias if read; input, weight, bias); empty when the
  // node becomes a loop nest (lower_contraction.cpp, lower_convolution.cpp).
  std::vector<ir::ValueRef> library_operands(const ir::Node& node) const;
  std::vector<ir::ValueRef> library_matrix_operands(const ir::Node& node) const;
  std::vector<ir::ValueRef> library_convolution_operands(const ir::Node& node) const;

  // The cost of running every tensor operand's loader once.
  BodyStats operand_stats(const ir::Node& node) const {
    BodyStats stats;
    for (ir::ValueRef ref : ir::tensor_operands(node)) stats += value(ref.index).stats;
    return stats;
  }

  // One per op family, each in its own file (lower_pointwise.cpp, lower_reduction.cpp,
  // lower_view.cpp).
  LoweredValue lower_pointwise(const ir::Node& node, const ir::Value& out);
  // Operand `spec` of a pointwise node read as the recipe asks (lower_pointwise.cpp).
  Loader pointwise_operand(const ir::Node& node, const OperandSpec& spec, DType compute,
                           const std::vector<Expr>& out_sizes);
  LoweredValue lower_reduction(const ir::Node& node, const ir::Value& out);
  LoweredValue lower_view(const ir::Node& node, const ir::Value& out);
  LoweredValue lower_copy(const ir::Node& node);

  // Issue 6, point 6 (lower_view.cpp, lower_movement.cpp, lower_eager_layout.cpp).
  LoweredValue lower_selecting_view(const ir::Node& node, const ir::Value& out);
  LoweredValue lower_as_strided(const ir::Node& node, const ir::Value& out);
  LoweredValue lower_clone(const ir::Node& node);
  LoweredValue lower_cat(const ir::Node& node, const ir::Value& out);
  LoweredValue lower_pad(const ir::Node& node, const ir::Value& out);
  LoweredValue lower_scatter_window(const ir::Node& node, const ir::Value& out);
  LoweredValue lower_flip_roll(const ir::Node& node, const ir::Value& out);
  LoweredValue lower_indirect(const ir::Node& node, const ir::Value& out);
  // Issue 7, point 3 (lower_factory.cpp): full, arange, ... as index -> element functions.
  LoweredValue lower_factory(const ir::Node& node, const ir::Value& out);
  // Issue 14: mm, bmm, addmm, baddbmm as an external library call or a loop nest.
  LoweredValue lower_contraction(const ir::Node& node, const ir::Value& out);
  // The buffer of `sizes` that one library call (`call`) writes whole, for `node`:
  // contiguous, or dense in the order of `strides` (a call that writes eager's layout).
  LoweredValue add_external_buffer(const ir::Node& node, ExternalCall call, DType dtype,
                                   const std::vector<int64_t>& sizes,
                                   std::optional<std::vector<int64_t>> strides = std::nullopt);
  // The same over size symbols (issue 33).
  LoweredValue add_external_buffer(const ir::Node& node, ExternalCall call, DType dtype,
                                   const std::vector<Expr>& sizes,
                                   const std::vector<Expr>& strides);
  // Issue 15, point 4 (lower_scatter.cpp): index_put, index_add, scatter, scatter_add as
  // external nodes run by Stax's runtime.
  LoweredValue lower_scatter(const ir::Node& node, const ir::Value& out);
  // A scatter's iteration space over the size symbols (lower_scatter.cpp).
  std::vector<Expr> scatter_space(const ir::Node& node, const ir::ScatterArgs& a) const;
  // Issue 15, point 1 (lower_attention.cpp): attention and its backward, one runtime call
  // whose further results are ResultOf buffers.
  LoweredValue lower_attention(const ir::Node& node, const ir::Value& out);
  // Issue 16, point 7 (lower_scan.cpp): cumsum, cumprod, logcumsumexp, cummax, cummin as
  // external nodes run by Stax's runtime.
  LoweredValue lower_scan(const ir::Node& node, const ir::Value& out);
  // copy_: the value written into the input's memory in place (lower_mutation.cpp).
  LoweredValue lower_copy_in_place(const ir::Node& node, const ir::Value& out);
  // Throws std::invalid_argument for a graph output that is a view of an input copy_ writes.
  void check_no_output_sees_mutated_input() const;
  // A result after the first of a call with several results (attention's logsumexp, cummax's
  // indices): a ResultOf buffer the call writes, in `strides` (else contiguous).
  LoweredValue lower_further_result(const ir::Node& node, const ir::Value& out,
                                    const std::string& library,
                                    std::optional<std::vector<int64_t>> strides = std::nullopt);
  // The buffer of each call with several results, by the node index of its first result.
  std::map<int, LoweredValue> first_result_calls_;
  // `ref` as an external call reads it: where it is stored, else stored first (`why`).
  ExternalOperand stored_operand(ir::ValueRef ref, const std::string& why);
  // Issue 15: convolution and convolution_backward as external library calls or loop nests
  // (lower_convolution.cpp, lower_convolution_backward.cpp).
  LoweredValue lower_convolution(const ir::Node& node, const ir::Value& out);
  LoweredValue lower_convolution_backward(const ir::Node& node, const ir::Value& out);
  std::vector<ir::ValueRef> library_convolution_backward_operands(const ir::Node& node) const;
  // The call of `window` over `operands` (value and role, the bias last) where the target's
  // library runs it, computed operands stored first; nullopt (logged) when it becomes a loop
  // nest.
  std::optional<LoweredValue> library_convolution(
      const ir::Node& node, const ConvolutionWindow& window, DType dtype,
      const std::vector<std::pair<const LoweredValue*, const char*>>& operands);
  // max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d as window reductions.
  LoweredValue lower_pooling(const ir::Node& node, const ir::Value& out);
  // lower_pooling_backward.cpp: the pooling backward ops (lower_pooling hands them over).
  LoweredValue lower_pooling_backward(const ir::Node& node, const ir::Value& out);
  // Max pooling's gradient as eager computes it, a scatter-add of grad_output at the indices
  // (Stax's runtime scatter), for where the gather loop nest would not vectorize.
  LoweredValue lower_max_pool_backward_scatter(const ir::Node& node, const ir::PoolingArgs& a,
                                               const ir::Value& out);
  // The stored sum over k of a[..., i, k] * mat2[..., k, j] in `acc` (lower_contraction.cpp).
  LoweredValue sum_of_products(const ir::Node& node, const std::vector<Expr>& out_sizes,
                               size_t a_pos, size_t b_pos, DType acc);
  // A value that reads `src` through `map` (an index rewrite, no computation).
  static LoweredValue remapped(const LoweredValue& src, const std::vector<Expr>& sizes,
                               IndexMap map);
  // Stores a value into a new buffer of the given strides.
  LoweredValue realize_strided(const LoweredValue& v, const std::vector<Expr>& strides,
                               const std::string& why);
  // Where the eager interpreter keeps a value (ir/eager_storage.h). Lowering follows it
  // wherever storage is observable: `view` is refused exactly when eager refuses it, and
  // as_strided reads the base's storage.
  using EagerLayout = ir::EagerLayout;
  const EagerLayout& eager_layout(int value_index) { return eager_layouts_.of(value_index); }
  // The strides eager gives a value, as expressions. For a value of symbolic sizes eager's
  // layout is known at the hints only; where it is contiguous there (and no symbol's hint is
  // 1, which would hide a transpose) it is contiguous at every size. Other layouts of symbolic
  // values are refused by name.
  std::vector<Expr> eager_strides(int value_index) {
    const ir::TensorType& type = graph_.value(ir::ValueRef{value_index}).type;
    const EagerLayout& layout = eager_layout(value_index);
    if (!type.is_symbolic()) return index::to_exprs(layout.strides);
    bool hints_above_one = true;
    for (const auto& [name, facts] : graph_.size_symbols()) hints_above_one &= facts.hint >= 2;
    if (hints_above_one && layout.strides == ir::contiguous_strides(type.sizes)) {
      return index::contiguous_strides(type.symbolic_sizes);
    }
    throw index::SymbolicSizesRefused(
        "lowering: '" + graph_.value(ir::ValueRef{value_index}).name + "' of sizes " +
        index::format_exprs(type.symbolic_sizes) +
        " is not contiguous in eager; such layouts of sizes known only at run time are not "
        "derived yet");
  }
  ir::EagerLayouts eager_layouts_;

  const ir::Graph& graph_;
  LoweringOptions options_;
  LoweredGraph result_;
  std::vector<std::optional<LoweredValue>> values_;
  std::unordered_map<int, int> reads_;
  std::unordered_map<int, int64_t> evaluations_;
  // Values stored because a library call reads them, with the reason (the call).
  std::unordered_map<int, std::string> stored_for_library_;
  std::string current_node_;  // the node being lowered, for errors and buffer provenance
  // The results after the first of the node being lowered, for ops with several (var_mean).
  std::set<int> outputs_;
  std::set<int> seen_by_outputs_;
};

}  // namespace stax::lowering
