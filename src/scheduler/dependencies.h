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
#include <utility>
#include <vector>

#include "index/expr.h"
#include "lowering/loop_ir.h"

namespace stax::scheduler {

// Definition 7.1's three kinds of dependence. A memory dependence records the buffer, the
// index of the access over the node's loops and their ranges: what fusion compares.
struct MemoryDep {
  std::string buffer;
  index::Expr index;
  std::vector<index::LoopVar> ranges;
  DType dtype = DType::Float32;
  // Element count and bytes at the size symbols' hints (issue 33: for scores, never proofs).
  int64_t numel(const index::SymbolTable& symbols) const;
  int64_t bytes(const index::SymbolTable& symbols) const;
  std::string to_string() const;  // MemoryDep('buf1', c0, {c0: 64})
  friend bool operator==(const MemoryDep& a, const MemoryDep& b);
  friend bool operator<(const MemoryDep& a, const MemoryDep& b);
};

// A whole dependence records only the buffer: an external call reads (or writes) it through
// indices Stax does not analyze, so the call depends on every element of it.
struct WholeDep {
  std::string buffer;
  DType dtype = DType::Float32;
  int64_t numel = 0;

  int64_t bytes() const;
  std::string to_string() const;  // WholeDep('buf1')
  friend bool operator==(const WholeDep& a, const WholeDep& b) = default;
};

// A weak dependence carries no data: it only orders two nodes, so that a node reading a buffer
// runs before the node that rewrites it in place (issue 16, point 6: copy_ writes a graph
// input's memory, lowering/lower_mutation.cpp; add_weak_dependences).
struct WeakDep {
  std::string buffer;  // the buffer rewritten in place
  int before = -1;     // the node that must run first (it reads the old contents)

  std::string to_string() const;  // WeakDep('buf1', before op3)
  friend bool operator==(const WeakDep& a, const WeakDep& b) = default;
};

// The kind of computation behind a scheduler node: a loop nest (pointwise or reduction body,
// Definition 6.1) or an external call (a library routine, lowering/loop_ir.h). Scan and
// mutation nodes come later.
enum class NodeKind : uint8_t { Loop, External };

// One load or store of a node, with its index over the node's own loop variables.
struct Access {
  std::string buffer;
  index::Expr index;
  DType dtype = DType::Float32;
};

struct SchedulerNode {
  int id = 0;
  std::string name;  // "op<id>"
  NodeKind kind = NodeKind::Loop;
  const lowering::ComputedBuffer* buffer = nullptr;
  std::vector<index::LoopVar> vars;            // pointwise loops after simplification: x0, x1..
  std::vector<index::LoopVar> reduction_vars;  // reduction loops after simplification: r0, r1..
  std::vector<Access> reads;                   // distinct, in first-use order
  Access write;
  std::vector<MemoryDep> read_deps;  // normalized, distinct
  MemoryDep write_dep;
  // An external node reads its operands whole: `whole_read_deps` holds them, and `reads` names
  // the same buffers (at index 0: an external node has no loops, and no fusion compares its
  // accesses), so that every pass ordering nodes by the buffers they read sees them.
  std::vector<WholeDep> whole_read_deps;
  std::vector<WeakDep> weak_deps;  // nodes that must run first (they read what this rewrites)
  // Why the node's reduction must combine its values in one fixed order (a scan's running
  // value, a scatter's visits in eager's order); empty when any order will do (a loop
  // reduction: its reordering rests on associativity, Section 7.7). Section 7.3's can_fuse
  // never fuses two such nodes.
  std::string strict_order;
  // The original buffer loop variables in terms of the simplified ones.
  std::map<std::string, index::Expr> original_index;

  // The size symbols its extents are expressions over, with their facts (issue 33).
  index::SymbolTable symbols;

  bool is_reduction() const { return buffer->is_reduction(); }
  bool is_external() const { return kind == NodeKind::External; }
  std::vector<index::Expr> sizes() const;  // the extents of vars
  std::vector<index::Expr> reduction_sizes() const;
  // Where vars and reduction_vars range, with the symbols' facts: what proofs over the node's
  // indices use.
  index::Domain domain() const;
  // Runs the node's body with its simplified loop variables replaced by `pointwise` and
  // `reduction` (e.g. the loop variables of the kernel that the node was fused into).
  void run_body(lowering::OpsHandler& handler, const std::vector<index::Expr>& pointwise,
                const std::vector<index::Expr>& reduction) const;
  // All buffers the node reads or writes.
  std::vector<std::string> buffers() const;
};

// Builds the node of `buffer` (loop simplification, recording, normalization); `symbols`: the
// lowered graph's.
SchedulerNode make_scheduler_node(int id, const lowering::ComputedBuffer& buffer,
                                  const index::SymbolTable& symbols = {});

// Definition 7.1's weak dependences: a node writing a graph input in place (its buffer's
// mutated_input) runs after every other node that reads the input's old contents.
void add_weak_dependences(std::vector<SchedulerNode>& nodes);
// Every weak dependence as an ordering edge (before, after) of node ids.
std::vector<std::pair<int, int>> weak_edges(const std::vector<SchedulerNode>& nodes);
// The write of an in-place node as a dependence on the input it writes (its write_dep with the
// input's name): what a reader of the input must match to share its loop.
MemoryDep in_place_write_dep(const SchedulerNode& node);

// Why `reader`, sharing a loop with `writer`, could read an element of `written.buffer`
// after `writer` overwrote it in place (`written`: the write as a dependence on that
// buffer); empty when every read of it is at the element written, by a node no later than
// the writer in the loop body (the argument of Proposition 7.2). `reader_runs_later`: whether
// the reader comes after the writer in the body of the fused node the two share — not their
// ids: an outer-loop fused node runs its first part's nests before its second's, whatever
// the ids of their nodes (FusedNode::runs_before).
std::string in_place_conflict(const SchedulerNode& writer, const MemoryDep& written,
                              const SchedulerNode& reader, bool reader_runs_later);

// Normalizes an index over the given loops into a MemoryDep (dimension collapsing).
MemoryDep normalize_dep(const std::string& buffer, const index::Expr& index,
                        const std::vector<index::LoopVar>& loops, DType dtype,
                        const index::SymbolTable& symbols = {});

}  // namespace stax::scheduler
