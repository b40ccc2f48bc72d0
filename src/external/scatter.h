// Stax's runtime scatter (issue 15, point 4): the external node that index_put, index_add,
// scatter, scatter_add and scatter_reduce lower to (lowering/loop_ir.h: ScatterCall). The
// output starts as a copy of self (or zeros), then every position r of an iteration space, in
// row-major order, combines a value into the output element at
//   sum_s dest_strides[s] * r[s] + sum_k indices[k].dest_stride * index_k(r),
// writing (the last write wins), adding, multiplying, averaging or keeping the extremum
// (ir::ScatterCombine). Positions that differ in a "free" dim (one with a
// nonzero dest stride) write different elements, so threads split the free dims and each
// runs the other dims in order: every element sees its values in eager's order whatever the
// thread count, and sums are deterministic. The index values are checked first, position by
// position in row-major order and the indices in order at each, so an error names the first
// bad value as eager's does.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/dtype.h"
#include "ir/index_rule.h"
#include "ir/scatter_args.h"

namespace stax::external {

struct StridedOperand {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements
};

// One index tensor: read at position r at sum_s space_strides[s] * r[s] (0 where it does not
// vary), its value selecting along the output dim of stride dest_stride.
struct ScatterIndexSpec {
  DType dtype = DType::Int64;
  std::vector<int64_t> space_strides;  // per space dim
  int64_t dest_stride = 0;
  ir::IndexRule rule;
  // A value that names no element: positions where it is read combine nothing, and the rule
  // does not refuse it (max_pool2d_with_indices_backward's -1).
  std::optional<int64_t> skipped;
};

struct ScatterSpec {
  DType dtype = DType::Float32;
  std::vector<int64_t> out_sizes;      // the output is contiguous
  std::optional<StridedOperand> self;  // absent: zeros
  std::vector<ScatterIndexSpec> indices;
  std::vector<int64_t> space;
  std::optional<std::vector<int64_t>> values_strides;  // per space dim; absent: the scalar
  std::vector<int64_t> dest_strides;                   // per space dim, in the output
  ir::ScatterCombine combine = ir::ScatterCombine::Assign;
  bool include_self = true;  // else an element's first value replaces self's
  bool float_sum = false;    // 16-bit sums kept in float, rounded once per element
  // index_add's arithmetic for alpha (ir::ScatterArgs): one fused multiply-add, or alpha and
  // the product rounded to the 16-bit dtype before the sum; else product, then sum.
  bool fused_multiply_add = false;
  bool product_in_dtype = false;
  double value = 0.0;     // the scalar (floating dtypes), already in the dtype
  int64_t int_value = 0;  // the scalar (integer dtypes and bool)
  double alpha = 1.0;     // index_add's factor, in the opmath type
  int64_t int_alpha = 1;
};

// Why `spec` is not one the runtime runs (sizes and strides that disagree), or nullopt.
std::optional<std::string> scatter_spec_problem(const ScatterSpec& spec);

// Runs the scatter: `self`, `indices` (one per spec index) and `values` point at element 0 of
// their layouts (values may be null for the scalar, self for zeros). Throws ir::IndexError or
// std::out_of_range (the rule's class) for an index value out of range, before writing
// anything but the copy of self.
void run_scatter(const ScatterSpec& spec, const void* self, const std::vector<const void*>& indices,
                 const void* values, void* out, int num_threads);

}  // namespace stax::external
