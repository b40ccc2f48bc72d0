// How lowering computes each pointwise ATen op from the primitive vocabulary of ops_handler.h:
// for every op, which of its arguments are operands and how each is read, and a function that
// combines the operand values with primitives. Values are in the op's opmath dtype (float32
// for a float16/bfloat16 computation, otherwise the computation dtype of ir::pointwise_typing);
// the caller converts operands in and rounds the result back. The formulas follow the eager
// interpreter (src/eager/pointwise_*.cpp), the oracle, operation for operation, so the fused
// result equals eager's wherever the primitives are exact.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "ir/pointwise_typing.h"
#include "lowering/ops_handler.h"

namespace stax::lowering {

// float32 for float16/bfloat16, else the dtype itself.
DType opmath_dtype(DType compute);

// PyTorch's conversion of a value of x.dtype to `to` (see OpsHandler::to_dtype), with the
// two steps x86 PyTorch takes: float64 and integers reach float16/bfloat16 through float32,
// floats reach int8/int16 through int32 and uint8 through int64 (torch 2.13.0: f64
// 4294967301.0 is i8 0 but u8 5).
OpsValue convert(OpsHandler& h, OpsValue x, DType to);

// A scalar literal as a value of `compute`'s opmath dtype: converted to `compute` first (so a
// bf16 computation sees bf16(1.7), an u8 one 300 -> 44) unless `opmath_value` keeps the exact
// opmath value (PyTorch's Scalar parameters of activations, and mul/div's scalar operand).
OpsValue scalar_value(OpsHandler& h, const ir::Scalar& s, DType compute, bool opmath_value);

enum class OperandRead : uint8_t {
  Compute,        // converted to the computation dtype, then to its opmath dtype
  ComputeOpmath,  // a scalar or one-element operand read in the opmath dtype directly
  Bool,           // where's condition
  Source,         // as stored (casts)
};

struct OperandSpec {
  size_t position;
  OperandRead read;
};

struct PointwiseRecipe {
  std::vector<OperandSpec> operands;
  // Combines the operand values (in the order of `operands`).
  std::function<OpsValue(OpsHandler&, std::span<const OpsValue>)> compose;
  // Whether the composed value still has to be rounded to a 16-bit result dtype.
  bool round_result = true;
};

// The recipe of a pointwise node; throws std::invalid_argument naming the op when there is none.
PointwiseRecipe pointwise_recipe(const ir::Graph& graph, const ir::Node& node,
                                 const ir::PointwiseTyping& typing);

}  // namespace stax::lowering
