// Lowering of views (index rewrites over the input's loader, a strided layout where one
// exists) and of copies (clone, contiguous); the data-movement copies are dispatched to
// lower_movement.cpp.
#include "ir/checked_arith.h"
#include "ir/movement_args.h"
#include "ir/text_format.h"
#include "ir/view_layout.h"
#include "lowering/lowerer.h"

namespace stax::lowering {

namespace {

// The strided layout (strides, offset) a view reads its operand's storage through, derived
// from the view's index map: the storage offset of map(idx) over `strides` must be linear in
// idx at every size the symbols allow (checked by equality of canonical forms), and its
// coefficients are the strides. Dims of size 1 take the stride a contiguous layout gives them
// (never stepped along). nullopt where no strides express the view (a reshape that must copy).
// This serves views of symbolic sizes; static views keep eager's rule (ir::view_layout).
std::optional<std::pair<std::vector<Expr>, Expr>> layout_through(
    const IndexMap& map, const std::vector<Expr>& sizes, const std::vector<Expr>& strides,
    const Expr& offset, const index::SymbolTable& symbols) {
  std::vector<Expr> idx;
  std::map<std::string, Expr> extents;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const std::string name = "v" + std::to_string(k);
    idx.push_back(Expr::var(name));
    extents[name] = sizes[k];
  }
  const index::Domain domain(extents, symbols);
  const Expr at = index::simplify(strided_offset(map(idx), strides, offset), domain);
  std::map<std::string, Expr> origin;
  for (const auto& [name, extent] : extents) origin[name] = Expr(0);
  const Expr base = index::substitute(at, origin);
  std::vector<Expr> out(sizes.size());
  Expr linear = base;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == Expr(1)) continue;
    const auto stride = index::symbolic_stride(at, "v" + std::to_string(k), domain);
    if (!stride) return std::nullopt;
    out[k] = *stride;
    linear = linear + idx[k] * *stride;
  }
  if (index::equal_within(at, linear, domain) != index::Truth::kProved) return std::nullopt;
  for (size_t k = sizes.size(); k-- > 0;) {
    if (sizes[k] == Expr(1)) out[k] = k + 1 < sizes.size() ? out[k + 1] * sizes[k + 1] : Expr(1);
  }
  return std::make_pair(out, base);
}

}  // namespace

LoweredValue Lowerer::remapped(const LoweredValue& src, const std::vector<Expr>& sizes,
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

LoweredValue Lowerer::realize_strided(const LoweredValue& v, const std::vector<Expr>& strides,
                                      const std::string& why) {
  LoweredValue stored = realize(v, why);
  if (strides == index::contiguous_strides(v.sizes)) return stored;
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
  const bool symbolic = has_symbolic_sizes(node);
  IndexMap map;
  if (symbolic && node.op != "split" && node.op != "split_with_sizes") {
    // Issue 33: the window as expressions (x[:, -1] of a dim of size s0 takes s0 - 1).
    const ir::SymbolicWindow w = ir::symbolic_window(graph_, node);
    map = node.op == "select" ? select_index(w.dim, w.start) : window_index(w.dim, w.start, w.step);
  } else if (node.op == "select") {
    const ir::SelectArgs s = ir::select_args(graph_, node);
    map = select_index(s.dim, s.index);
  } else {
    // split and split_with_sizes cut a static dim (ir/symbolic_shapes.h): static windows.
    const ir::DimWindow w = ir::window_args(graph_, node);
    map = window_index(w.dim, w.start, w.step);
  }
  LoweredValue v = remapped(src, sizes_of(out.type), map);
  // A view composes an index rewrite: the kernels that read through it came from it too.
  v.composed = composed_over_operands(node);
  if (src.layout && symbolic) {
    if (auto layout = layout_through(map, v.sizes, src.layout->strides, src.layout->offset,
                                     graph_.size_symbols())) {
      v.layout =
          StridedLayout{src.layout->buffer, src.layout->is_input, layout->first, layout->second};
    } else {
      v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
    }
  } else if (src.layout) {
    const ir::ViewLayout layout = *ir::view_layout(
        graph_, node, index::static_values(src.layout->strides, "lowering " + node.op),
        index::static_value(src.layout->offset, "lowering " + node.op));
    v.layout = StridedLayout{src.layout->buffer, src.layout->is_input,
                             index::to_exprs(layout.strides), layout.offset};
  } else {
    v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
  }
  return v;
}

// as_strided addresses the storage of the eager value directly (its base, see eager_layout),
// so it reads that storage: a graph input, or the base stored in its eager layout.
LoweredValue Lowerer::lower_as_strided(const ir::Node& node, const ir::Value& out) {
  if (has_symbolic_sizes(node)) {
    throw index::SymbolicSizesRefused(
        "lowering as_strided: sizes known only at run time are not taken yet (its strides "
        "address eager's storage at one size)");
  }
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
    if (!base.layout || base.layout->strides != index::to_exprs(base_layout.strides) ||
        base.layout->offset != Expr(0) || base.layout->is_input) {
      stored = realize_strided(base, index::to_exprs(base_layout.strides),
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
  v.sizes = sizes_of(out.type);
  v.layout = StridedLayout{buffer, is_input, index::to_exprs(layout.strides), layout.offset};
  v.pure_view = true;
  v.loader = make_load(buffer, out.type.dtype, index::to_exprs(layout.strides), layout.offset);
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
  const std::vector<Expr> in_sizes = sizes_of(in.type);
  const std::vector<Expr> out_sizes = sizes_of(out.type);
  const bool symbolic = has_symbolic_sizes(node);
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
    for (size_t d = 0; d < in_sizes.size(); ++d) removed[d] = !dims && in_sizes[d] == Expr(1);
    if (dims) {
      for (int64_t d : *dims) {
        if (in_sizes.empty()) continue;  // squeezing a 0-dim tensor leaves it as it is
        const auto nd = static_cast<size_t>(ir::normalize_dim(d, in_sizes.size(), node.op));
        removed[nd] = in_sizes[nd] == Expr(1);
      }
    }
    map = squeeze_index(removed);
  } else if (node.op == "expand") {
    map = broadcast_index(in_sizes, out_sizes);
  } else if (node.op == "reshape" || node.op == "view") {
    map = reshape_index(in_sizes, out_sizes, graph_.size_symbols());
    // Refused exactly where eager refuses it: by the strides the eager value has (a symbolic
    // view was checked by the graph's shape rule: of a contiguous layout).
    if (node.op == "view" && !symbolic) eager_layout(node.output.index);
  } else {
    throw std::invalid_argument("lowering: no lowering for view op " + node.op);
  }
  LoweredValue v = remapped(src, out_sizes, map);
  v.composed = composed_over_operands(node);
  // The layout of the view over the stored data, where strides express it (eager's rule,
  // applied to lowering's layout of the operand, which may differ from eager's).
  std::optional<std::vector<Expr>> strides;
  if (src.layout && symbolic) {
    if (auto layout =
            layout_through(map, out_sizes, src.layout->strides, Expr(0), graph_.size_symbols())) {
      strides = std::move(layout->first);
    }
  } else if (src.layout) {
    const auto src_strides = index::static_values(src.layout->strides, "lowering " + node.op);
    const auto in_static = index::static_values(in_sizes, "lowering " + node.op);
    const auto out_static = index::static_values(out_sizes, "lowering " + node.op);
    std::optional<std::vector<int64_t>> found;
    if (node.op == "reshape" || node.op == "view") {
      found = ir::view_strides(in_static, src_strides, out_static);
    } else {
      found = ir::view_layout(graph_, node, src_strides, 0)->strides;
    }
    if (found) strides = index::to_exprs(*found);
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
  const bool alias = src.layout && src.layout->strides == index::contiguous_strides(src.sizes);
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
      eager_strides(node.output.index) == src.layout->strides) {
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
    v = realize_strided(v, eager_strides(node.output.index), "graph output");
  }
  return v;
}

}  // namespace stax::lowering
