// The split-reduction pass: a reduction with one output shares its outermost reduction loop
// among the threads (its blocks, when it is the blocked one). Each thread stores its partial;
// after a barrier one thread combines the partials of the team in thread order, so the result
// does not depend on which thread ran which iterations, only on the team size. The masked
// tail of the vector loop belongs to the thread that runs the loop's last iteration, after
// it: the tail's elements come last in that thread's partial, as they come last in the
// reduction, so the result is the same in every run and arg-reductions keep the first index.
#include <algorithm>
#include <optional>

#include "kernel/nest_structure.h"
#include "kernel/passes.h"

namespace stax::kernel {

namespace {

using index::Expr;

// Appends `tail` to the body of `loop`, run in its last iteration only: a loop over
// `<var>_last` from the loop's end E while below min(var + step + 1, E + 1) has one
// iteration exactly when var + step >= E. False when the loop's bounds are not constants or
// it has no iteration at all.
bool append_to_last_iteration(Kernel& k, Stmt& loop, const Stmt& tail) {
  const Loop& l = *loop.loop;
  const auto begin = l.begin.constant_value();
  auto end = l.end.constant_value();
  if (end && l.limit) end = std::min(*end, *l.limit);
  if (!begin || !end || *begin >= *end) return false;
  Loop last;
  last.var = l.var + "_last";
  last.begin = Expr(*end);
  last.end = Expr::var(l.var) + Expr(l.step + 1);
  last.limit = *end + 1;
  last.role = LoopRole::Other;
  last.nest = l.nest;
  k.ranges.extents[last.var] = *end + 1;
  Block body;
  body.push_back(make_comment("the masked tail, after the last iteration's elements"));
  body.push_back(tail);
  loop.body.push_back(make_loop(std::move(last), std::move(body)));
  return true;
}

}  // namespace

void split_reductions(Kernel& k) {
  if (!k.decisions.split_reduction) return;
  auto views = nests(k);
  NestView& v = views.at(0);
  Block& b = *v.inner;
  std::vector<int> accs;
  Block kept;
  Block after;
  bool past_loops = false;
  std::optional<size_t> shared_loop;  // where the work-shared reduction loop is in `kept`
  for (Stmt& s : b) {
    const bool loop = s.kind == StmtKind::Loop && s.loop->role == LoopRole::Reduction;
    const bool tail = s.kind == StmtKind::Block && s.vector_tail;
    if (s.kind == StmtKind::AccumulatorInit) {
      accs.push_back(s.accumulator);
      k.accumulator(s.accumulator).split = true;
    }
    if (loop) {
      // Static: the partials are combined in thread order (SchedulePolicy::Static).
      s.loop->kind = ForKind::Parallel;
      s.loop->collapse = 1;
      s.loop->schedule = SchedulePolicy::Static;
      s.loop->nowait = true;
    }
    if (tail) {
      if (shared_loop && *shared_loop + 1 == kept.size() &&
          append_to_last_iteration(k, kept.back(), s)) {
        past_loops = true;
        continue;
      }
      // No full iteration to follow: the tail is all there is, one thread adds it.
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
    if (loop) shared_loop = kept.size() - 1;
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
