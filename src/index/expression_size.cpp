// How large an index expression is once written out as a tree (the form generated code
// prints and the simplifier walks): lowering bounds the index arithmetic it composes through
// chains of views with it. Shared subexpressions count once per use, as they are printed.
#include <cstdint>

#include "index/expr.h"
#include "index/node.h"

namespace stax::index {

namespace {

// Adds the divisions of `e` to `count`; stops descending once `count` passes `limit`, so
// the walk costs O(limit) even when the written-out tree is exponentially large.
void add_divisions(const Expr& e, int64_t limit, int64_t& count) {
  for (const detail::Term& t : e.node().terms) {
    for (const detail::Atom& a : t.factors) {
      if (count > limit) return;
      if (a.kind == detail::AtomKind::kVar) continue;
      ++count;
      add_divisions(a.arg, limit, count);
    }
  }
}

}  // namespace

int64_t count_divisions(const Expr& e, int64_t limit) {
  int64_t count = 0;
  add_divisions(e, limit, count);
  return count;
}

}  // namespace stax::index
