// Internal interface of the eager interpreter: the environment an op implementation reads its
// arguments from, element helpers shared by the op families, and one entry point per op family
// (pointwise.cpp, reductions.cpp, views.cpp). interpreter.cpp maps op names onto these.
#pragma once

#include <cstdint>
#include <string>
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
// Integer value of a scalar literal (floats are truncated toward zero).
int64_t scalar_as_int(const ir::Scalar& scalar);
// A view of `t` broadcast (expanded with stride 0) to `sizes`.
Tensor broadcast_to(const Tensor& t, const std::vector<int64_t>& sizes);

// ---- op families ----

enum class UnaryOp { Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu };
enum class BinaryOp { Add, Sub, Mul, Div, Maximum, Minimum };
enum class CompareOp { Gt, Lt, Ge, Le, Eq, Ne };
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

Tensor eval_unary(const Env& env, const ir::Node& node, UnaryOp op);
Tensor eval_binary(const Env& env, const ir::Node& node, BinaryOp op);
Tensor eval_compare(const Env& env, const ir::Node& node, CompareOp op);
Tensor eval_pow(const Env& env, const ir::Node& node);
Tensor eval_where(const Env& env, const ir::Node& node);

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
Tensor eval_flip(const Env& env, const ir::Node& node);
Tensor eval_roll(const Env& env, const ir::Node& node);
Tensor eval_indirect(const Env& env, const ir::Node& node);  // gather, index_select,
                                                             // embedding, index

}  // namespace stax::eager::detail
