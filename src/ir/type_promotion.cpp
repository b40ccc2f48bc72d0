// PyTorch result-type computation (see type_promotion.h).
#include "ir/type_promotion.h"

#include <optional>

#include "ir/op_schema.h"

namespace stax::ir {

TypeCategory type_category(DType dtype) {
  if (dtype == DType::Bool) return TypeCategory::Bool;
  return is_floating(dtype) ? TypeCategory::Floating : TypeCategory::Integral;
}

TypeCategory scalar_category(Scalar::Kind kind) {
  switch (kind) {
    case Scalar::Kind::Bool:
      return TypeCategory::Bool;
    case Scalar::Kind::Int:
      return TypeCategory::Integral;
    case Scalar::Kind::Float:
      return TypeCategory::Floating;
  }
  return TypeCategory::Floating;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool fa = is_floating(a);
  const bool fb = is_floating(b);
  if (fa != fb) return fa ? a : b;
  if (fa) {
    // Both floating: f16 and bf16 only meet in f32; otherwise the wider one.
    if ((a == DType::Float16 && b == DType::BFloat16) ||
        (a == DType::BFloat16 && b == DType::Float16)) {
      return DType::Float32;
    }
    return dtype_size(a) >= dtype_size(b) ? a : b;
  }
  // Both integral. u8 is the only unsigned type: with a signed type it needs one of at
  // least 16 bits.
  if (a == DType::UInt8 || b == DType::UInt8) {
    DType other = a == DType::UInt8 ? b : a;
    return other == DType::Int8 ? DType::Int16 : other;
  }
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

PromotionOperand dimensioned_operand(DType dtype) {
  return {PromotionOperand::Tier::Dimensioned, dtype};
}

PromotionOperand zero_dim_operand(DType dtype) {
  return {PromotionOperand::Tier::ZeroDim, dtype};
}

PromotionOperand scalar_operand(Scalar::Kind kind) {
  switch (kind) {
    case Scalar::Kind::Bool:
      return {PromotionOperand::Tier::Scalar, DType::Bool};
    case Scalar::Kind::Int:
      return {PromotionOperand::Tier::Scalar, DType::Int64};
    case Scalar::Kind::Float:
      return {PromotionOperand::Tier::Scalar, DType::Float32};
  }
  return {PromotionOperand::Tier::Scalar, DType::Float32};
}

namespace {

// Combines the result of a higher tier with that of a lower one: the lower tier counts only
// when it is of a higher category (a bool higher tier promotes with anything; an integral
// one only with floating).
std::optional<DType> combine_tiers(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (type_category(*lower) > type_category(*higher)) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

DType result_type(const std::vector<PromotionOperand>& operands) {
  std::optional<DType> tiers[3];
  for (const PromotionOperand& o : operands) {
    std::optional<DType>& t = tiers[static_cast<size_t>(o.tier)];
    t = t ? promote_types(*t, o.dtype) : o.dtype;
  }
  std::optional<DType> r = combine_tiers(tiers[0], combine_tiers(tiers[1], tiers[2]));
  return r.value_or(DType::Float32);
}

DType result_type(const std::vector<DType>& tensor_dtypes,
                  const std::vector<Scalar::Kind>& scalar_kinds) {
  std::vector<PromotionOperand> operands;
  for (DType d : tensor_dtypes) operands.push_back(dimensioned_operand(d));
  for (Scalar::Kind k : scalar_kinds) operands.push_back(scalar_operand(k));
  return result_type(operands);
}

PromotionOperand promotion_operand(const Graph& graph, const Node& node, size_t position) {
  if (is_tensor_arg(node, position)) {
    const TensorType& t = tensor_arg(graph, node, position).type;
    return t.sizes.empty() ? zero_dim_operand(t.dtype) : dimensioned_operand(t.dtype);
  }
  return scalar_operand(scalar_arg(node, position).kind());
}

DType result_type(const Graph& graph, const Node& node, std::initializer_list<size_t> positions) {
  std::vector<PromotionOperand> operands;
  for (size_t p : positions) operands.push_back(promotion_operand(graph, node, p));
  return result_type(operands);
}

}  // namespace stax::ir
