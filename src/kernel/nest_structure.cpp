// Navigation of the builder's layout of a fused node.
#include "kernel/nest_structure.h"

namespace stax::kernel {

Stmt* find_loop(Block& block, LoopRole role) {
  for (Stmt& s : block) {
    if (s.kind == StmtKind::Loop && s.loop->role == role) return &s;
  }
  return nullptr;
}

std::vector<Stmt*> outer_loops(Kernel& k) {
  std::vector<Stmt*> out;
  Block* b = &k.body;
  while (Stmt* l = find_loop(*b, LoopRole::Outer)) {
    out.push_back(l);
    b = &l->body;
  }
  return out;
}

Block& nests_body(Kernel& k) {
  auto outer = outer_loops(k);
  return outer.empty() ? k.body : outer.back()->body;
}

std::vector<NestView> nests(Kernel& k) {
  std::vector<NestView> out;
  for (Stmt& s : nests_body(k)) {
    if (s.kind != StmtKind::Block || s.nest < 0) continue;
    NestView v;
    v.block = &s;
    Block* b = &s.body;
    while (Stmt* l = find_loop(*b, LoopRole::Pointwise)) {
      v.pointwise.push_back(l);
      b = &l->body;
    }
    v.inner = b;
    Block* r = b;
    while (Stmt* l = find_loop(*r, LoopRole::Reduction)) {
      v.reduction.push_back(l);
      r = &l->body;
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace stax::kernel
