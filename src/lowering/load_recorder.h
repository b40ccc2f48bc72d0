// A handler that computes nothing and records every load a loader makes: the buffer and the
// index. Lowering asks it where a value reads (pooling's channels-last test, whether a value
// written into an input in place reads that input only where it writes).
#pragma once

#include <string>
#include <vector>

#include "lowering/ops_handler.h"

namespace stax::lowering {

class LoadRecorder final : public OpsHandler {
 public:
  struct Load {
    std::string buffer;
    index::Expr index;
  };
  std::vector<Load> loads;
  // Set when a load's index came from loaded data (gather, index): it is not an affine
  // function of the loop variables.
  bool indirect = false;

  OpsValue load(const std::string& buffer, const index::Expr& idx, DType dtype) override {
    loads.push_back({buffer, idx});
    return {0, dtype};
  }
  OpsValue constant(const ir::Scalar&, DType dtype) override { return {0, dtype}; }
  OpsValue compute(PointwiseOp, std::span<const OpsValue>, DType result) override {
    return {0, result};
  }
  OpsValue to_dtype(OpsValue, DType dtype) override { return {0, dtype}; }
  OpsValue index_value(const index::Expr&, DType dtype) override { return {0, dtype}; }
  index::Expr indirect_index(OpsValue, const ir::IndexRule&) override {
    indirect = true;
    return index::Expr::var("indirect" + std::to_string(indirect_count_++));
  }
  void push_mask(OpsValue) override {}
  void pop_mask() override {}
  OpsValue reduction(ReductionType, OpsValue value) override { return value; }
  void store(const std::string&, const index::Expr&, OpsValue) override {}
  void store_reduction(const std::string&, const index::Expr&, OpsValue) override {}

 private:
  int indirect_count_ = 0;
};

}  // namespace stax::lowering
