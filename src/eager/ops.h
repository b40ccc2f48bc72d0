// Internal interface of the eager interpreter: the environment an op implementation reads its
// arguments from, element helpers shared by the op families, and one entry point per op family
// (pointwise.cpp, reductions.cpp, views.cpp). interpreter.cpp maps op names onto these.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace stax::eager::detail {

// The tensors computed so far, indexed by ir::ValueRef::index.
struct Env {
  const ir::Graph& graph;
  const std::vector<Tensor>& values;

  // The tensor bound to argument `position` of `node` (which must be a tensor argument).
  const Tensor& tensor(const ir::Node& node, size_t position) const;
  // The inferred type (dtype, sizes) of the node's result.
  const ir::TensorType& result_type(const ir::Node& node) const;
};

// ---- element helpers (elements.cpp) ----

// True when results of this dtype are computed with exact 64-bit integer arithmetic.
bool is_integer_like(DType dtype);
// Exact integer read of an integral/bool element; floating elements are truncated toward zero
// (NaN -> 0, saturating).
int64_t load_int(const Tensor& t, const std::vector<int64_t>& index);
// Stores an integer, wrapping to the dtype's width (bool: nonzero -> 1); floats are rounded.
void store_int(const Tensor& t, const std::vector<int64_t>& index, int64_t value);
// The value `value` takes once stored in `dtype` (floats rounded to nearest even, integers
// truncated and wrapped, bool 0/1).
double round_to(DType dtype, double value);
// Rounds to the type PyTorch computes `dtype` math in: float for f32/f16/bf16, double for f64.
double round_to_opmath(DType dtype, double value);
// A scalar literal converted to `to` by ir::convert_scalar, the one rule every stage uses
// (ints exact and wrapped, never through double): as an integer for integer dtypes and bool,
// as a double holding the dtype's value for floating ones (f16/bf16 rounded from float32, as
// c10 converts).
int64_t scalar_to_int(const ir::Scalar& scalar, DType to);
double scalar_to_float(const ir::Scalar& scalar, DType to);
// PyTorch's conversions on x86 (see casts.cpp): an integer wrapped to an integer dtype (bool:
// != 0); a float truncated to an integer dtype (NaN and out-of-range values give INT64_MIN for
// i64 and INT32_MIN, wrapped, for narrower dtypes, as cvttss2si does; bool: != 0); a value
// rounded to a floating dtype (through float for f16/bf16, as c10::Half and c10::BFloat16 do).
int64_t wrap_int(int64_t value, DType to);
int64_t float_to_int(double value, DType to);
double int_to_float(int64_t value, DType to);
double float_to_float(double value, DType to);
// A view of `t` broadcast (expanded with stride 0) to `sizes`.
Tensor broadcast_to(const Tensor& t, const std::vector<int64_t>& sizes);
// A new contiguous tensor of `in` converted to `to` as _to_copy converts.
Tensor converted(const Tensor& in, DType to);

// ---- op families ----

enum class ReduceOp {
  Sum,
  Mean,
  Amax,
  Amin,
  // issue 6 reductions
  Prod,
  ArgMax,
  ArgMin,
  Any,
  All,
  Var,
  Std,
  LogSumExp,
};

// The pointwise ops (pointwise_binary.cpp, pointwise_unary.cpp): the evaluation function of a
// pointwise op by ATen name, or nullptr.
using EvalFn = Tensor (*)(const Env& env, const ir::Node& node);
EvalFn find_pointwise_eval(std::string_view op);

Tensor eval_reduce(const Env& env, const ir::Node& node, ReduceOp op);
// var_mean: {var, mean} from one Welford pass.
std::vector<Tensor> eval_var_mean(const Env& env, const ir::Node& node);

// Every view op: reshape/view, permute, transpose, unsqueeze, squeeze, expand, slice,
// select, narrow, split, split_with_sizes, as_strided (reshape copies where it must).
Tensor eval_view_op(const Env& env, const ir::Node& node);
Tensor eval_clone(const Env& env, const ir::Node& node);
Tensor eval_contiguous(const Env& env, const ir::Node& node);
// Issue 6, point 6 (views.cpp: views through ir::view_layout; movement.cpp: copies).
Tensor eval_cat(const Env& env, const ir::Node& node);  // cat and stack
Tensor eval_constant_pad_nd(const Env& env, const ir::Node& node);
Tensor eval_scatter_window(const Env& env, const ir::Node& node);  // slice/select_scatter
Tensor eval_flip(const Env& env, const ir::Node& node);
Tensor eval_roll(const Env& env, const ir::Node& node);
Tensor eval_indirect(const Env& env, const ir::Node& node);  // gather, index_select,
                                                             // embedding, index
// Issue 7, point 3 (factory.cpp): full, zeros, ones, *_like, fill, scalar_tensor, arange, iota.
Tensor eval_factory(const Env& env, const ir::Node& node);
// Issue 14, point 3 (contraction.cpp): mm, bmm, addmm, baddbmm.
Tensor eval_contraction(const Env& env, const ir::Node& node);
// Issue 15 (convolution.cpp): convolution, forward and transposed.
Tensor eval_convolution(const Env& env, const ir::Node& node);
// convolution_backward's results (grad_input, grad_weight, grad_bias), one node each.
Tensor eval_convolution_backward(const Env& env, const ir::Node& node);
// Pooling (pooling.cpp): avg_pool2d and _adaptive_avg_pool2d; max_pool2d_with_indices gives
// {values, indices}.
Tensor eval_pooling(const Env& env, const ir::Node& node);
std::vector<Tensor> eval_max_pool2d_with_indices(const Env& env, const ir::Node& node);
// Their backward ops: max_pool2d_with_indices_backward, avg_pool2d_backward and
// _adaptive_avg_pool2d_backward.
Tensor eval_pooling_backward(const Env& env, const ir::Node& node);
// Issue 15, point 4 (scatter.cpp): index_put, index_add, scatter, scatter_add.
Tensor eval_scatter(const Env& env, const ir::Node& node);
// Issue 15, point 1 (attention.cpp): the attention ops and their backward.
Tensor eval_attention(const Env& env, const ir::Node& node);
// Issue 16, point 7 (scan.cpp): cumsum, cumprod, logcumsumexp ({values}), cummax and cummin
// ({values, indices}).
std::vector<Tensor> eval_scan(const Env& env, const ir::Node& node);
// copy_ (mutation.cpp): the new value of the input; write_mutated_inputs stores it there.
Tensor eval_copy_in_place(const Env& env, const ir::Node& node);
void write_mutated_inputs(const ir::Graph& graph, const std::vector<Tensor>& values,
                          const std::vector<Tensor>& outputs);

}  // namespace stax::eager::detail
