// View and copy ops of the eager interpreter. Views (reshape when possible, view, permute,
// transpose, unsqueeze, squeeze, expand, slice, select, narrow, split, as_strided) return
// tensors sharing their operand's storage with PyTorch's strides (ir::view_layout, which
// lowering uses too); contiguous (when needed) returns a fresh contiguous copy, clone a fresh
// copy in the layout its memory_format asks.
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

Tensor eval_view_op(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  std::optional<ir::ViewLayout> layout =
      ir::view_layout(env.graph, node, in.strides(), in.offset());
  if (!layout) {  // a reshape no strides express: a copy, viewed
    const std::vector<int64_t>& sizes = env.result_type(node).sizes;
    return in.contiguous_copy().as_strided(sizes, ir::contiguous_strides(sizes), 0);
  }
  try {
    return in.as_strided(std::move(layout->sizes), std::move(layout->strides), layout->offset);
  } catch (const std::out_of_range& e) {
    // as_strided: the requested layout reaches past the operand's storage.
    throw std::out_of_range(node.op + ": the layout reaches past the storage of its input (" +
                            std::to_string(in.storage()->nbytes()) + " bytes): " + e.what());
  }
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

Tensor eval_contiguous(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  return in.is_contiguous() ? in : in.contiguous_copy();
}

}  // namespace detail
}  // namespace stax::eager
