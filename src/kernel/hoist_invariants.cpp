// Loop-invariant scalar values move out of their loop. A fused node's body is built per
// iteration of its innermost loop, so a scalar that depends only on outer loops (log_softmax's
// log of the row sum, a normalization's reciprocal standard deviation) is computed again for
// every vector of the row. The C++ compiler does not reliably undo that: a scalar function with
// branches (the float log of stax_kernel_scalar_ops.h) stays inside the vector loop, and its
// cost is paid 128 times per 2048-element row. Moving the definition before the loop is a
// decision on the kernel IR, with the count of moved values recorded for explain.
//
// A scalar Let moves out of a loop when it is defined directly in the loop's body, every value
// it reads is defined outside the loop, no index it reads names the loop's variable or a
// variable defined inside the loop, and computing it early cannot fault or read what the loop
// writes:
//   - constants, conversions and broadcasts, and computations over floating types (integer
//     division by zero traps, and its check stays inside the loop, so integer computations
//     stay too);
//   - loads without a mask, of a buffer no statement in the loop writes, either of a local
//     array (always addressable) or in a loop that provably runs at least once (an invariant
//     address of an empty loop may lie outside its buffer).
// Values move in their order, so a chain of invariants moves together, loops inside out. Loops
// shared by an OpenMP collapse keep their perfect nesting: nothing moves out of a loop that is
// collapsed with the loop around it.
#include <algorithm>
#include <iterator>
#include <set>
#include <string>

#include "kernel/kernel_ir_visitor.h"
#include "kernel/passes.h"

namespace stax::kernel {

namespace {

// What a loop's body defines and writes, nested statements included.
struct LoopContents {
  std::set<int> values;
  std::set<std::string> variables;
  std::set<std::string> written_buffers;
};

LoopContents contents_of(const Stmt& loop_stmt) {
  LoopContents c;
  c.variables.insert(loop_stmt.loop->var);
  for_each_stmt(loop_stmt.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Let) c.values.insert(s.let.id);
    if (s.kind == StmtKind::Loop) c.variables.insert(s.loop->var);
    if (s.kind == StmtKind::DefineIndex) c.variables.insert(s.name);
    for_each_buffer_use(s, [&](const std::string& buffer, BufferRole role) {
      if (role != BufferRole::Read) c.written_buffers.insert(buffer);
    });
  });
  return c;
}

bool names_any(const index::Expr& e, const std::set<std::string>& variables) {
  for (const std::string& v : index::free_vars(e)) {
    if (variables.count(v) != 0) return true;
  }
  return false;
}

bool runs_at_least_once(const Loop& l) {
  const auto b = l.begin.constant_value();
  const auto e = l.end.constant_value();
  if (!b || !e || *e <= *b) return false;
  return !l.limit || *l.limit > *b;
}

bool may_move(const Let& let, const Stmt& loop_stmt, const LoopContents& inside,
              const std::set<std::string>& local_arrays) {
  if (let.type.is_vector()) return false;
  bool reads_inside = false;
  for_each_value_use(
      let, [&](int a, ValueRole) { reads_inside = reads_inside || inside.values.count(a) != 0; });
  if (reads_inside) return false;
  switch (let.kind) {
    case LetKind::Constant:
    case LetKind::Broadcast:
    case LetKind::Convert:
      return true;
    case LetKind::Compute:
      return is_floating(let.type.dtype);
    case LetKind::IndexValue:
      return !names_any(let.index, inside.variables);
    case LetKind::Load: {
      const Access& a = let.access;
      if (a.form != AccessForm::Scalar || a.mask >= 0 || a.count) return false;
      if (inside.written_buffers.count(a.buffer) != 0) return false;
      if (names_any(a.index, inside.variables)) return false;
      return local_arrays.count(a.buffer) != 0 || runs_at_least_once(*loop_stmt.loop);
    }
    default:
      return false;
  }
}

// Moves the invariant scalar Lets of the loop `block[at]` to just before it; returns how many.
int hoist_from(Block& block, size_t at, const std::set<std::string>& local_arrays) {
  Stmt& loop_stmt = block[at];
  const LoopContents inside = contents_of(loop_stmt);
  Block moved;
  std::set<int> moved_ids;
  Block kept;
  LoopContents remaining = inside;
  for (Stmt& s : loop_stmt.body) {
    if (s.kind == StmtKind::Let && may_move(s.let, loop_stmt, remaining, local_arrays)) {
      remaining.values.erase(s.let.id);
      moved_ids.insert(s.let.id);
      moved.push_back(std::move(s));
    } else {
      kept.push_back(std::move(s));
    }
  }
  loop_stmt.body = std::move(kept);
  const int count = static_cast<int>(moved.size());
  block.insert(block.begin() + static_cast<std::ptrdiff_t>(at),
               std::make_move_iterator(moved.begin()), std::make_move_iterator(moved.end()));
  return count;
}

// Inner loops first, so a value invariant in two loops moves out of both. The first
// `collapse_depth_left` levels of loops in `block` are collapsed with a loop around it.
int hoist_in(Block& block, std::set<std::string>& local_arrays, int collapse_depth_left,
             std::string& report) {
  int total = 0;
  for (size_t i = 0; i < block.size(); ++i) {
    Stmt& s = block[i];
    if (s.kind == StmtKind::LocalArray) local_arrays.insert(s.name);
    if (s.kind != StmtKind::Loop) {
      total += hoist_in(s.body, local_arrays, 0, report);
      continue;
    }
    const Loop& l = *s.loop;
    // The loops an OpenMP collapse(n) shares must stay perfectly nested: the first n - 1 loops
    // inside the collapsed one take nothing out.
    const int inner_collapse = l.kind == ForKind::Parallel && l.collapse > 1
                                   ? l.collapse - 1
                                   : std::max(0, collapse_depth_left - 1);
    total += hoist_in(s.body, local_arrays, inner_collapse, report);
    if (collapse_depth_left > 0) continue;
    const std::string var = l.var;
    const int moved = hoist_from(block, i, local_arrays);
    if (moved > 0) {
      if (!report.empty()) report += ", ";
      report += std::to_string(moved) + " out of loop " + var;
      total += moved;
      i += static_cast<size_t>(moved);
    }
  }
  return total;
}

}  // namespace

void hoist_loop_invariants(Kernel& kernel) {
  std::set<std::string> local_arrays;
  std::string report;
  if (hoist_in(kernel.body, local_arrays, 0, report) > 0) {
    kernel.decisions.hoisting_reason =
        "loop-invariant scalar values computed before their loop: " + report;
  }
}

}  // namespace stax::kernel
