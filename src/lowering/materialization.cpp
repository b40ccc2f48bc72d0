// Per-device cost model for the materialization rule: counts what an unrealized value would
// cost to recompute in each of its users and compares it with writing it once to memory.
#include "lowering/materialization.h"

#include <vector>

namespace stax::lowering {

namespace {

// A handler that only counts: loads and ops by cost class.
class CountingHandler final : public OpsHandler {
 public:
  BodyStats stats;

  OpsValue load(const std::string&, const index::Expr&, DType dtype) override {
    ++stats.loads;
    return {0, dtype};
  }
  OpsValue constant(double, DType dtype) override { return {0, dtype}; }
  OpsValue compute(PointwiseOp op, std::span<const OpsValue>, double, DType result) override {
    switch (op_info(op).cost) {
      case CostClass::Cheap:
        ++stats.cheap_ops;
        break;
      case CostClass::Moderate:
        ++stats.moderate_ops;
        break;
      case CostClass::Transcendental:
        ++stats.transcendental_ops;
        break;
    }
    return {0, result};
  }
  OpsValue to_dtype(OpsValue, DType dtype) override { return {0, dtype}; }
  OpsValue reduction(ReductionType, OpsValue value) override { return value; }
  void store(const std::string&, const index::Expr&, OpsValue) override {}
  void store_reduction(const std::string&, const index::Expr&, OpsValue) override {}
};

// Above this many operations per element an inlined body is recomputed at a cost comparable
// to a memory round trip even without transcendental ops, and repeated inlining into several
// users grows kernels quickly.
constexpr int kMaxInlinedOpsWithSeveralUsers = 48;
// GPU: reading many inputs in every user multiplies global-memory traffic.
constexpr int kMaxInlinedLoadsOnGpu = 8;

}  // namespace

BodyStats measure_body(const Loader& loader, size_t rank) {
  CountingHandler handler;
  std::vector<index::Expr> idx;
  for (size_t i = 0; i < rank; ++i) idx.push_back(index::Expr::var("i" + std::to_string(i)));
  loader(handler, idx);
  return handler.stats;
}

MaterializationDecision decide_materialization(Device device, const BodyStats& stats,
                                               int num_users) {
  if (num_users <= 1) return {false, "one user: composed into it"};
  const int total_ops = stats.cheap_ops + stats.moderate_ops + stats.transcendental_ops;
  if (device == Device::Cpu) {
    if (stats.transcendental_ops > 0) {
      return {true, std::to_string(num_users) +
                        " users and a transcendental op: recomputing it costs more than a "
                        "buffer on the CPU"};
    }
    if (total_ops + stats.loads > kMaxInlinedOpsWithSeveralUsers) {
      return {true, std::to_string(num_users) + " users and " +
                        std::to_string(total_ops + stats.loads) + " ops per element"};
    }
    return {false, std::to_string(num_users) + " users, cheap to recompute: inlined"};
  }
  if (stats.loads > kMaxInlinedLoadsOnGpu) {
    return {true, std::to_string(num_users) + " users and " + std::to_string(stats.loads) +
                      " loads per element"};
  }
  return {false, std::to_string(num_users) + " users, cheap on the GPU: inlined"};
}

}  // namespace stax::lowering
