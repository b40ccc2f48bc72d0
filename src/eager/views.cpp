// View and copy ops of the eager interpreter. Views (reshape when possible, view, permute,
// transpose, unsqueeze, squeeze, expand, slice, select, narrow, split, as_strided) return
// tensors sharing their operand's storage with PyTorch's strides; contiguous (when needed)
// returns a fresh contiguous copy, clone a fresh copy in the layout its memory_format asks.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "eager/interpreter.h"
#include "eager/ops.h"
#include "ir/checked_arith.h"
#include "ir/op_schema.h"
#include "ir/view_layout.h"

namespace stax::eager {

namespace detail {

Tensor broadcast_to(const Tensor& t, const std::vector<int64_t>& sizes) {
  if (sizes.size() < t.dim()) {
    throw std::logic_error("eager: cannot broadcast " + shape_to_string(t.sizes()) + " to " +
                           shape_to_string(sizes));
  }
  const size_t lead = sizes.size() - t.dim();
  std::vector<int64_t> strides(sizes.size(), 0);
  for (size_t i = lead; i < sizes.size(); ++i) {
    const int64_t size = t.sizes()[i - lead];
    if (size == sizes[i]) {
      strides[i] = t.strides()[i - lead];
    } else if (size == 1) {
      strides[i] = 0;
    } else {
      throw std::logic_error("eager: cannot broadcast " + shape_to_string(t.sizes()) + " to " +
                             shape_to_string(sizes));
    }
  }
  return t.as_strided(sizes, strides, t.offset());
}

Tensor eval_reshape(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const std::vector<int64_t>& sizes = env.result_type(node).sizes;  // -1 already resolved
  if (auto strides = view_strides(in.sizes(), in.strides(), sizes)) {
    return in.as_strided(sizes, *strides, in.offset());
  }
  return in.contiguous_copy().as_strided(sizes, ir::contiguous_strides(sizes), 0);
}

Tensor eval_view(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const std::vector<int64_t>& sizes = env.result_type(node).sizes;
  auto strides = view_strides(in.sizes(), in.strides(), sizes);
  if (!strides) {
    throw std::invalid_argument(
        "eager: view: view size is not compatible with input tensor's size and stride (viewing "
        "sizes " +
        shape_to_string(in.sizes()) + " with strides " + shape_to_string(in.strides()) + " as " +
        shape_to_string(sizes) +
        " would make a dimension span memory that is not uniformly strided); use reshape "
        "instead");
  }
  return in.as_strided(sizes, *strides, in.offset());
}

Tensor eval_permute(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const std::vector<int64_t> dims = ir::int_list_arg(node, 1).value();
  if (dims.size() != in.dim()) throw std::logic_error("eager: permute: wrong number of dims");
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  for (int64_t d : dims) {
    const size_t n = static_cast<size_t>(ir::normalize_dim(d, in.dim(), node.op));
    sizes.push_back(in.sizes()[n]);
    strides.push_back(in.strides()[n]);
  }
  return in.as_strided(sizes, strides, in.offset());
}

Tensor eval_transpose(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  std::vector<int64_t> sizes = in.sizes();
  std::vector<int64_t> strides = in.strides();
  if (in.dim() > 0) {
    const size_t a =
        static_cast<size_t>(ir::normalize_dim(ir::int_arg(node, 1), in.dim(), node.op));
    const size_t b =
        static_cast<size_t>(ir::normalize_dim(ir::int_arg(node, 2), in.dim(), node.op));
    std::swap(sizes[a], sizes[b]);
    std::swap(strides[a], strides[b]);
  }
  return in.as_strided(sizes, strides, in.offset());
}

Tensor eval_unsqueeze(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const size_t d =
      static_cast<size_t>(ir::normalize_dim(ir::int_arg(node, 1), in.dim() + 1, node.op));
  std::vector<int64_t> sizes = in.sizes();
  std::vector<int64_t> strides = in.strides();
  // PyTorch's stride for the new size-1 dim; any stride serves a dim that is never stepped
  // along, so 1 where that product would overflow.
  const int64_t stride = d < in.dim() ? checked_mul(sizes[d], strides[d]).value_or(1) : 1;
  sizes.insert(sizes.begin() + static_cast<std::ptrdiff_t>(d), 1);
  strides.insert(strides.begin() + static_cast<std::ptrdiff_t>(d), stride);
  return in.as_strided(sizes, strides, in.offset());
}

Tensor eval_squeeze(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const std::optional<std::vector<int64_t>> dims = ir::int_list_arg(node, 1);
  std::vector<bool> listed(in.dim(), !dims.has_value());  // None: every dim
  if (dims && in.dim() > 0) {
    for (int64_t d : *dims)
      listed[static_cast<size_t>(ir::normalize_dim(d, in.dim(), node.op))] = true;
  }
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  for (size_t i = 0; i < in.dim(); ++i) {
    if (listed[i] && in.sizes()[i] == 1) continue;
    sizes.push_back(in.sizes()[i]);
    strides.push_back(in.strides()[i]);
  }
  return in.as_strided(sizes, strides, in.offset());
}

Tensor eval_expand(const Env& env, const ir::Node& node) {
  return broadcast_to(env.tensor(node, 0), env.result_type(node).sizes);  // -1 resolved
}

Tensor eval_clone(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const std::optional<std::string> format = ir::string_arg(node, 1);
  if (format == "contiguous_format") return in.contiguous_copy();
  // None is preserve_format (ATen's default), the layout torch.empty_like gives.
  Tensor out = Tensor::empty_strided(in.dtype(), in.sizes(),
                                     ir::preserved_strides(in.sizes(), in.strides()));
  const size_t element = dtype_size(in.dtype());
  for (int64_t p = 0; p < in.numel(); ++p) {
    const std::vector<int64_t> idx = unravel_index(p, in.sizes());
    int64_t from = 0;
    int64_t to = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      from += idx[d] * in.strides()[d];
      to += idx[d] * out.strides()[d];
    }
    std::memcpy(static_cast<char*>(out.data()) + to * static_cast<int64_t>(element),
                static_cast<const char*>(in.data()) + from * static_cast<int64_t>(element),
                element);
  }
  return out;
}

Tensor eval_selecting_view(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  ir::ViewLayout layout = ir::view_layout(env.graph, node, in.strides(), in.offset());
  try {
    return in.as_strided(std::move(layout.sizes), std::move(layout.strides), layout.offset);
  } catch (const std::out_of_range& e) {
    // as_strided: the requested layout reaches past the operand's storage.
    throw std::out_of_range(node.op + ": the layout reaches past the storage of its input (" +
                            std::to_string(in.storage()->nbytes()) + " bytes): " + e.what());
  }
}

Tensor eval_contiguous(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  return in.is_contiguous() ? in : in.contiguous_copy();
}

}  // namespace detail
}  // namespace stax::eager
