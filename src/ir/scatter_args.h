// The scatters (issue 15, point 4): index_put, index_add, scatter, scatter_add and
// scatter_reduce, read as one
// description. Each is the transpose of a gather (index_put of index.Tensor, index_add of
// index_select, scatter and scatter_add of gather): the gather twin's layout over the same
// self and index names an iteration space (the twin's result sizes) and, for each of its
// positions r, one element of self (r's coordinates, with each dim the twin indexes replaced by
// its index's value at r). A scatter starts from a copy of self and visits the positions in
// row-major order, combining the values operand at r into that element: the last write wins
// (index_put, scatter), or it adds (index_put with accumulate, index_add, scatter_add), which
// is eager's order for every element (torch 2.13.0 probed: index_put rounds each 16-bit
// addition; scatter_add sums 16-bit values in float, self included, and rounds once, and so
// does index_add where eager hands it to scatter_add: alpha 1, an int64 index, dim 0 or the
// last of a tensor of rank 2 or more; elsewhere index_add rounds each addition, in the
// arithmetic fused_multiply_add and product_in_dtype describe). Eager's
// float32 index_put with accumulate adds atomically from several threads on large inputs;
// Stax's order is its single-threaded one.
// Type inference, the eager interpreter and lowering read the arguments only through here, so
// the three agree on what an argument means. Arguments PyTorch refuses throw GraphError with
// PyTorch's message, prefixed by the op; index values are checked where the scatter runs, by
// each index term's rule (`layout.terms`).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/movement_args.h"

namespace stax::ir {

// How a value meets the element it names: written (the last write wins), or reduced into it
// (scatter_reduce's prod, mean, amax and amin besides the sums; Mean divides each element's
// sum by its count at the end, amax and amin let a NaN win).
enum class ScatterCombine : uint8_t { Assign, Add, Multiply, Mean, Max, Min };

struct ScatterArgs {
  // The gather twin's layout and this op's index rule. layout.source is self (the scatter's
  // destination, whose sizes and dtype the result has); layout.sizes is the iteration space.
  IndirectArgs layout;
  // Read at every position of the space (values_dims maps space dims to its dims), or absent
  // for scatter's scalar `value` (converted to the dtype as a fill is).
  std::optional<ValueRef> values;
  Scalar value;
  std::vector<int64_t> values_dims;  // per space dim: the values dim read there, -1: broadcast
  ScatterCombine combine = ScatterCombine::Assign;
  // scatter_add and scatter_reduce of float16/bfloat16 (and index_add where eager hands it
  // to scatter_add): each element's sum, product, mean or extremum (self's value first) is
  // kept in float and rounded once; otherwise every step rounds to the dtype.
  bool float_sum = false;
  // scatter_reduce with include_self=False: an element's first value replaces self's (and
  // self does not count towards a mean); elements no value reaches keep self's.
  bool include_self = true;
  // index_add: each value is multiplied by alpha (converted to the dtype) before it is added,
  // in the arithmetic of eager's path: one fused multiply-add (float32 and float64 over a
  // self of rank 2 or more: eager's vectorized add with alpha), or, with product_in_dtype
  // (float16/bfloat16), alpha and the product rounded to the dtype before the sum; otherwise
  // the product rounds to the opmath type, then the sum.
  Scalar alpha = int64_t{1};
  bool fused_multiply_add = false;
  bool product_in_dtype = false;
  DType dtype = DType::Float32;

  std::vector<int64_t> space() const { return layout.sizes; }
};

ScatterArgs scatter_args(const Graph& graph, const Node& node);

}  // namespace stax::ir
