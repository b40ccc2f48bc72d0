// Scheduling nodes and their dependences (the seed's Section 7.1).
//
// One SchedulerNode per computed buffer. Its loops are simplified first (adjacent loops that
// every index walks contiguously are merged, extent-1 loops dropped), which gives the node's
// iteration group (pointwise ranges, reduction ranges). Running its body under a recording
// handler gives the accesses; each is also normalized by dimension collapsing into a
// MemoryDep (buffer, index, ranges), the form fusion scores compare (Example 7.1).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "index/expr.h"
#include "lowering/loop_ir.h"

namespace stax::scheduler {

// Definition 7.1. Only memory dependences arise from the ops of this version of Stax; whole
// and weak dependences come with extern calls and in-place mutation.
struct MemoryDep {
  std::string buffer;
  index::Expr index;
  std::vector<index::LoopVar> ranges;
  DType dtype = DType::Float32;

  int64_t numel() const;
  int64_t bytes() const;
  std::string to_string() const;  // MemoryDep('buf1', c0, {c0: 64})
  friend bool operator==(const MemoryDep& a, const MemoryDep& b);
  friend bool operator<(const MemoryDep& a, const MemoryDep& b);
};

// One load or store of a node, with its index over the node's own loop variables.
struct Access {
  std::string buffer;
  index::Expr index;
  DType dtype = DType::Float32;
};

struct SchedulerNode {
  int id = 0;
  std::string name;  // "op<id>"
  const lowering::ComputedBuffer* buffer = nullptr;
  std::vector<index::LoopVar> vars;            // pointwise loops after simplification: x0, x1..
  std::vector<index::LoopVar> reduction_vars;  // reduction loops after simplification: r0, r1..
  std::vector<Access> reads;                   // distinct, in first-use order
  Access write;
  std::vector<MemoryDep> read_deps;  // normalized, distinct
  MemoryDep write_dep;
  // The original buffer loop variables in terms of the simplified ones.
  std::map<std::string, index::Expr> original_index;

  bool is_reduction() const { return buffer->is_reduction(); }
  std::vector<int64_t> sizes() const;
  std::vector<int64_t> reduction_sizes() const;
  index::RangeMap ranges() const;  // vars and reduction_vars
  // Runs the node's body with its simplified loop variables replaced by `pointwise` and
  // `reduction` (e.g. the loop variables of the kernel that the node was fused into).
  void run_body(lowering::OpsHandler& handler, const std::vector<index::Expr>& pointwise,
                const std::vector<index::Expr>& reduction) const;
  // All buffers the node reads or writes.
  std::vector<std::string> buffers() const;
};

// Builds the node of `buffer` (loop simplification, recording, normalization).
SchedulerNode make_scheduler_node(int id, const lowering::ComputedBuffer& buffer);

// Normalizes an index over the given loops into a MemoryDep (dimension collapsing).
MemoryDep normalize_dep(const std::string& buffer, const index::Expr& index,
                        const std::vector<index::LoopVar>& loops, DType dtype);

}  // namespace stax::scheduler
