// Per-device cost model for the materialization rule: counts what an unrealized value would
// cost to recompute in each of its reads and compares it with writing it once to memory; and
// the bounds on inlined size that keep compile time linear in the graph.
#include "lowering/materialization.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace stax::lowering {

namespace {

// Above this many operations per element an inlined body is recomputed at a cost comparable
// to a memory round trip even without transcendental ops, and repeated inlining into several
// users grows kernels quickly.
constexpr int64_t kMaxInlinedOpsWithSeveralReads = 48;
// GPU: reading many inputs in every user multiplies global-memory traffic.
constexpr int64_t kMaxInlinedLoadsOnGpu = 8;
// A body this large is stored even with one read. Storing costs nothing at run time when its
// user is pointwise over the same loops (fusion keeps it in registers), while an unbounded
// body makes every pass that walks it, and the C++ compiler, grow with the chain behind it.
// 256 is far above any body that a real program's pointwise epilogue reaches.
constexpr int64_t kMaxInlinedOps = 256;
// A division by a constant compiles to a multiply-high, shifts and an add (about 5 integer
// ops); past 8 of them per element the index costs more than storing the value and loading
// it back contiguously, which also resets the composition for the views after it.
constexpr int64_t kMaxIndexDivisions = 8;

constexpr int64_t kSaturation = int64_t{1} << 40;

void saturating_add(int64_t& a, int64_t b) {
  a = std::min(kSaturation, a + b);
}

// Records the most expensive index among the loads of a body; nothing else.
class IndexCostHandler final : public OpsHandler {
 public:
  int64_t max_divisions = 0;
  int indirect_count = 0;

  OpsValue load(const std::string&, const index::Expr& idx, DType dtype) override {
    max_divisions = std::max(max_divisions, index::count_divisions(idx, kMaxIndexDivisions));
    return {0, dtype};
  }
  OpsValue constant(const ir::Scalar&, DType dtype) override { return {0, dtype}; }
  OpsValue compute(PointwiseOp, std::span<const OpsValue>, DType result) override {
    return {0, result};
  }
  OpsValue to_dtype(OpsValue, DType dtype) override { return {0, dtype}; }
  OpsValue index_value(const index::Expr& idx, DType dtype) override {
    max_divisions = std::max(max_divisions, index::count_divisions(idx, kMaxIndexDivisions));
    return {0, dtype};
  }
  index::Expr indirect_index(OpsValue, const ir::IndexRule&) override {
    return index::Expr::var("ind" + std::to_string(indirect_count++));
  }
  void push_mask(OpsValue) override {}
  void pop_mask() override {}
  OpsValue reduction(ReductionType, OpsValue value) override { return value; }
  void store(const std::string&, const index::Expr&, OpsValue) override {}
  void store_reduction(const std::string&, const index::Expr&, OpsValue) override {}
};

}  // namespace

BodyStats& BodyStats::operator+=(const BodyStats& other) {
  saturating_add(loads, other.loads);
  saturating_add(cheap_ops, other.cheap_ops);
  saturating_add(moderate_ops, other.moderate_ops);
  saturating_add(transcendental_ops, other.transcendental_ops);
  index_divisions = std::max(index_divisions, other.index_divisions);
  return *this;
}

BodyStats load_stats() {
  BodyStats s;
  s.loads = 1;
  return s;
}

BodyStats op_stats(PointwiseOp op) {
  BodyStats s;
  switch (op_info(op).cost) {
    case CostClass::Cheap:
      s.cheap_ops = 1;
      break;
    case CostClass::Moderate:
      s.moderate_ops = 1;
      break;
    case CostClass::Transcendental:
      s.transcendental_ops = 1;
      break;
  }
  return s;
}

int64_t measure_index_divisions(const Loader& loader, size_t rank) {
  IndexCostHandler handler;
  std::vector<index::Expr> idx;
  for (size_t i = 0; i < rank; ++i) idx.push_back(index::Expr::var("i" + std::to_string(i)));
  loader(handler, idx);
  return handler.max_divisions;
}

MaterializationDecision decide_materialization(Device device, const BodyStats& stats,
                                               int64_t reads) {
  const int64_t size = stats.total_ops() + stats.loads;
  if (stats.index_divisions > kMaxIndexDivisions) {
    return {true, "its index needs more than " + std::to_string(kMaxIndexDivisions) +
                      " divisions per element: a contiguous copy is cheaper"};
  }
  if (size > kMaxInlinedOps) {
    return {true, "its inlined body has more than " + std::to_string(kMaxInlinedOps) +
                      " ops per element"};
  }
  if (reads <= 1) return {false, "one read: composed into its user"};
  if (device == Device::Cpu) {
    if (stats.transcendental_ops > 0) {
      return {true, std::to_string(reads) +
                        " reads and a transcendental op: recomputing it costs more than a "
                        "buffer on the CPU"};
    }
    if (size > kMaxInlinedOpsWithSeveralReads) {
      return {true,
              std::to_string(reads) + " reads and " + std::to_string(size) + " ops per element"};
    }
    // Memory traffic, when the readers run in different loops: recomputed, every read loads
    // the body's `loads` operands again (reads * loads); stored, they are loaded once, the
    // value written once and loaded once per read (loads + 1 + reads). Storing moves fewer
    // elements exactly when (reads - 1) * (loads - 1) > 2. This is what keeps a residual
    // stream (x + attention + mlp + ..., read by the next add and by a normalization) from
    // being recomputed from every earlier layer's outputs in each later layer.
    if ((reads - 1) * (stats.loads - 1) > 2) {
      return {true, std::to_string(reads) + " reads of a body loading " +
                        std::to_string(stats.loads) +
                        " operands: storing it once moves fewer elements than reloading them in "
                        "every reader"};
    }
    return {false, std::to_string(reads) + " reads, cheap to recompute: inlined"};
  }
  if (stats.loads > kMaxInlinedLoadsOnGpu) {
    return {true, std::to_string(reads) + " reads and " + std::to_string(stats.loads) +
                      " loads per element"};
  }
  return {false, std::to_string(reads) + " reads, cheap on the GPU: inlined"};
}

}  // namespace stax::lowering
