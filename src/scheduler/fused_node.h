// Fused nodes: what the scheduler hands to code generation, one per kernel loop.
//
// A fused node is a set of scheduler nodes sharing `outer` loops (the outer-loop fusion depth
// is outer.size(); 0 when the node is not outer-loop fused). Inside the outer loops come one
// or more loop nests, run one after another in each outer iteration (Listing 7.1). All nodes
// of one nest share its loops: a nest is (pointwise ranges, reduction ranges), and a
// pointwise node whose ranges are the nest's pointwise ++ reduction ranges runs inside the
// reduction loop (Definition 7.2, condition 3).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/dependencies.h"

namespace stax::scheduler {

// Extents are expressions over the size symbols (issue 33; constants where static).
struct LoopNest {
  std::vector<index::Expr> sizes;            // pointwise ranges inside the outer loops
  std::vector<index::Expr> reduction_sizes;  // empty for a pointwise nest
  std::vector<int> nodes;                    // scheduler node ids, in execution order
};

// One op of an external call's epilogue (epilogue_fusion.h), applied to x, the value so far.
struct EpilogueOp {
  enum class Kind : uint8_t { Tanh, Abs, Sqrt, Square, Linear };
  Kind kind = Kind::Linear;
  double alpha = 1.0;  // Linear: x * alpha + beta, the product and the sum each rounded
  double beta = 0.0;
  std::string to_string() const;  // "tanh", "x * 0.5 + 1"
  friend bool operator==(const EpilogueOp&, const EpilogueOp&) = default;
};

struct FusedNode {
  std::string name;  // op0, or op0_op1 after fusion
  std::vector<index::Expr> outer;
  std::vector<LoopNest> nests;
  bool outer_loop_fused = false;
  // An external call with an epilogue: nests[0].nodes is {the call, the pointwise node it
  // absorbed}, and the call applies this chain to each result, writing the node's buffer.
  std::vector<EpilogueOp> epilogue;

  std::vector<int> members() const;  // in loop-body order: nests in order, then each nest's
  bool contains(int node_id) const;
  // Whether member `first` runs before member `second` in each iteration of the loop body
  // (the order of members(), not of the ids).
  bool runs_before(int first, int second) const;
  bool has_reduction() const;
  // The iteration group (pointwise ranges, reduction ranges) of a single-nest node.
  std::vector<index::Expr> pointwise_ranges() const;  // outer ++ nests[0].sizes
  std::vector<index::Expr> reduction_ranges() const { return nests.at(0).reduction_sizes; }
  // "((64,), (128,))" for a single nest; "outer (64,): ((), (128,)) ; ((128,), ())" otherwise.
  std::string group_string() const;
  // SchedulerNode, FusedSchedulerNode or OuterLoopFusedSchedulerNode (the fusion log's names).
  std::string kind_name() const;
  // The graph ops its members' bodies compute: the union over its members, in graph order
  // (provenance, lowering/source_op.h). `nodes` are the schedule's nodes, indexed by id.
  std::vector<lowering::SourceOp> source_ops(const std::vector<SchedulerNode>& nodes) const;
};

std::string sizes_string(const std::vector<index::Expr>& sizes);  // "(64, 128)", "(s0,)", "()"
inline std::string sizes_string(const std::vector<int64_t>& sizes) {
  return sizes_string(std::vector<index::Expr>(sizes.begin(), sizes.end()));
}

}  // namespace stax::scheduler
