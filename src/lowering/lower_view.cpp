// Lowering of views (index rewrites over the input's loader, a strided layout where one
// exists) and of copies (clone, contiguous).
#include "lowering/lowerer.h"

namespace stax::lowering {

LoweredValue Lowerer::lower_view(const ir::Node& node, const ir::Value& out) {
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

LoweredValue Lowerer::lower_copy(const ir::Node& node) {
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

}  // namespace stax::lowering
