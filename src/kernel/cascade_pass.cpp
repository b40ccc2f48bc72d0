// The cascade-blocking pass (cascade_blocking.h): float32 sums accumulate one block of at most
// kCascadeBlock iterations per lane into a float block accumulator, folded into a double
// outer accumulator after each block. Works on every kernel form: wherever float sums are
// declared, the chain of reduction loops after the declarations is blocked.
#include "kernel/cascade_blocking.h"
#include "kernel/passes.h"

namespace stax::kernel {

namespace {

using index::Expr;

Stmt* tail_in(Block& b) {
  for (Stmt& s : b) {
    if (s.kind == StmtKind::Block && s.vector_tail) return &s;
  }
  return nullptr;
}

Stmt* reduction_loop_in(Block& b) {
  for (Stmt& s : b) {
    if (s.kind == StmtKind::Loop && s.loop->role == LoopRole::Reduction) return &s;
  }
  return nullptr;
}

struct Level {
  Block* parent;
  Stmt* loop;  // nullptr: only a masked tail at this level
  Stmt* tail;  // the masked tail beside the vector loop, if any
};

void fold_all(Block& b, const std::vector<int>& accs) {
  for (int a : accs) {
    Stmt f;
    f.kind = StmtKind::FoldBlock;
    f.accumulator = a;
    b.push_back(std::move(f));
  }
}

void block_chain(Kernel& k, Block& b, const std::vector<int>& accs) {
  std::vector<Level> levels;
  Block* cur = &b;
  while (true) {
    Stmt* loop = reduction_loop_in(*cur);
    Stmt* tail = tail_in(*cur);
    if (loop == nullptr && tail == nullptr) break;
    levels.push_back({cur, loop, tail});
    if (loop == nullptr) break;
    cur = &loop->body;
  }
  std::vector<int64_t> iterations;
  for (const Level& l : levels) {
    if (l.loop == nullptr) {
      iterations.push_back(1);
      continue;
    }
    const Loop& loop = *l.loop->loop;
    // Issue 33: blocks are cut from a known trip count; a loop of run-time length is summed
    // without them, so far.
    if (!loop.end.is_constant() || !loop.begin.is_constant()) return;
    const int64_t n = (*loop.end.constant_value() - *loop.begin.constant_value()) / loop.step;
    iterations.push_back(n + (l.tail != nullptr ? 1 : 0));
  }
  const auto blocking = cascade_blocking(iterations);
  if (!blocking) return;
  for (int a : accs) k.accumulator(a).cascade = true;
  Level& level = levels[blocking->level];
  Loop& inner = *level.loop->loop;
  const int64_t end = *inner.end.constant_value();
  const int64_t block = blocking->chunk * inner.step;
  const std::string blk = inner.var + "_blk";
  k.ranges.extents[blk] = std::max<int64_t>(end, 1);
  Loop outer = inner;
  outer.var = blk;
  outer.step = block;
  outer.vector_width = 1;
  inner.begin = Expr::var(blk);
  inner.end = Expr::var(blk) + Expr(block);
  inner.limit = end;
  Block body;
  body.push_back(std::move(*level.loop));
  fold_all(body, accs);
  *level.loop = make_loop(std::move(outer), std::move(body));
  // A tail after a blocked loop is a block of its own; inside a block it joins that block.
  if (level.tail != nullptr) fold_all(level.tail->body, accs);
}

void walk(Kernel& k, Block& b) {
  std::vector<int> sums;
  for (const Stmt& s : b) {
    if (s.kind != StmtKind::AccumulatorInit) continue;
    const Accumulator& a = k.accumulator(s.accumulator);
    if (a.type == ReductionType::Sum && a.dtype == DType::Float32) sums.push_back(a.id);
  }
  if (!sums.empty()) block_chain(k, b, sums);
  for (Stmt& s : b) {
    if (s.kind == StmtKind::Loop && s.loop->role == LoopRole::Reduction) continue;
    walk(k, s.body);
  }
}

}  // namespace

void block_float_sums(Kernel& kernel) {
  walk(kernel, kernel.body);
}

}  // namespace stax::kernel
