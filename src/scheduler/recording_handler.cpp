// Recording handler: collects loads, stores and ops of a loop body.
#include "scheduler/recording_handler.h"

#include <stdexcept>

namespace stax::scheduler {

using lowering::OpsValue;

OpsValue RecordingHandler::load(const std::string& buffer, const index::Expr& index, DType dtype) {
  loads.push_back({buffer, index, dtype, mask_depth_ > 0});
  return {0, dtype};
}

OpsValue RecordingHandler::constant(const ir::Scalar&, DType dtype) {
  return {0, dtype};
}

OpsValue RecordingHandler::compute(lowering::PointwiseOp op, std::span<const OpsValue>,
                                   DType result) {
  ops.push_back(op);
  return {0, result};
}

OpsValue RecordingHandler::to_dtype(OpsValue, DType dtype) {
  return {0, dtype};
}

OpsValue RecordingHandler::index_value(const index::Expr& index, DType dtype) {
  index_values.push_back(index);
  return {0, dtype};
}

index::Expr RecordingHandler::indirect_index(OpsValue, const ir::IndexRule& rule) {
  std::string var = "ind" + std::to_string(indirect.size());
  indirect.push_back({var, rule.size, rule.message});
  return index::Expr::var(var);
}

void RecordingHandler::push_mask(OpsValue) {
  ++mask_depth_;
}

void RecordingHandler::pop_mask() {
  if (mask_depth_ == 0) throw std::logic_error("pop_mask without push_mask");
  --mask_depth_;
}

OpsValue RecordingHandler::reduction(lowering::ReductionType, OpsValue value) {
  has_reduction = true;
  return value;
}

void RecordingHandler::store(const std::string& buffer, const index::Expr& index, OpsValue value) {
  stores.push_back({buffer, index, value.dtype});
}

void RecordingHandler::store_reduction(const std::string& buffer, const index::Expr& index,
                                       OpsValue value) {
  stores.push_back({buffer, index, value.dtype});
}

}  // namespace stax::scheduler
