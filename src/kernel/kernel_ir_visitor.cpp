// The dispatch and default recursion of IRVisitor and IRMutator (kernel_ir_visitor.h).
#include "kernel/kernel_ir_visitor.h"

#include <memory>

namespace stax::kernel {

std::string_view stmt_kind_name(StmtKind kind) {
  switch (kind) {
    case StmtKind::Let:
      return "definition";
    case StmtKind::Store:
      return "store";
    case StmtKind::Loop:
      return "loop";
    case StmtKind::Block:
      return "block";
    case StmtKind::Single:
      return "single block";
    case StmtKind::Barrier:
      return "barrier";
    case StmtKind::LocalArray:
      return "local array";
    case StmtKind::DefineIndex:
      return "index definition";
    case StmtKind::AccumulatorInit:
      return "accumulator declaration";
    case StmtKind::Reduce:
      return "reduction update";
    case StmtKind::FoldBlock:
      return "cascade fold";
    case StmtKind::StorePartial:
      return "partial store";
    case StmtKind::Check:
      return "check";
    case StmtKind::Call:
      return "call";
    case StmtKind::Comment:
      return "comment";
    case StmtKind::TransposeBlock:
      return "block transpose";
    case StmtKind::ThreadCombine:
      return "thread combine";
  }
  return "?";
}

std::string_view value_role_name(ValueRole role) {
  switch (role) {
    case ValueRole::Operand:
      return "an operand";
    case ValueRole::Mask:
      return "the mask";
    case ValueRole::Offsets:
      return "the offsets";
    case ValueRole::Stored:
      return "the stored value";
    case ValueRole::Reduced:
      return "the reduced value";
    case ValueRole::ReducedIndex:
      return "the reduced index";
    case ValueRole::Checked:
      return "the checked value";
    case ValueRole::IndexSource:
      return "the index read";
    case ValueRole::CallArgument:
      return "an argument";
  }
  return "?";
}

void IRVisitor::visit(const Block& block) {
  for (const Stmt& s : block) visit(s);
}

void IRVisitor::visit(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::Let:
      return visit_let(s);
    case StmtKind::Store:
      return visit_store(s);
    case StmtKind::Loop:
      return visit_loop(s);
    case StmtKind::Block:
      return visit_block(s);
    case StmtKind::Single:
      return visit_single(s);
    case StmtKind::Barrier:
      return visit_barrier(s);
    case StmtKind::LocalArray:
      return visit_local_array(s);
    case StmtKind::DefineIndex:
      return visit_define_index(s);
    case StmtKind::AccumulatorInit:
      return visit_accumulator_init(s);
    case StmtKind::Reduce:
      return visit_reduce(s);
    case StmtKind::FoldBlock:
      return visit_fold_block(s);
    case StmtKind::StorePartial:
      return visit_store_partial(s);
    case StmtKind::Check:
      return visit_check(s);
    case StmtKind::Call:
      return visit_call(s);
    case StmtKind::Comment:
      return visit_comment(s);
    case StmtKind::TransposeBlock:
      return visit_transpose_block(s);
    case StmtKind::ThreadCombine:
      return visit_thread_combine(s);
  }
}

void IRVisitor::visit_children(const Stmt& s) {
  for_each_value_use(s, [&](int id, ValueRole role) { visit_value_use(id, role, s); });
  for_each_index(s, [&](const index::Expr& e, IndexRole role) { visit_index(e, role, s); });
  if (!s.body.empty()) visit_body(s, s.body);
}

Block IRMutator::mutate(const Block& block) {
  Block out;
  out.reserve(block.size());
  for (const Stmt& s : block) mutate(s, out);
  return out;
}

void IRMutator::mutate(const Stmt& s, Block& out) {
  switch (s.kind) {
    case StmtKind::Let:
      return mutate_let(s, out);
    case StmtKind::Store:
      return mutate_store(s, out);
    case StmtKind::Loop:
      return mutate_loop(s, out);
    case StmtKind::Block:
      return mutate_block(s, out);
    case StmtKind::Single:
      return mutate_single(s, out);
    case StmtKind::Barrier:
      return mutate_barrier(s, out);
    case StmtKind::LocalArray:
      return mutate_local_array(s, out);
    case StmtKind::DefineIndex:
      return mutate_define_index(s, out);
    case StmtKind::AccumulatorInit:
      return mutate_accumulator_init(s, out);
    case StmtKind::Reduce:
      return mutate_reduce(s, out);
    case StmtKind::FoldBlock:
      return mutate_fold_block(s, out);
    case StmtKind::StorePartial:
      return mutate_store_partial(s, out);
    case StmtKind::Check:
      return mutate_check(s, out);
    case StmtKind::Call:
      return mutate_call(s, out);
    case StmtKind::Comment:
      return mutate_comment(s, out);
    case StmtKind::TransposeBlock:
      return mutate_transpose_block(s, out);
    case StmtKind::ThreadCombine:
      return mutate_thread_combine(s, out);
  }
}

Stmt IRMutator::rebuild(const Stmt& s) {
  Stmt n = s;
  n.body.clear();
  if (s.loop) n.loop = std::make_shared<Loop>(*s.loop);  // a copy must not alias the loop
  map_value_uses(n, [&](int& id, ValueRole role) { id = mutate_value(id, role); });
  map_accumulator_uses(n, [&](int& acc) { acc = mutate_accumulator(acc); });
  map_indices(n, [&](index::Expr& e, IndexRole role) { e = mutate_index(e, role); });
  if (!s.body.empty()) n.body = mutate_body(s, s.body);
  return n;
}

}  // namespace stax::kernel
