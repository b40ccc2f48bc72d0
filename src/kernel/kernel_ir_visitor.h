// Visiting and rewriting kernel IR (issue 14 point 1; design review §1.3.2 and §8 item 3).
//
// Which fields of a statement hold value ids, accumulator ids, index expressions and buffer
// names is written down once, here, and every pass asks this file instead of listing the
// fields itself; a new statement kind or field is then a change in one place. The design is
// that of Halide's IRVisitor / IRMutator pair: a read-only visitor with one hook per
// statement kind whose default visits the statement's uses and recurses into its nested body,
// and a mutator whose hooks rebuild a statement (by default: a deep copy with every use passed
// through an overridable mapping, nested bodies mutated in turn). Two layers:
//   - free functions over one statement (not its nested body): for_each_value_use /
//     map_value_uses, map_accumulator_uses, for_each_index / map_indices,
//     for_each_buffer_use; the building blocks, for passes that walk with for_each_stmt;
//   - IRVisitor and IRMutator, for passes that want per-kind hooks over a whole block.
// Unlike Halide's expression trees, values here are flat ids defined by Let statements, so a
// "use" is a leaf: a visitor sees the id and the role it plays, never a subtree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernel/kernel_ir.h"

namespace stax::kernel {

// The role a used value plays in the statement that uses it.
enum class ValueRole : uint8_t {
  Operand,       // Let::args (Compute, Convert, Broadcast, Blend)
  Mask,          // Access::mask (of a load, a store or a block transpose's access)
  Offsets,       // Access::offsets of a gather or scatter
  Stored,        // Store: the stored value
  Reduced,       // Reduce: the value folded into the accumulator
  ReducedIndex,  // Reduce of an arg-reduction: the int64 index of the value
  Checked,       // Check: the divisor or index checked
  IndexSource,   // DefineIndex read from a tensor: its int64 value
  CallArgument,  // Call: a value argument
};

// The role an index expression plays in its statement.
enum class IndexRole : uint8_t {
  LoopBegin,
  LoopEnd,
  Load,                  // an affine load's element offset
  Store,                 // an affine store's element offset
  GatherBase,            // a gather's or scatter's Access::index: the offsets value carries
                         // the addresses, so it is never printed
  IndexValue,            // LetKind::IndexValue
  DefineIndex,           // DefineIndex, expression form
  TransposeSource,       // the block transpose's element (0, 0) in its source
  TransposeDestination,  // ... and in its destination tile
};

// How a statement uses a buffer (a kernel pointer or a local array).
enum class BufferRole : uint8_t {
  Read,          // a load; a block transpose's source
  Write,         // a store; a block transpose's destination
  MayReadWrite,  // an external call's buffer argument (no declared read or write set)
};

// Names for messages ("the mask of a store").
std::string_view stmt_kind_name(StmtKind kind);
std::string_view value_role_name(ValueRole role);

namespace visitor_detail {

// One implementation for const and mutable statements: StmtT is Stmt or const Stmt, and `f`
// receives int& or const int&.
template <class AccessT, class F>
void access_value_uses(AccessT& a, F& f) {
  if (a.mask >= 0) f(a.mask, ValueRole::Mask);
  if (a.offsets >= 0) f(a.offsets, ValueRole::Offsets);
}

template <class LetT, class F>
void let_value_uses(LetT& l, F& f) {
  for (auto& a : l.args) f(a, ValueRole::Operand);
  if (l.kind == LetKind::Load) access_value_uses(l.access, f);
}

template <class StmtT, class F>
void stmt_value_uses(StmtT& s, F& f) {
  switch (s.kind) {
    case StmtKind::Let:
      let_value_uses(s.let, f);
      return;
    case StmtKind::Store:
      f(s.value, ValueRole::Stored);
      access_value_uses(s.access, f);
      return;
    case StmtKind::Reduce:
      f(s.value, ValueRole::Reduced);
      if (s.index_value >= 0) f(s.index_value, ValueRole::ReducedIndex);
      return;
    case StmtKind::Check:
      f(s.value, ValueRole::Checked);
      return;
    case StmtKind::DefineIndex:
      if (!s.index) f(s.value, ValueRole::IndexSource);
      return;
    case StmtKind::Call:
      for (auto& a : s.call_args) {
        if (a.kind == CallArg::Kind::Value) f(a.value, ValueRole::CallArgument);
      }
      return;
    case StmtKind::TransposeBlock:
      access_value_uses(s.transpose.source, f);
      access_value_uses(s.transpose.destination, f);
      return;
    case StmtKind::Loop:
    case StmtKind::Block:
    case StmtKind::Single:
    case StmtKind::Barrier:
    case StmtKind::LocalArray:
    case StmtKind::AccumulatorInit:
    case StmtKind::FoldBlock:
    case StmtKind::StorePartial:
    case StmtKind::Comment:
    case StmtKind::ThreadCombine:
      return;
  }
}

template <class AccessT, class F>
void access_index(AccessT& a, IndexRole affine, F& f) {
  f(a.index, a.form == AccessForm::Gather ? IndexRole::GatherBase : affine);
}

template <class StmtT, class F>
void stmt_indices(StmtT& s, F& f) {
  switch (s.kind) {
    case StmtKind::Loop:
      f(s.loop->begin, IndexRole::LoopBegin);
      f(s.loop->end, IndexRole::LoopEnd);
      return;
    case StmtKind::Let:
      if (s.let.kind == LetKind::Load) access_index(s.let.access, IndexRole::Load, f);
      if (s.let.kind == LetKind::IndexValue) f(s.let.index, IndexRole::IndexValue);
      return;
    case StmtKind::Store:
      access_index(s.access, IndexRole::Store, f);
      return;
    case StmtKind::DefineIndex:
      if (s.index) f(*s.index, IndexRole::DefineIndex);
      return;
    case StmtKind::TransposeBlock:
      f(s.transpose.source.index, IndexRole::TransposeSource);
      f(s.transpose.destination.index, IndexRole::TransposeDestination);
      return;
    default:
      return;
  }
}

}  // namespace visitor_detail

// f(int id, ValueRole role) for every value `s` itself uses (not its nested body), in a fixed
// order: operands, then masks and offsets. Ids < 0 (an absent optional use) are skipped,
// except the required value of a Store, Reduce, Check or tensor-read DefineIndex, so that a
// verifier sees it missing.
template <class F>
void for_each_value_use(const Stmt& s, F&& f) {
  visitor_detail::stmt_value_uses(s, f);
}
template <class F>
void for_each_value_use(const Let& l, F&& f) {
  visitor_detail::let_value_uses(l, f);
}

// The same uses as writable references, f(int& id, ValueRole role): renaming values.
template <class F>
void map_value_uses(Stmt& s, F&& f) {
  visitor_detail::stmt_value_uses(s, f);
}
template <class F>
void map_value_uses(Let& l, F&& f) {
  visitor_detail::let_value_uses(l, f);
}

// f(int& accumulator) for every accumulator id `s` names: its declaration, updates, folds
// and partial stores, and the Let of its result or combined partials.
template <class F>
void map_accumulator_uses(Stmt& s, F&& f) {
  switch (s.kind) {
    case StmtKind::AccumulatorInit:
    case StmtKind::Reduce:
    case StmtKind::FoldBlock:
    case StmtKind::StorePartial:
    case StmtKind::ThreadCombine:
      f(s.accumulator);
      return;
    case StmtKind::Let:
      if (s.let.kind == LetKind::AccumulatorResult || s.let.kind == LetKind::CombinePartials) {
        f(s.let.accumulator);
      }
      return;
    default:
      return;
  }
}

// f(const index::Expr&, IndexRole) for every index expression of `s` (not its nested body).
template <class F>
void for_each_index(const Stmt& s, F&& f) {
  visitor_detail::stmt_indices(s, f);
}
// The same as writable references, f(index::Expr&, IndexRole).
template <class F>
void map_indices(Stmt& s, F&& f) {
  visitor_detail::stmt_indices(s, f);
}

// f(const std::string& buffer, BufferRole) for every buffer `s` reads or writes (not its
// nested body). A LocalArray declares a buffer and uses none.
template <class F>
void for_each_buffer_use(const Stmt& s, F&& f) {
  switch (s.kind) {
    case StmtKind::Let:
      if (s.let.kind == LetKind::Load) f(s.let.access.buffer, BufferRole::Read);
      return;
    case StmtKind::Store:
      f(s.access.buffer, BufferRole::Write);
      return;
    case StmtKind::TransposeBlock:
      f(s.transpose.source.buffer, BufferRole::Read);
      f(s.transpose.destination.buffer, BufferRole::Write);
      return;
    case StmtKind::Call:
      for (const CallArg& a : s.call_args) {
        if (a.kind == CallArg::Kind::Buffer) f(a.buffer, BufferRole::MayReadWrite);
      }
      return;
    default:
      return;
  }
}

// A read-only walk with one hook per statement kind. Every hook's default is
// visit_children: the statement's value uses (visit_value_use), its index expressions
// (visit_index), then its nested body, statement by statement (pre-order). A subclass
// overrides the hooks of the kinds it cares about and calls visit_children where it wants
// the default recursion.
class IRVisitor {
 public:
  virtual ~IRVisitor() = default;

  void visit(const Block& block);
  void visit(const Stmt& s);  // dispatches to the hook of s.kind

 protected:
  virtual void visit_let(const Stmt& s) { visit_children(s); }
  virtual void visit_store(const Stmt& s) { visit_children(s); }
  virtual void visit_loop(const Stmt& s) { visit_children(s); }
  virtual void visit_block(const Stmt& s) { visit_children(s); }
  virtual void visit_single(const Stmt& s) { visit_children(s); }
  virtual void visit_barrier(const Stmt& s) { visit_children(s); }
  virtual void visit_local_array(const Stmt& s) { visit_children(s); }
  virtual void visit_define_index(const Stmt& s) { visit_children(s); }
  virtual void visit_accumulator_init(const Stmt& s) { visit_children(s); }
  virtual void visit_reduce(const Stmt& s) { visit_children(s); }
  virtual void visit_fold_block(const Stmt& s) { visit_children(s); }
  virtual void visit_store_partial(const Stmt& s) { visit_children(s); }
  virtual void visit_check(const Stmt& s) { visit_children(s); }
  virtual void visit_call(const Stmt& s) { visit_children(s); }
  virtual void visit_comment(const Stmt& s) { visit_children(s); }
  virtual void visit_transpose_block(const Stmt& s) { visit_children(s); }
  virtual void visit_thread_combine(const Stmt& s) { visit_children(s); }

  // Leaves: a value `s` uses, an index expression of `s`. Nothing by default.
  virtual void visit_value_use(int /*value*/, ValueRole /*role*/, const Stmt& /*s*/) {}
  virtual void visit_index(const index::Expr& /*e*/, IndexRole /*role*/, const Stmt& /*s*/) {}

  // The default of every hook: uses, indices, then the nested body through visit_body.
  void visit_children(const Stmt& s);
  // The nested body of a Loop, Block or Single; override to keep per-scope state.
  virtual void visit_body(const Stmt& /*parent*/, const Block& body) { visit(body); }
};

// Rewrites a block into a new one. mutate(block) passes every statement to the hook of its
// kind, which appends what replaces it to `out` (nothing, the statement rebuilt, or several
// statements). Every hook's default appends rebuild(s): a deep copy of `s` (its loop is a
// fresh object) whose value uses, accumulator ids and index expressions went through
// mutate_value, mutate_accumulator and mutate_index, and whose nested body went through
// mutate_body. With no override, mutate(block) is a deep copy equal to `block`.
class IRMutator {
 public:
  virtual ~IRMutator() = default;

  Block mutate(const Block& block);
  void mutate(const Stmt& s, Block& out);  // dispatches to the hook of s.kind

 protected:
  virtual void mutate_let(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_store(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_loop(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_block(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_single(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_barrier(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_local_array(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_define_index(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_accumulator_init(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_reduce(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_fold_block(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_store_partial(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_check(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_call(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_comment(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_transpose_block(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }
  virtual void mutate_thread_combine(const Stmt& s, Block& out) { out.push_back(rebuild(s)); }

  // The mappings rebuild applies; identities by default.
  virtual int mutate_value(int value, ValueRole /*role*/) { return value; }
  virtual int mutate_accumulator(int accumulator) { return accumulator; }
  virtual index::Expr mutate_index(const index::Expr& e, IndexRole /*role*/) { return e; }
  // The nested body of a Loop, Block or Single; override to keep per-scope state.
  virtual Block mutate_body(const Stmt& /*parent*/, const Block& body) { return mutate(body); }

  // The default rewrite of one statement (see the class comment).
  Stmt rebuild(const Stmt& s);
};

}  // namespace stax::kernel
