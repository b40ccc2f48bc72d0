// PyTorch's type-promotion rules for the graph IR, the one rule of the whole project: promotion
// of two dtypes, the result dtype of an op over dimensioned tensors, 0-dim tensors and scalar
// literals, and the bool < integral < floating categories. Type inference, the eager
// interpreter and lowering all call these, so they cannot disagree.
#pragma once

#include <cstdint>
#include <initializer_list>
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

// One operand of an op, as torch.result_type ranks it: tensors with at least one dim decide;
// 0-dim tensors and then scalar literals only matter when their category is higher.
struct PromotionOperand {
  enum class Tier : uint8_t { Dimensioned, ZeroDim, Scalar };
  Tier tier = Tier::Dimensioned;
  DType dtype = DType::Float32;  // a scalar's default dtype: bool, i64 or f32
};
PromotionOperand dimensioned_operand(DType dtype);
PromotionOperand zero_dim_operand(DType dtype);
PromotionOperand scalar_operand(Scalar::Kind kind);

// torch.result_type: the dimensioned tensors promote among themselves; a 0-dim tensor only
// raises the category (then the 0-dim tensors' promoted dtype counts: i32[2] with f64[] is
// f64, f16[2] with f64[] stays f16); a scalar only raises the category, to its default dtype
// (i32[2] with 2.5 is f32, bool[2] with 1 is i64). With no tensor the scalars decide.
DType result_type(const std::vector<PromotionOperand>& operands);

// Dimensioned-tensor dtypes and scalar kinds (no 0-dim tensors).
DType result_type(const std::vector<DType>& tensor_dtypes,
                  const std::vector<Scalar::Kind>& scalar_kinds);

// The promotion operand of argument `position` of `node`: a tensor (ranked by its rank) or a
// scalar literal.
PromotionOperand promotion_operand(const Graph& graph, const Node& node, size_t position);
// torch.result_type of the node's arguments at `positions` (tensors or scalar literals).
DType result_type(const Graph& graph, const Node& node, std::initializer_list<size_t> positions);

}  // namespace stax::ir
