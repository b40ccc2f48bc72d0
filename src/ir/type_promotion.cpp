// PyTorch result-type computation (see type_promotion.h).
#include "ir/type_promotion.h"

#include <algorithm>

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

namespace {
DType default_dtype(TypeCategory category) {
  switch (category) {
    case TypeCategory::Bool:
      return DType::Bool;
    case TypeCategory::Integral:
      return DType::Int64;
    case TypeCategory::Floating:
      return DType::Float32;
  }
  return DType::Float32;
}
}  // namespace

DType result_type(const std::vector<DType>& tensor_dtypes,
                  const std::vector<Scalar::Kind>& scalar_kinds) {
  std::optional<DType> tensors;
  for (DType d : tensor_dtypes) tensors = tensors ? promote_types(*tensors, d) : d;
  std::optional<TypeCategory> scalars;
  for (Scalar::Kind k : scalar_kinds)
    scalars = std::max(scalars.value_or(TypeCategory::Bool), scalar_category(k));
  if (!tensors) return default_dtype(scalars.value_or(TypeCategory::Floating));
  if (scalars && *scalars > type_category(*tensors)) return default_dtype(*scalars);
  return *tensors;
}

}  // namespace stax::ir
