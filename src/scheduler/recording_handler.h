// The handler that records what a loop body reads and writes (Section 7.1): every load and
// store with its index expression, in order, and the pointwise ops applied.
#pragma once

#include <string>
#include <vector>

#include "lowering/ops_handler.h"

namespace stax::scheduler {

class RecordingHandler final : public lowering::OpsHandler {
 public:
  struct Record {
    std::string buffer;
    index::Expr index;
    DType dtype;
  };
  std::vector<Record> loads;
  std::vector<Record> stores;
  std::vector<lowering::PointwiseOp> ops;
  bool has_reduction = false;

  lowering::OpsValue load(const std::string& buffer, const index::Expr& index,
                          DType dtype) override;
  lowering::OpsValue constant(double value, DType dtype) override;
  lowering::OpsValue compute(lowering::PointwiseOp op, std::span<const lowering::OpsValue> args,
                             double attribute, DType result) override;
  lowering::OpsValue to_dtype(lowering::OpsValue value, DType dtype) override;
  lowering::OpsValue reduction(lowering::ReductionType type, lowering::OpsValue value) override;
  void store(const std::string& buffer, const index::Expr& index,
             lowering::OpsValue value) override;
  void store_reduction(const std::string& buffer, const index::Expr& index,
                       lowering::OpsValue value) override;
};

}  // namespace stax::scheduler
