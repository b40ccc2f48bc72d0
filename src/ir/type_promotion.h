// PyTorch's type-promotion rules for the graph IR: promotion of two dtypes, the result dtype
// of an op over tensor operands and scalar literals, and the bool < integral < floating
// categories. Shared by type inference, the eager interpreter and lowering.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"

namespace stax::ir {

enum class TypeCategory : uint8_t { Bool, Integral, Floating };

TypeCategory type_category(DType dtype);
TypeCategory scalar_category(Scalar::Kind kind);

// torch.promote_types: the smallest dtype both a and b convert to without losing category
// (e.g. u8 + i8 -> i16, f16 + bf16 -> f32, i64 + f16 -> f16).
DType promote_types(DType a, DType b);

// torch.result_type over tensor operands (any rank, each with its dtype) and scalar
// literals: scalars only matter when their category is higher than that of all tensors, and
// then give the default dtype of their category (float -> f32, int -> i64). With no tensor
// operands the scalars alone decide (bool -> bool, int -> i64, float -> f32).
DType result_type(const std::vector<DType>& tensor_dtypes,
                  const std::vector<Scalar::Kind>& scalar_kinds);

}  // namespace stax::ir
