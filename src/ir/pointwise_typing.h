// How a pointwise op computes: the dtype its operands are converted to (PyTorch's common dtype
// of the op, from the one type-promotion rule of type_promotion.h) and the dtype of its result.
// Type inference, the eager interpreter and lowering all read it from here, so that the dtype a
// value is computed in never differs between them.
#pragma once

#include <string_view>

#include "ir/graph.h"

namespace stax::ir {

struct PointwiseTyping {
  // The operands are converted to this dtype first. A float16/bfloat16 compute dtype means:
  // operands rounded to it, the arithmetic done in float32 (PyTorch's opmath type), the result
  // rounded back once.
  DType compute = DType::Float32;
  DType result = DType::Float32;  // compute, or bool (comparisons, isnan, ...), or a cast's dtype
};

// The typing of a pointwise node (one whose schema is OpCategory::Pointwise). Throws GraphError
// naming the op and argument when PyTorch refuses the dtypes.
PointwiseTyping pointwise_typing(const Graph& graph, const Node& node);

// Whether the node's second operand is read in the opmath type instead of being rounded to the
// computation dtype: PyTorch's CPU kernels of mul, div (every rounding mode) and floor_divide
// do so when the common dtype is float16/bfloat16 and the operand is a scalar (a literal, or a
// one-element tensor of another dtype): bf16 x * 0.3 multiplies by float(0.3), while
// bf16 x + 0.3 adds bf16(0.3). Those kernels then compute in float throughout, where their
// tensor-by-tensor forms round some steps to the 16-bit dtype. Verified with torch 2.13.0.
bool other_read_in_opmath(const Graph& graph, const Node& node);

}  // namespace stax::ir
