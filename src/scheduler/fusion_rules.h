// can_fuse for the CPU (line 3 of Algorithm 7.1): whether two fused nodes may share a kernel,
// the fused node they would form, and the reason — for a fusion as for a rejection.
//
// Rules, in order: two reductions that require a strict reduction order are never fused
// (Section 7.3; SchedulerNode::strict_order); an external call shares no loop; size limits (at most
// 128 nodes and 32 distinct buffers after fusion, Section 7.3); shared data no lower than the
// threshold; then the CPU loop rules of Definition 7.2 — identical iteration groups
// (SAME_VARS_REDUCE), pointwise nodes whose loops re-split into each other's
// (COMPATIBLE_RANGES_NO_REDUCTION), a pointwise node whose ranges split into a reduction's
// (COMPATIBLE_REDUCTION), or shared outer loops (OUTER_LOOP_FUSED, with the outer-loop fusion
// depth) — each checked for vertical correctness: inside one loop nest a read must use exactly the
// index of the write and may not read a reduction result (Proposition 7.2, δ = 0); across nests of
// one outer iteration the positions read must be exactly those written in that same outer
// iteration. A write into a graph input in place may share the loop body only with reads of
// that input at the element written and earlier in the body (FusedNode::runs_before). Last, a
// horizontal pair that passes all of these must not raise the peak memory that
// Definition 7.5 simulates (fusion_peak.h). On a GPU target (FusionLimits::device) the loop
// rules are Definition 7.2 by element count (compatibility_gpu.h), and a pair that must run one
// after the other in each row of a reduction (a reader of its result, or work once per output)
// becomes a node of rows (fusion_rules_gpu.cpp) instead of outer-loop fusion.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "lowering/materialization.h"
#include "scheduler/fused_node.h"

namespace stax::scheduler {

// Limits of line 3 of Algorithm 7.1 (Section 7.3: "at most 128 nodes after fusion and at most
// 32 distinct buffers involved; a number of shared data bytes no lower than a threshold").
struct FusionLimits {
  size_t max_nodes = 128;
  size_t max_buffers = 32;
  int64_t min_shared_bytes = 1;
  // Not a legality rule but a bound on line 2's candidates, for compile time: two readers of a
  // buffer are paired only when at most this far apart in the original order (greedy_fusion.cpp
  // says why). Whether a horizontal pair may fuse is decided by the peak (fusion_peak.h).
  int horizontal_pair_distance = 64;
  // Whose reading of Definition 7.2 applies: the CPU's per-dimension loops, or the GPU's
  // element counts (compatibility_gpu.h).
  lowering::Device device = lowering::Device::Cpu;
};

struct FusionScore {
  int type = 0;              // τ: both reductions or both pointwise, sharing data
  int64_t shared_bytes = 0;  // σ
  int shared_buffers = 0;    // ω
  int distance = 0;          // δ
  std::string to_string() const;
};
// Whether candidate x ranks strictly above y: (τ, σ, ω, −δ) lexicographically, except that
// only σ is compared when the σ of the two differ by more than a factor of 16.
bool ranks_higher(const FusionScore& x, const FusionScore& y);

struct FusionDecision {
  bool accepted = false;
  std::string reason;  // SAME_VARS_REDUCE, COMPATIBLE_REDUCTION, OUTER_LOOP_FUSED, or why not
  bool vertical = false;
  FusionScore score;
  FusedNode fused;  // valid when accepted
};

// Definition 7.5's simulated peak of the round's groups, without and with a horizontal pair
// merged (fusion_peak.h).
struct PeakChange {
  int64_t before = 0;
  int64_t after = 0;
};
// Asked only of a horizontal pair that passes every other rule; nullopt when the merge does not
// raise the peak (or cannot be ordered, which Proposition 7.1's cycle check then refuses).
using RaisedPeak = std::function<std::optional<PeakChange>()>;

class FusionRules {
 public:
  FusionRules(const std::vector<SchedulerNode>& nodes, FusionLimits limits = {});
  // a and b are distinct fused nodes; either may come first in the original order. Without
  // `raised_peak`, horizontal fusion is not checked against the peak.
  FusionDecision can_fuse(const FusedNode& a, const FusedNode& b,
                          const RaisedPeak& raised_peak = nullptr) const;
  FusionScore score(const FusedNode& a, const FusedNode& b) const;
  // Whether some node of `to` reads a buffer that a node of `from` writes, or must run after a
  // node of `from` (a WeakDep).
  bool has_edge(const FusedNode& from, const FusedNode& to) const;
  int position(const FusedNode& n) const;  // smallest node id

 private:
  FusionDecision try_same_nest(const FusedNode& a, const FusedNode& b, bool vertical) const;
  // fusion_rules_gpu.cpp: one nest by element count, or rows of a reduction with the work
  // over each row after it.
  FusionDecision try_same_nest_gpu(const FusedNode& a, const FusedNode& b, bool vertical) const;
  FusionDecision try_rows_gpu(const FusedNode& a, const FusedNode& b, bool vertical) const;
  FusionDecision try_outer_loop(const FusedNode& a, const FusedNode& b) const;
  std::string check_accesses(const FusedNode& fused, const FusedNode& a, const FusedNode& b) const;

  // What can_fuse needs of a group, gathered once per group.
  struct GroupSummary {
    int position = 0;
    std::set<MemoryDep> deps;
    std::set<std::string> written;
    std::set<std::string> read;
    std::set<std::string> buffers;
    std::set<int> members;
    std::set<int> runs_after;  // nodes its in-place writes wait for (WeakDep)
  };
  // Why fusing a and b into `fused` could overwrite an input element before a reader reads
  // it; empty when every in-place write of one group agrees with the other's reads of that
  // input, and no such read comes after the write in `fused`'s loop body.
  std::string check_in_place_writes(const FusedNode& fused, const FusedNode& a,
                                    const FusedNode& b) const;
  const GroupSummary& summary(const FusedNode& f) const;
  // A member whose reduction keeps a strict order (SchedulerNode::strict_order), or null.
  const SchedulerNode* strict_order_member(const FusedNode& f) const;

  const std::vector<SchedulerNode>& nodes_;
  FusionLimits limits_;
  mutable std::unordered_map<std::string, GroupSummary> summaries_;
};

// The loop variables of a node placed in a fused node: its pointwise and reduction variables
// expressed in the fused node's loop variables (outer and nest pointwise loops x0, x1, ...;
// reduction loops r0, r1, ...), plus the index of its nest.
struct Placement {
  size_t nest = 0;
  std::vector<index::Expr> pointwise;
  std::vector<index::Expr> reduction;
};
Placement place(const FusedNode& fused, const SchedulerNode& node);
// Whether every extent of `coarse` is the product of a run of consecutive extents of `fine`
// (so a pointwise loop nest over `coarse` can be re-split into `fine`, row-major).
// With symbolic extents a run's product must equal the coarse extent as an expression.
bool coarsens(const std::vector<index::Expr>& coarse, const std::vector<index::Expr>& fine);
// An access index of `node` rewritten into the loop variables of `fused` (simplified).
index::Expr placed_index(const FusedNode& fused, const SchedulerNode& node, const index::Expr& idx,
                         const Placement& placement);
// Where the loop variables of one nest of a fused node range (outer loops included), with the
// size symbols' facts.
index::Domain nest_domain(const FusedNode& fused, size_t nest, const index::SymbolTable& symbols);
// The same as constants, for code generation, which does not take symbols yet.
index::RangeMap nest_ranges(const FusedNode& fused, size_t nest);
std::vector<index::LoopVar> nest_inner_loops(const FusedNode& fused, size_t nest);

}  // namespace stax::scheduler
