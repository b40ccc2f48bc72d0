// Recording handler: collects loads, stores and ops of a loop body.
#include "scheduler/recording_handler.h"

namespace stax::scheduler {

using lowering::OpsValue;

OpsValue RecordingHandler::load(const std::string& buffer, const index::Expr& index, DType dtype) {
  loads.push_back({buffer, index, dtype});
  return {0, dtype};
}

OpsValue RecordingHandler::constant(double, DType dtype) {
  return {0, dtype};
}

OpsValue RecordingHandler::compute(lowering::PointwiseOp op, std::span<const OpsValue>, double,
                                   DType result) {
  ops.push_back(op);
  return {0, result};
}

OpsValue RecordingHandler::to_dtype(OpsValue, DType dtype) {
  return {0, dtype};
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
