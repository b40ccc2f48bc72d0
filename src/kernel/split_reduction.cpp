// The split-reduction pass: a reduction with one output shares its outermost reduction loop
// among the threads (its blocks, when it is the blocked one). Each thread stores its partial;
// after a barrier one thread combines the partials of the team in thread order, so the result
// does not depend on which thread ran which iterations, only on the team size.
#include "kernel/nest_structure.h"
#include "kernel/passes.h"

namespace stax::kernel {

void split_reductions(Kernel& k) {
  if (!k.decisions.split_reduction) return;
  auto views = nests(k);
  NestView& v = views.at(0);
  Block& b = *v.inner;
  std::vector<int> accs;
  Block kept;
  Block after;
  bool past_loops = false;
  for (Stmt& s : b) {
    const bool loop = s.kind == StmtKind::Loop && s.loop->role == LoopRole::Reduction;
    const bool tail = s.kind == StmtKind::Block && s.vector_tail;
    if (s.kind == StmtKind::AccumulatorInit) {
      accs.push_back(s.accumulator);
      k.accumulator(s.accumulator).split = true;
    }
    if (loop) {
      s.loop->parallel_collapse = 1;
      s.loop->nowait = true;
    }
    if (tail) {
      // The vector loop is the only one: one thread adds the tail into its accumulators.
      Stmt single;
      single.kind = StmtKind::Single;
      single.nowait = true;
      single.body.push_back(std::move(s));
      kept.push_back(std::move(single));
      past_loops = true;
      continue;
    }
    if (past_loops && !loop) {
      after.push_back(std::move(s));
      continue;
    }
    past_loops = past_loops || loop;
    kept.push_back(std::move(s));
  }
  for (int a : accs) {
    Stmt p;
    p.kind = StmtKind::StorePartial;
    p.accumulator = a;
    kept.push_back(std::move(p));
  }
  // The results are the combined partials.
  for_each_stmt(after, [](Stmt& s) {
    if (s.kind == StmtKind::Let && s.let.kind == LetKind::AccumulatorResult) {
      s.let.kind = LetKind::CombinePartials;
    }
  });
  b = std::move(kept);
  Block& body = nests_body(k);
  for (size_t i = 0; i < body.size(); ++i) {
    if (&body[i] != v.block) continue;
    Stmt barrier;
    barrier.kind = StmtKind::Barrier;
    Stmt single;
    single.kind = StmtKind::Single;
    single.body = std::move(after);
    body.insert(body.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(single));
    body.insert(body.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(barrier));
    break;
  }
}

}  // namespace stax::kernel
