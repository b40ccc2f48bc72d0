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

// PyTorch's CPU kernels of these ops read a second operand that is a scalar (a literal, or a
// one-element tensor of another dtype) in the opmath type when the common dtype is
// float16/bfloat16: bf16 x * 0.3 multiplies by float(0.3), while bf16 x + 0.3 adds bf16(0.3).
// Verified with torch 2.13.0 (mul, div with every rounding mode, floor_divide).
bool reads_scalar_other_in_opmath(std::string_view op);

}  // namespace stax::ir
