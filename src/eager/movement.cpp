// Data-movement ops of the eager interpreter that copy: cat, stack, constant_pad_nd, flip,
// roll, slice_scatter, select_scatter, and the indirect loads gather, index_select, embedding and
// index.Tensor. Each builds a fresh contiguous result by finding, for every output element, the
// source element it takes (argument meanings from ir/movement_args.h, shared with lowering).
// Elements are copied bit for bit; cat and stack convert to the promoted dtype exactly.
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "eager/ops.h"
#include "ir/movement_args.h"
#include "ir/op_schema.h"

namespace stax::eager::detail {

namespace {

char* element_address(const Tensor& t, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.strides()[d];
  return static_cast<char*>(t.data()) + offset * static_cast<int64_t>(dtype_size(t.dtype()));
}

// Copies src[src_index] into dst[dst_index], converting to dst's dtype as PyTorch's copy
// does for the widening conversions of type promotion (integers to floats rounded once).
void copy_element(const Tensor& src, const std::vector<int64_t>& src_index, const Tensor& dst,
                  const std::vector<int64_t>& dst_index) {
  if (src.dtype() == dst.dtype()) {
    std::memcpy(element_address(dst, dst_index), element_address(src, src_index),
                dtype_size(src.dtype()));
    return;
  }
  if (is_integer_like(src.dtype())) {
    const int64_t v = load_int(src, src_index);
    if (is_integer_like(dst.dtype())) {
      store_int(dst, dst_index, v);
    } else if (dst.dtype() == DType::Float64) {
      dst.set(dst_index, static_cast<double>(v));
    } else {  // float32, and float16/bfloat16 through float as PyTorch converts them
      dst.set(dst_index, static_cast<double>(static_cast<float>(v)));
    }
    return;
  }
  if (is_integer_like(dst.dtype())) {
    throw std::logic_error("eager: a floating element never converts to an integer in a copy");
  }
  dst.set(dst_index, src.get(src_index));  // float widening is exact
}

// Fills an element with a checked fill value (ir::check_fill_value) as PyTorch's fill does:
// integers truncate toward zero, bool is value != 0, floats round to nearest.
void fill_element(const Tensor& dst, const std::vector<int64_t>& index, double value) {
  if (dst.dtype() == DType::Bool) {
    store_int(dst, index, value != 0.0 ? 1 : 0);
  } else if (is_integral(dst.dtype())) {
    store_int(dst, index, static_cast<int64_t>(std::trunc(value)));
  } else {
    dst.set(index, value);
  }
}

// Runs `element` for every index of a new contiguous tensor of the node's result type.
Tensor build(const Env& env, const ir::Node& node,
             const std::function<void(const Tensor& out, const std::vector<int64_t>&)>& element) {
  const ir::TensorType& type = env.result_type(node);
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  const int64_t n = out.numel();
  for (int64_t p = 0; p < n; ++p) element(out, unravel_index(p, type.sizes));
  return out;
}

const Tensor& value_of(const Env& env, ir::ValueRef ref) {
  const Tensor& t = env.values.at(static_cast<size_t>(ref.index));
  if (!t.defined()) {
    throw std::logic_error("eager: value '" + env.graph.value(ref).name +
                           "' used before definition");
  }
  return t;
}

}  // namespace

Tensor eval_cat(const Env& env, const ir::Node& node) {
  const ir::CatArgs c = ir::cat_args(env.graph, node);
  const auto dim = static_cast<size_t>(c.dim);
  return build(env, node, [&](const Tensor& out, const std::vector<int64_t>& idx) {
    for (const ir::CatPart& part : c.parts) {
      const int64_t at = idx[dim] - part.offset;
      if (at < 0 || at >= part.size) continue;
      std::vector<int64_t> src = idx;
      if (c.stacked) {
        src.erase(src.begin() + c.dim);
      } else {
        src[dim] = at;
      }
      copy_element(value_of(env, part.value), src, out, idx);
      return;
    }
    throw std::logic_error("eager: cat: no operand covers an output element");
  });
}

Tensor eval_constant_pad_nd(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const ir::PadArgs p = ir::pad_args(env.graph, node);
  return build(env, node, [&](const Tensor& out, const std::vector<int64_t>& idx) {
    std::vector<int64_t> src(idx.size());
    for (size_t d = 0; d < idx.size(); ++d) {
      src[d] = idx[d] - p.before[d];
      if (src[d] < 0 || src[d] >= in.sizes()[d]) {
        fill_element(out, idx, p.value);
        return;
      }
    }
    copy_element(in, src, out, idx);
  });
}

Tensor eval_scatter_window(const Env& env, const ir::Node& node) {
  const Tensor& self = env.tensor(node, 0);
  const Tensor& src = env.tensor(node, 1);
  const ir::ScatterWindowArgs a = ir::scatter_window_args(env.graph, node);
  const ir::DimWindow& w = a.window;
  const auto dim = static_cast<size_t>(w.dim);
  return build(env, node, [&](const Tensor& out, const std::vector<int64_t>& idx) {
    const int64_t offset = idx[dim] - w.start;
    if (offset < 0 || offset % w.step != 0 || offset / w.step >= w.length) {
      copy_element(self, idx, out, idx);
      return;
    }
    std::vector<int64_t> at = idx;
    if (a.selected) {
      at.erase(at.begin() + w.dim);
    } else {
      at[dim] = offset / w.step;
    }
    copy_element(src, at, out, idx);
  });
}

Tensor eval_flip(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const std::vector<bool> flipped = ir::flip_dims(env.graph, node);
  return build(env, node, [&](const Tensor& out, const std::vector<int64_t>& idx) {
    std::vector<int64_t> src = idx;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (flipped[d]) src[d] = in.sizes()[d] - 1 - idx[d];
    }
    copy_element(in, src, out, idx);
  });
}

Tensor eval_roll(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const ir::RollArgs r = ir::roll_args(env.graph, node);
  const int64_t numel = in.numel();
  return build(env, node, [&](const Tensor& out, const std::vector<int64_t>& idx) {
    std::vector<int64_t> src = idx;
    if (r.flattened) {
      int64_t flat = 0;
      for (size_t d = 0; d < idx.size(); ++d) flat = flat * in.sizes()[d] + idx[d];
      src = unravel_index((flat - r.flat_shift + numel) % numel, in.sizes());
    } else {
      for (size_t d = 0; d < idx.size(); ++d) {
        src[d] = (idx[d] - r.shifts[d] + in.sizes()[d]) % in.sizes()[d];
      }
    }
    copy_element(in, src, out, idx);
  });
}

Tensor eval_indirect(const Env& env, const ir::Node& node) {
  const ir::IndirectArgs a = ir::indirect_args(env.graph, node);
  std::vector<const Tensor*> indices;
  for (const ir::IndexTerm& t : a.terms) indices.push_back(&value_of(env, t.index));
  if (a.empty_result_rule) {
    // No element of the empty result reads through the index, but eager checks every value.
    const Tensor& index = *indices.front();
    for (int64_t p = 0; p < index.numel(); ++p) {
      const int64_t value = load_int(index, unravel_index(p, index.sizes()));
      if (!a.empty_result_rule->accepts(value)) a.empty_result_rule->fail(value);
    }
  }
  const Tensor& source = value_of(env, a.source);
  std::vector<int64_t> selected(a.terms.size(), 0);
  return build(env, node, [&](const Tensor& out, const std::vector<int64_t>& idx) {
    for (size_t k = 0; k < a.terms.size(); ++k) {
      const ir::IndexTerm& t = a.terms[k];
      std::vector<int64_t> at;
      for (int64_t d : t.index_dims) at.push_back(d < 0 ? 0 : idx[static_cast<size_t>(d)]);
      const int64_t value = load_int(*indices[k], at);
      if (!t.rule.accepts(value)) t.rule.fail(value);
      selected[k] = value < 0 ? value + t.size : value;
    }
    std::vector<int64_t> src;
    for (int64_t d : a.source_dims) {
      const auto k = ir::IndirectArgs::term_of(d);
      src.push_back(k ? selected[*k] : idx[static_cast<size_t>(d)]);
    }
    copy_element(source, src, out, idx);
  });
}

}  // namespace stax::eager::detail
