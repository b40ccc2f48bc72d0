// View and copy ops of the eager interpreter. Views (reshape when possible, view, permute,
// transpose, unsqueeze, squeeze, expand) return tensors sharing their operand's storage with
// PyTorch's strides; clone and contiguous (when needed) return fresh contiguous copies.
#include <algorithm>
#include <stdexcept>

#include "eager/interpreter.h"
#include "eager/ops.h"
#include "ir/checked_arith.h"
#include "ir/op_schema.h"

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
  return env.tensor(node, 0).contiguous_copy();
}

Tensor eval_contiguous(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  return in.is_contiguous() ? in : in.contiguous_copy();
}

}  // namespace detail
}  // namespace stax::eager
