// The parallelize pass: the OpenMP work sharing of the chosen parallel depth. Every kernel
// function runs in one parallel region (cpp_codegen.cpp); a fused node of depth 0 runs on one
// thread of it.
#include "kernel/nest_structure.h"
#include "kernel/passes.h"

namespace stax::kernel {

namespace {

Stmt single(Block body) {
  Stmt s;
  s.kind = StmtKind::Single;
  s.body = std::move(body);
  return s;
}

// Work-shares `loop` and the collapse - 1 loops nested in it. Static: no loop here needs
// another policy, and a static schedule keeps the thread of each iteration independent of
// timing.
void share(Loop& loop, int collapse) {
  loop.kind = ForKind::Parallel;
  loop.collapse = collapse;
  loop.schedule = SchedulePolicy::Static;
}

}  // namespace

void parallelize(Kernel& k) {
  const KernelDecisions& d = k.decisions;
  if (d.split_reduction) return;  // split_reductions shared the loop already
  if (d.parallel_depth == 0) {
    Block body;
    Block rest;
    for (Stmt& s : k.body)
      (s.kind == StmtKind::Comment && body.empty() ? body : rest).push_back(std::move(s));
    body.push_back(single(std::move(rest)));
    k.body = std::move(body);
    return;
  }
  auto outer = outer_loops(k);
  if (!outer.empty()) {
    share(*outer[0]->loop, d.parallel_depth);
    return;
  }
  NestView v = nests(k).at(0);
  if (!d.parallel_vector_loop) {
    share(*v.pointwise.at(0)->loop, d.parallel_depth);
    return;
  }
  // The vectorized loop is the only loop: threads share its full vectors, one thread runs
  // the masked tail.
  for (Stmt& s : v.block->body) {
    if (s.kind == StmtKind::Loop) share(*s.loop, 1);
    if (s.kind == StmtKind::Block && s.vector_tail) {
      Block tail;
      tail.push_back(std::move(s));
      s = single(std::move(tail));
    }
  }
}

}  // namespace stax::kernel
