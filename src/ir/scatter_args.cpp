// The scatters' arguments, checked as torch 2.13.0 checks them (messages probed on its CPU
// kernels; see scatter_args.h).
#include "ir/scatter_args.h"

#include <string>

#include "ir/op_schema.h"
#include "ir/op_schemas_internal.h"
#include "ir/text_format.h"

namespace stax::ir {

namespace {

using detail::wrap_dim;

[[noreturn]] void fail(const Node& node, const std::string& message) {
  throw GraphError(node.op + ": " + message);
}

const Value& checked_index(const Graph& graph, const Node& node, size_t position) {
  const Value& index = tensor_arg(graph, node, position);
  const DType d = index.type.dtype;
  if (d != DType::Int64 && d != DType::Int32) {
    fail(node, "Expected dtype int32/int64 for index '" + index.name + "' but got " +
                   std::string(dtype_name(d)));
  }
  return index;
}

void require_same_dtype(const Graph& graph, const Node& node, size_t position,
                        const std::string& message) {
  const DType self = tensor_arg(graph, node, 0).type.dtype;
  const DType other = tensor_arg(graph, node, position).type.dtype;
  if (self != other) {
    fail(node, message + " (self " + std::string(dtype_name(self)) + ", " +
                   tensor_arg(graph, node, position).name + " " + std::string(dtype_name(other)) +
                   ")");
  }
}

// index_put(self, indices, values, accumulate): index.Tensor's layout; values broadcast to the
// indexing result (right-aligned, as PyTorch broadcasts).
void index_put_args(const Graph& graph, const Node& node, ScatterArgs& a) {
  a.layout = indirect_layout(graph, node, "index");
  const Value& values = tensor_arg(graph, node, 2);
  const DType self_dtype = a.dtype;
  if (values.type.dtype != self_dtype) {
    fail(node, "Index put requires the source and destination dtypes match, got " +
                   std::string(dtype_name(self_dtype)) + " for the destination and " +
                   std::string(dtype_name(values.type.dtype)) + " for the source");
  }
  const std::vector<int64_t>& space = a.layout.sizes;
  const std::vector<int64_t>& v = values.type.sizes;
  const std::string mismatch = "shape mismatch: value tensor of shape " + format_sizes(v) +
                               " cannot be broadcast to indexing result of shape " +
                               format_sizes(space);
  // More dims than the indexing result are refused, even leading dims of size 1 (eager's
  // is_expandable_to; Python's `x[i] = v` strips them before it calls index_put).
  if (v.size() > space.size()) fail(node, mismatch);
  a.values_dims.assign(space.size(), -1);
  for (size_t d = 0; d < space.size(); ++d) {
    const int64_t from_end = static_cast<int64_t>(space.size() - d);
    const int64_t k = static_cast<int64_t>(v.size()) - from_end;
    if (k < 0) continue;
    const int64_t size = v[static_cast<size_t>(k)];
    if (size == space[d]) {
      a.values_dims[d] = k;
    } else if (size != 1) {
      fail(node, mismatch);
    }
  }
  a.values = std::get<ValueRef>(node.args[2]);
  a.combine = bool_arg(node, 3) ? ScatterCombine::Add : ScatterCombine::Assign;
  set_index_tensor_rules(node, a.layout);
}

// The rule of index_add, scatter and scatter_add: [0, size), RuntimeError.
IndexRule runtime_error_rule(const Node& node, int64_t dim, int64_t size) {
  IndexRule r;
  r.size = size;
  r.message = node.op + ": index {} is out of bounds for dimension " + std::to_string(dim) +
              " with size " + std::to_string(size);
  return r;
}

// index_add(self, dim, index, source, alpha): index_select's layout; source has its result's
// sizes.
void index_add_args(const Graph& graph, const Node& node, ScatterArgs& a) {
  const std::vector<int64_t>& self = tensor_arg(graph, node, 0).type.sizes;
  if (self.empty()) fail(node, "a 0-dim self is not supported (index_add of a 1-D tensor is)");
  const int64_t dim = wrap_dim(int_arg(node, 1), self.size(), node.op, "dim");
  const Value& index = checked_index(graph, node, 2);
  const std::vector<int64_t>& isz = index.type.sizes;
  if (isz.size() > 1) {
    fail(node, "Index is supposed to be a vector, but got dim: " + std::to_string(isz.size()) +
                   " with size: " + format_sizes(isz));
  }
  require_same_dtype(graph, node, 3, "self and source must have the same scalar type");
  const Value& source = tensor_arg(graph, node, 3);
  const std::vector<int64_t>& ssz = source.type.sizes;
  const int64_t count = index.type.numel();
  const auto d0 = static_cast<size_t>(dim);
  const int64_t source_count = d0 < ssz.size() ? ssz[d0] : 1;
  if (source_count != count) {
    fail(node, "Number of indices (" + std::to_string(count) +
                   ") should be equal to source.size(dim): (" + std::to_string(source_count) +
                   "), for dim: " + std::to_string(dim));
  }
  bool same = ssz.size() == self.size();
  for (size_t d = 0; same && d < self.size(); ++d) same = d == d0 || self[d] == ssz[d];
  if (!same) {
    fail(node,
         "source tensor shape must match self tensor shape, excluding the specified dimension. "
         "Got self.shape = " +
             format_sizes(self) + " source.shape = " + format_sizes(ssz));
  }
  a.layout = indirect_layout(graph, node, "index_select");
  a.values = std::get<ValueRef>(node.args[3]);
  for (size_t d = 0; d < self.size(); ++d) a.values_dims.push_back(static_cast<int64_t>(d));
  a.combine = ScatterCombine::Add;
  a.alpha = scalar_arg(node, 4);
  // Eager (torch 2.13.0's index_add_cpu_) takes one of three paths:
  // - a self of rank 2 or more without elements, or an empty index: it returns self before
  //   it reads the index or converts alpha. An empty space says so (the space is already
  //   empty unless self is empty along dim only).
  // - along the first or the last dim of a self of rank 2 or more, with an int64 index and
  //   alpha 1 (not True): scatter_add with the index expanded, so 16-bit sums are kept in
  //   float and rounded once, and a bad index is scatter_add's RuntimeError.
  // - otherwise a loop over the index, which raises IndexError "index out of range in self"
  //   for a bad value, and adds alpha * source (eager/scatter.cpp says in which arithmetic)
  //   after converting alpha to the dtype, which refuses values that overflow it.
  const size_t rank = self.size();
  int64_t self_numel = 1;
  for (int64_t s : self) self_numel *= s;
  if (rank > 1 && self_numel == 0) a.layout.sizes[d0] = 0;
  if (rank <= 1 || (count > 0 && self_numel > 0)) {
    detail::check_scalar_fits(node, 4, "alpha", a.dtype);
  }
  const bool alpha_one = !a.alpha.is_bool() && a.alpha.as_double() == 1.0;
  const bool as_scatter_add =
      rank > 1 && (d0 == 0 || d0 == rank - 1) && alpha_one && index.type.dtype == DType::Int64;
  const bool half = a.dtype == DType::Float16 || a.dtype == DType::BFloat16;
  a.product_in_dtype = half;
  a.fused_multiply_add = rank > 1 && (a.dtype == DType::Float32 || a.dtype == DType::Float64);
  if (as_scatter_add) {
    a.float_sum = half;
    a.layout.term().rule = runtime_error_rule(node, dim, self[d0]);
  } else {
    IndexRule& r = a.layout.term().rule;
    r.size = self[d0];
    r.index_error = true;
    r.message = node.op + ": index out of range in self (index {} for dimension " +
                std::to_string(dim) + " with size " + std::to_string(r.size) + ")";
  }
}

// scatter_reduce's reduce (torch 2.13.0 also takes "max" and "min" for amax and amin) and
// include_self.
void scatter_reduce_mode(const Node& node, ScatterArgs& a) {
  const std::string reduce = string_arg(node, 4).value_or("");
  if (reduce == "sum") {
    a.combine = ScatterCombine::Add;
  } else if (reduce == "prod") {
    a.combine = ScatterCombine::Multiply;
  } else if (reduce == "mean") {
    a.combine = ScatterCombine::Mean;
  } else if (reduce == "amax" || reduce == "max") {
    a.combine = ScatterCombine::Max;
  } else if (reduce == "amin" || reduce == "min") {
    a.combine = ScatterCombine::Min;
  } else {
    fail(node, "reduce argument must be either sum, prod, mean, amax or amin, got " + reduce);
  }
  if (a.combine == ScatterCombine::Mean && a.dtype == DType::Bool) {
    fail(node, "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'");
  }
  a.include_self = bool_arg(node, 5);
}

// scatter(self, dim, index, src or value), scatter_add(self, dim, index, src) and
// scatter_reduce(self, dim, index, src, reduce, include_self): gather's
// layout (the space is the index's sizes); src is read at the same position, so it may be
// larger than the index in any dim.
void scatter_gather_args(const Graph& graph, const Node& node, ScatterArgs& a) {
  const std::vector<int64_t>& self = tensor_arg(graph, node, 0).type.sizes;
  const int64_t dim = wrap_dim(int_arg(node, 1), self.size(), node.op, "dim", /*scalar_ok=*/true);
  const Value& index = checked_index(graph, node, 2);
  const std::vector<int64_t>& isz = index.type.sizes;
  const bool has_src = is_tensor_arg(node, 3);
  if (isz.size() != self.size()) {
    fail(node, isz.empty() || self.empty()
                   ? "a 0-dim index or self is supported only when both are 0-dim"
                   : "Index tensor must have the same number of dimensions as self tensor");
  }
  std::vector<int64_t> src_sizes = isz;
  if (has_src) {
    require_same_dtype(graph, node, 3, "scatter(): Expected self.dtype to be equal to src.dtype");
    src_sizes = tensor_arg(graph, node, 3).type.sizes;
    if (src_sizes.size() != isz.size()) {
      fail(node, "Index tensor must have the same number of dimensions as src tensor");
    }
  } else {
    detail::check_scalar_fits(node, 3, "value", a.dtype);
    a.value = scalar_arg(node, 3);
  }
  for (size_t d = 0; d < isz.size(); ++d) {
    if (isz[d] > src_sizes[d] || (static_cast<int64_t>(d) != dim && isz[d] > self[d])) {
      fail(node, "Expected index " + format_sizes(isz) + " to be no larger than self " +
                     format_sizes(self) + " apart from dimension " + std::to_string(dim) +
                     " and to be no larger size than src " + format_sizes(src_sizes));
    }
  }
  a.layout = indirect_layout(graph, node, "gather");
  if (has_src) {
    a.values = std::get<ValueRef>(node.args[3]);
    for (size_t d = 0; d < isz.size(); ++d) a.values_dims.push_back(static_cast<int64_t>(d));
  }
  const bool half = a.dtype == DType::Float16 || a.dtype == DType::BFloat16;
  if (node.op == "scatter_reduce") {
    scatter_reduce_mode(node, a);
    a.float_sum = half;
  } else {
    const bool add = node.op == "scatter_add";
    a.combine = add ? ScatterCombine::Add : ScatterCombine::Assign;
    a.float_sum = add && half;
  }
  a.layout.term().rule = runtime_error_rule(node, self.empty() ? 0 : dim, a.layout.term().size);
}

}  // namespace

ScatterArgs scatter_args(const Graph& graph, const Node& node) {
  ScatterArgs a;
  a.dtype = tensor_arg(graph, node, 0).type.dtype;
  if (node.op == "index_put") {
    index_put_args(graph, node, a);
  } else if (node.op == "index_add") {
    index_add_args(graph, node, a);
  } else if (node.op == "scatter" || node.op == "scatter_add" || node.op == "scatter_reduce") {
    scatter_gather_args(graph, node, a);
  } else {
    throw GraphError(node.op + " is not a scatter");
  }
  return a;
}

}  // namespace stax::ir
