// The simplification pass: loops that run no iteration go (their declarations and results
// outside them stay: an empty sum is still 0), values nobody uses go, and every index is put
// in the canonical form of the index algebra over the kernel's ranges.
#include <map>
#include <set>
#include <vector>

#include "kernel/kernel_ir_visitor.h"
#include "kernel/passes.h"

namespace stax::kernel {

namespace {

bool runs_no_iteration(const Loop& l) {
  const auto b = l.begin.constant_value();
  const auto e = l.end.constant_value();
  return b && e && *e <= *b;
}

// The values something other than a definition uses, and everything they are computed from.
std::set<int> live_values(const Block& b) {
  std::map<int, const Let*> defs;
  std::vector<int> work;
  for_each_stmt(b, [&](const Stmt& s) {
    if (s.kind == StmtKind::Let) {
      defs[s.let.id] = &s.let;
      return;
    }
    for_each_value_use(s, [&](int id, ValueRole) {
      if (id >= 0) work.push_back(id);
    });
  });
  std::set<int> live;
  while (!work.empty()) {
    const int id = work.back();
    work.pop_back();
    if (!live.insert(id).second) continue;
    auto it = defs.find(id);
    if (it == defs.end()) continue;
    for_each_value_use(*it->second, [&](int a, ValueRole) { work.push_back(a); });
  }
  return live;
}

void drop_unused(Block& b, const std::set<int>& live) {
  Block kept;
  kept.reserve(b.size());
  for (Stmt& s : b) {
    if (s.kind == StmtKind::Let && !live.count(s.let.id)) continue;
    drop_unused(s.body, live);
    kept.push_back(std::move(s));
  }
  b = std::move(kept);
}

void clean(Block& b, const index::Domain& ranges) {
  Block kept;
  kept.reserve(b.size());
  for (Stmt& s : b) {
    if (s.kind == StmtKind::Loop && runs_no_iteration(*s.loop)) continue;
    map_indices(s, [&](index::Expr& e, IndexRole) { e = index::simplify(e, ranges); });
    clean(s.body, ranges);
    kept.push_back(std::move(s));
  }
  b = std::move(kept);
}

}  // namespace

void simplify(Kernel& k) {
  clean(k.body, k.ranges);
  drop_unused(k.body, live_values(k.body));
}

}  // namespace stax::kernel
