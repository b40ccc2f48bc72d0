// Masks over index values (region_masks.h).
#include "lowering/region_masks.h"

namespace stax::lowering {

namespace {

OpsValue bound_value(OpsHandler& h, const index::Expr& bound) {
  if (const auto c = bound.constant_value()) return h.constant(*c, DType::Int64);
  return h.index_value(bound, DType::Int64);
}

}  // namespace

OpsValue index_at_least(OpsHandler& h, const index::Expr& idx, const index::Expr& bound) {
  return apply(h, PointwiseOp::Ge, {h.index_value(idx, DType::Int64), bound_value(h, bound)});
}

OpsValue index_below(OpsHandler& h, const index::Expr& idx, const index::Expr& bound) {
  return apply(h, PointwiseOp::Lt, {h.index_value(idx, DType::Int64), bound_value(h, bound)});
}

OpsValue both(OpsHandler& h, std::optional<OpsValue> a, OpsValue b) {
  return a ? apply(h, PointwiseOp::LogicalAnd, {*a, b}) : b;
}

OpsValue select_where(OpsHandler& h, OpsValue mask, OpsValue x, OpsValue y) {
  const DType dtype = x.dtype;
  if (dtype != DType::Float16 && dtype != DType::BFloat16) {
    return apply(h, PointwiseOp::Where, {mask, x, y});
  }
  const OpsValue wide = apply(h, PointwiseOp::Where,
                              {mask, h.to_dtype(x, DType::Float32), h.to_dtype(y, DType::Float32)});
  return h.to_dtype(wide, dtype);
}

}  // namespace stax::lowering
