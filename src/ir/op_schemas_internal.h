// Internal to the op registry: the per-family schema tables (pointwise, reductions, views and
// copies) and the argument-aware shape helpers their type inference shares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/op_schema.h"

namespace stax::ir::detail {

void add_pointwise_schemas(std::vector<OpSchema>& out);
void add_reduction_schemas(std::vector<OpSchema>& out);
void add_view_schemas(std::vector<OpSchema>& out);  // views and copies
// Issue 7, point 3: full, zeros, ones, *_like, fill, scalar_tensor, arange, iota.
void add_factory_schemas(std::vector<OpSchema>& out);
// Issue 14, point 3: mm, bmm, addmm, baddbmm.
void add_contraction_schemas(std::vector<OpSchema>& out);
// Issue 15: convolution (ATen's, 1 to 3 spatial dims, transposed or not).
void add_convolution_schemas(std::vector<OpSchema>& out);
// max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d (2-D, forward).
void add_pooling_schemas(std::vector<OpSchema>& out);
// index_put, index_add, scatter (src or value), scatter_add (ir/scatter_args.h).
void add_scatter_schemas(std::vector<OpSchema>& out);
// issue 15, point 1: attention
void add_attention_schemas(std::vector<OpSchema>& out);
// issue 16, point 7: cumsum, cumprod, logcumsumexp, cummax, cummin (ir/scan_args.h)
void add_scan_schemas(std::vector<OpSchema>& out);
// issue 16, point 6: copy_, a graph input written in place
void add_mutation_schemas(std::vector<OpSchema>& out);

// Schema parameter shorthands.
Param required(std::string name, ParamKind kind);
Param optional(std::string name, ParamKind kind, Arg default_value, bool keyword_only = false);

// "OP: argument 'ARG': "
std::string arg_prefix(const std::string& op, const std::string& arg);

// PyTorch's checked conversion of a Scalar argument (clamp's bounds, where's operands, add and
// sub's alpha) to the computation dtype: GraphError "value 300 cannot be converted to i8
// without overflow ([-128, 127])" as eager raises (ir::scalar_overflow_problem). Tensor and
// None arguments pass.
void check_scalar_fits(const Node& n, size_t position, const std::string& arg, DType dtype);

// Normalizes a dim against rank; with scalar_ok a 0-dim tensor accepts 0 and -1 (returning 0),
// as PyTorch does for reductions, squeeze and transpose.
int64_t wrap_dim(int64_t dim, size_t rank, const std::string& op, const std::string& arg,
                 bool scalar_ok = false);
// Normalizes every dim of a list (see wrap_dim) and rejects repeats. For a 0-dim tensor with
// scalar_ok the result is empty.
std::vector<int64_t> wrap_dim_list(const std::vector<int64_t>& dims, size_t rank,
                                   const std::string& op, const std::string& arg,
                                   bool scalar_ok = false);
std::vector<int64_t> reshape_sizes(const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                                   const std::string& op, const std::string& arg);

}  // namespace stax::ir::detail
