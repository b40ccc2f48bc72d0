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
    outer[0]->loop->parallel_collapse = d.parallel_depth;
    return;
  }
  NestView v = nests(k).at(0);
  if (!d.parallel_vector_loop) {
    v.pointwise.at(0)->loop->parallel_collapse = d.parallel_depth;
    return;
  }
  // The vectorized loop is the only loop: threads share its full vectors, one thread runs
  // the masked tail.
  for (Stmt& s : v.block->body) {
    if (s.kind == StmtKind::Loop) s.loop->parallel_collapse = 1;
    if (s.kind == StmtKind::Block && s.vector_tail) {
      Block tail;
      tail.push_back(std::move(s));
      s = single(std::move(tail));
    }
  }
}

}  // namespace stax::kernel
