// Internal to the pointwise schemas: one definition per pointwise op (its ATen parameters and
// its typing), split by family over op_schemas_pointwise.cpp (arithmetic, comparisons, bitwise,
// logical, where, casts) and op_schemas_unary.cpp (unary math, rounding, activations, clamp,
// lerp). Shapes are always the broadcast of every tensor argument.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/op_schemas_internal.h"
#include "ir/pointwise_typing.h"

namespace stax::ir::detail {

struct PointwiseDef {
  std::string name;
  std::vector<Param> params;
  std::function<PointwiseTyping(const Graph&, const Node&)> typing;
};

void add_binary_pointwise_defs(std::vector<PointwiseDef>& out);
void add_unary_pointwise_defs(std::vector<PointwiseDef>& out);

// "OP: argument 'ARG': i64 tensors are not supported (PyTorch implements OP for WHAT only)"
[[noreturn]] void unsupported_dtype(const Node& node, const std::string& arg, DType dtype,
                                    const std::string& supported);
std::string dtype_text(DType dtype);

}  // namespace stax::ir::detail
