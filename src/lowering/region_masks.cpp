// Masks over index values (region_masks.h).
#include "lowering/region_masks.h"

namespace stax::lowering {

OpsValue index_at_least(OpsHandler& h, const index::Expr& idx, int64_t bound) {
  return apply(h, PointwiseOp::Ge,
               {h.index_value(idx, DType::Int64), h.constant(bound, DType::Int64)});
}

OpsValue index_below(OpsHandler& h, const index::Expr& idx, int64_t bound) {
  return apply(h, PointwiseOp::Lt,
               {h.index_value(idx, DType::Int64), h.constant(bound, DType::Int64)});
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
