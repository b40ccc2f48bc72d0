// Lowering of views (index rewrites over the input's loader, a strided layout where one
// exists) and of copies (clone, contiguous); the data-movement copies are dispatched to
// lower_movement.cpp.
#include "ir/checked_arith.h"
#include "ir/movement_args.h"
#include "ir/text_format.h"
#include "ir/view_layout.h"
#include "lowering/lowerer.h"

namespace stax::lowering {

LoweredValue Lowerer::remapped(const LoweredValue& src, const std::vector<int64_t>& sizes,
                               IndexMap map) {
  LoweredValue v;
  v.dtype = src.dtype;
  v.sizes = sizes;
  v.origin = src.origin;
  v.pure_view = src.pure_view;
  v.stats = src.stats;
  Loader inner = src.loader;
  v.loader = [inner, map](OpsHandler& h, const std::vector<Expr>& idx) {
    return inner(h, map(idx));
  };
  return v;
}

LoweredValue Lowerer::realize_strided(const LoweredValue& v, const std::vector<int64_t>& strides,
                                      const std::string& why) {
  LoweredValue stored = realize(v, why);
  if (strides == ir::contiguous_strides(v.sizes)) return stored;
  // realize() stored it contiguously: give the buffer just made the requested layout.
  ComputedBuffer& buf = result_.buffers.back();
  buf.strides = strides;
  buf.output_index = [strides](const std::vector<Expr>& idx) {
    return strided_offset(idx, strides);
  };
  stored.layout->strides = strides;
  stored.loader = make_load(buf.name, buf.dtype, strides, 0);
  return stored;
}

LoweredValue Lowerer::lower_selecting_view(const ir::Node& node, const ir::Value& out) {
  const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
  IndexMap map;
  if (node.op == "select") {
    const ir::SelectArgs s = ir::select_args(graph_, node);
    map = select_index(s.dim, s.index);
  } else {
    const ir::DimWindow w = ir::window_args(graph_, node);
    map = window_index(w.dim, w.start, w.step);
  }
  LoweredValue v = remapped(src, out.type.sizes, map);
  // A view composes an index rewrite: the kernels that read through it came from it too.
  v.composed = composed_over_operands(node);
  if (src.layout) {
    const ir::ViewLayout layout =
        *ir::view_layout(graph_, node, src.layout->strides, src.layout->offset);
    v.layout =
        StridedLayout{src.layout->buffer, src.layout->is_input, layout.strides, layout.offset};
  } else {
    v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
  }
  return v;
}

// as_strided addresses the storage of the eager value directly (its base, see eager_layout),
// so it reads that storage: a graph input, or the base stored in its eager layout.
LoweredValue Lowerer::lower_as_strided(const ir::Node& node, const ir::Value& out) {
  const EagerLayout& layout = eager_layout(node.output.index);
  const ir::Value& base_value = graph_.value(ir::ValueRef{layout.base});
  const LoweredValue& base = value(layout.base);
  std::string buffer;
  bool is_input = false;
  int64_t storage_elements = 0;  // elements the base's storage holds
  const EagerLayout& base_layout = eager_layout(layout.base);
  if (base_value.producer < 0) {
    buffer = base_value.name;
    is_input = true;
    storage_elements = 1;
    for (size_t d = 0; d < base_value.type.sizes.size(); ++d) {
      if (base_value.type.sizes[d] == 0) storage_elements = 0;
    }
    if (storage_elements != 0) {
      for (size_t d = 0; d < base_value.type.sizes.size(); ++d) {
        storage_elements += (base_value.type.sizes[d] - 1) * base_value.type.strides[d];
      }
    }
  } else {
    LoweredValue stored = base;
    if (!base.layout || base.layout->strides != base_layout.strides || base.layout->offset != 0 ||
        base.layout->is_input) {
      stored = realize_strided(base, base_layout.strides,
                               "as_strided reads its storage (" + current_node_ + ")");
      values_[static_cast<size_t>(layout.base)] = stored;
    }
    buffer = stored.layout->buffer;
    storage_elements = base_value.type.numel();
  }
  // The elements the view reaches must lie in that storage, as PyTorch checks.
  int64_t extent = layout.offset + 1;
  bool empty = false;
  for (size_t d = 0; d < out.type.sizes.size(); ++d) {
    if (out.type.sizes[d] == 0) empty = true;
    extent += (out.type.sizes[d] - 1) * layout.strides[d];
  }
  if (!empty && extent > storage_elements) {
    throw std::invalid_argument(
        "as_strided: sizes " + ir::format_sizes(out.type.sizes) + ", strides " +
        ir::format_sizes(layout.strides) + " and storage offset " + std::to_string(layout.offset) +
        " reach element " + std::to_string(extent - 1) + " of a storage of " +
        std::to_string(storage_elements) + " elements ('" + base_value.name + "')");
  }
  LoweredValue v;
  v.dtype = out.type.dtype;
  v.sizes = out.type.sizes;
  v.layout = StridedLayout{buffer, is_input, layout.strides, layout.offset};
  v.pure_view = true;
  v.loader = make_load(buffer, out.type.dtype, layout.strides, layout.offset);
  v.stats = load_stats();
  // It reads the storage itself, not through its operand's loader.
  v.composed = ComposedNodes(node_index(node), {});
  return v;
}

LoweredValue Lowerer::lower_view(const ir::Node& node, const ir::Value& out) {
  if (node.op == "slice" || node.op == "select" || node.op == "narrow" || node.op == "split" ||
      node.op == "split_with_sizes") {
    return lower_selecting_view(node, out);
  }
  if (node.op == "as_strided") return lower_as_strided(node, out);
  const ir::Value& in = ir::tensor_arg(graph_, node, 0);
  const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
  const auto& in_sizes = in.type.sizes;
  const auto& out_sizes = out.type.sizes;
  IndexMap map;
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
  } else if (node.op == "unsqueeze") {
    map = unsqueeze_index(ir::normalize_dim(ir::int_arg(node, 1), in_sizes.size() + 1, node.op));
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
  } else if (node.op == "expand") {
    map = broadcast_index(in_sizes, out_sizes);
  } else if (node.op == "reshape" || node.op == "view") {
    map = reshape_index(in_sizes, out_sizes);
    // Refused exactly where eager refuses it: by the strides the eager value has.
    if (node.op == "view") eager_layout(node.output.index);
  } else {
    throw std::invalid_argument("lowering: no lowering for view op " + node.op);
  }
  LoweredValue v = remapped(src, out_sizes, map);
  v.composed = composed_over_operands(node);
  // The layout of the view over the stored data, where strides express it (eager's rule,
  // applied to lowering's layout of the operand, which may differ from eager's).
  std::optional<std::vector<int64_t>> strides;
  if (src.layout) {
    if (node.op == "reshape" || node.op == "view") {
      strides = ir::view_strides(in_sizes, src.layout->strides, out_sizes);
    } else {
      strides = ir::view_layout(graph_, node, src.layout->strides, src.layout->offset)->strides;
    }
  }
  if (strides) {
    v.layout =
        StridedLayout{src.layout->buffer, src.layout->is_input, *strides, src.layout->offset};
  } else {
    v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
  }
  return v;
}

LoweredValue Lowerer::lower_copy(const ir::Node& node) {
  const ir::Value& out = graph_.value(node.output);
  if (node.op == "cat" || node.op == "stack") return lower_cat(node, out);
  if (node.op == "constant_pad_nd") return lower_pad(node, out);
  if (node.op == "slice_scatter" || node.op == "select_scatter") {
    return lower_scatter_window(node, out);
  }
  if (node.op == "flip" || node.op == "roll") return lower_flip_roll(node, out);
  if (node.op == "index_select" || node.op == "gather" || node.op == "embedding" ||
      node.op == "index") {
    return lower_indirect(node, out);
  }
  if (node.op == "clone") return lower_clone(node);
  const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
  LoweredValue v = src;
  v.composed = composed_over_operands(node);
  // `contiguous` aliases its input when the input already is contiguous.
  const bool alias = src.layout && src.layout->strides == ir::contiguous_strides(src.sizes);
  if (!alias) {
    v.layout.reset();
    v.pure_view = false;
    append_unique(v.origin, node.op);
  }
  return v;
}

}  // namespace stax::lowering

namespace stax::lowering {

// A clone is composed into its users like any copy; only where its layout is observable —
// as a graph output — is it stored, in the layout eager gives it (memory_format). A clone of
// stored data that eager lays out as that data is stored reads the same storage (the graph
// is functional: nothing writes either of them later), so views of it stay layouts a
// library call reads in place.
LoweredValue Lowerer::lower_clone(const ir::Node& node) {
  const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
  if (!outputs_.count(node.output.index) && src.layout && src.pure_view &&
      eager_layout(node.output.index).strides == src.layout->strides) {
    LoweredValue alias = src;
    alias.composed = composed_over_operands(node);
    return alias;
  }
  LoweredValue v = src;
  v.layout.reset();
  v.pure_view = false;
  append_unique(v.origin, node.op);
  v.composed = composed_over_operands(node);
  if (outputs_.count(node.output.index)) {
    v = realize_strided(v, eager_layout(node.output.index).strides, "graph output");
  }
  return v;
}

}  // namespace stax::lowering
