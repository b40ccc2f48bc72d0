// The handler that records what a loop body reads and writes (Section 7.1): every load and
// store with its index expression, in order, the pointwise ops applied, and the index
// variables of indirect loads (named ind0, ind1, ... in the order they were made).
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
    bool masked = false;  // made between push_mask and pop_mask
  };
  struct IndirectIndex {
    std::string var;
    int64_t size;  // the variable ranges over [0, size)
    std::string what;
  };
  std::vector<Record> loads;
  std::vector<IndirectIndex> indirect;
  std::vector<Record> stores;
  std::vector<index::Expr> index_values;  // the expressions index_value computed
  std::vector<lowering::PointwiseOp> ops;
  bool has_reduction = false;

 private:
  int mask_depth_ = 0;

 public:
  lowering::OpsValue load(const std::string& buffer, const index::Expr& index,
                          DType dtype) override;
  lowering::OpsValue constant(const ir::Scalar& value, DType dtype) override;
  lowering::OpsValue compute(lowering::PointwiseOp op, std::span<const lowering::OpsValue> args,
                             DType result) override;
  lowering::OpsValue to_dtype(lowering::OpsValue value, DType dtype) override;
  lowering::OpsValue index_value(const index::Expr& index, DType dtype) override;
  index::Expr indirect_index(lowering::OpsValue value, const ir::IndexRule& rule) override;
  void push_mask(lowering::OpsValue mask) override;
  void pop_mask() override;
  lowering::OpsValue reduction(lowering::ReductionType type, lowering::OpsValue value) override;
  void store(const std::string& buffer, const index::Expr& index,
             lowering::OpsValue value) override;
  void store_reduction(const std::string& buffer, const index::Expr& index,
                       lowering::OpsValue value) override;
};

}  // namespace stax::scheduler
