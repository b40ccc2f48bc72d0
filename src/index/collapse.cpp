// Loop-space normalization: collapse() merges and renames the loop variables of one index
// (dependence normalization), merge_loops() merges the loops of a whole nest for all of its
// indices at once. Both share the merge test below.
//
// Extents may be expressions over size symbols (issue 33): a loop pair merges when both
// extents are proved at least 1 and the inner one may divide (a constant or a product of
// sizes); the merged extent is their product.
//
// Merge test for adjacent loops a (outer) and b (inner, extent nb): substitute a = c // nb,
// b = c % nb for a fresh c of extent na*nb, simplify, and accept when the result has no more
// floordiv/mod atoms involving c than the index had involving a or b. For an index without
// such atoms that means c appears inside none (128*a + b -> c is accepted; a alone -> c // 128
// and the transpose 64*b + a -> 64*(c % 128) + c // 128 are refused); for an index such as
// (128*a + b) // 2 the result c // 2 is accepted as well. Recovering a or b on their own
// costs an extra atom, so merges that need them are refused. Merging runs from the innermost
// pair outwards, so a merged loop can merge again with the next outer one.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "index/expr.h"
#include "index/node.h"

namespace stax::index {

using detail::Atom;
using detail::AtomKind;
using detail::Term;

namespace {

struct Loop {
  std::string name;
  Expr extent;
  bool used = true;  // collapse only merges used loops and drops unused ones at the end
};

struct MergeState {
  std::vector<Loop> loops;    // current loops, outermost first
  std::vector<Expr> indices;  // indices in the current loop variables
  // Values the body computes from the loop variables (a relative position j - i), in the
  // current loop variables: held to the merge test only where the inner loop's extent is
  // known at run time (below).
  std::vector<Expr> values;
  std::map<std::string, Expr> old_expr;  // original loop variable -> expression in current ones
  std::set<std::string> taken;           // names that fresh variables must avoid
  SymbolTable symbols;                   // the size symbols extents may use
  int fresh_counter = 0;
};

// Number of floordiv/mod atoms in e, at any depth, whose argument involves a or b.
int count_atoms(const Expr& e, const std::string& a, const std::string& b) {
  int n = 0;
  for (const Term& t : e.node().terms) {
    for (const Atom& f : t.factors) {
      if (f.kind == AtomKind::kVar) continue;
      if (depends_on(f.arg, a) || depends_on(f.arg, b)) ++n;
      n += count_atoms(f.arg, a, b);
    }
  }
  return n;
}

Domain domain_of(const std::vector<Loop>& loops, const SymbolTable& symbols) {
  std::map<std::string, Expr> extents;
  for (const Loop& l : loops) extents[l.name] = l.extent;
  return Domain(std::move(extents), symbols);
}

// A loop that may run no iteration (an extent below 1, or an expression not known to be at
// least 1) is never merged: its extent is not a divisor.
bool mergeable_extent(const Expr& extent, const SymbolTable& symbols) {
  if (!is_divisor(extent)) return false;
  if (extent.is_constant()) return true;
  return is_nonnegative(extent - Expr(1), Domain({}, symbols)) == Truth::kProved;
}

std::string fresh_name(MergeState& st) {
  // '%' cannot occur in the identifiers of generated code, so these never meet user names.
  std::string name;
  do {
    name = "%merge" + std::to_string(st.fresh_counter++);
  } while (st.taken.count(name) != 0);
  st.taken.insert(name);
  return name;
}

// Merges adjacent loops innermost pair first, whenever `allowed` accepts the pair and every
// index passes the merge test.
void merge_adjacent(MergeState& st, const std::function<bool(const Loop&, const Loop&)>& allowed) {
  for (size_t p = st.loops.size() < 2 ? 0 : st.loops.size() - 1; p-- > 0;) {
    const Loop a = st.loops[p];
    const Loop b = st.loops[p + 1];
    if (!mergeable_extent(a.extent, st.symbols) || !mergeable_extent(b.extent, st.symbols) ||
        !allowed(a, b)) {
      continue;
    }
    Expr extent;
    auto na = a.extent.constant_value();
    auto nb = b.extent.constant_value();
    if (na && nb) {
      int64_t product = 0;
      if (__builtin_mul_overflow(*na, *nb, &product)) continue;
      extent = Expr(product);
    } else {
      try {
        extent = a.extent * b.extent;
      } catch (const std::overflow_error&) {
        continue;
      }
    }
    std::string c = fresh_name(st);
    Expr cv = Expr::var(c);
    std::map<std::string, Expr> sub{{a.name, floordiv(cv, b.extent)}, {b.name, mod(cv, b.extent)}};
    std::vector<Loop> loops = st.loops;
    loops[p] = Loop{c, extent, a.used || b.used};
    loops.erase(loops.begin() + static_cast<std::ptrdiff_t>(p) + 1);
    const Domain ranges = domain_of(loops, st.symbols);
    // The merged form of each expression of `from`, or nullopt where one fails the test.
    auto merged_all = [&](const std::vector<Expr>& from) -> std::optional<std::vector<Expr>> {
      std::vector<Expr> out;
      for (const Expr& idx : from) {
        if (!depends_on(idx, a.name) && !depends_on(idx, b.name)) {
          out.push_back(idx);
          continue;
        }
        Expr merged = simplify(substitute(idx, sub), ranges);
        if (count_atoms(merged, c, c) > count_atoms(idx, a.name, b.name)) return std::nullopt;
        out.push_back(std::move(merged));
      }
      return out;
    };
    std::optional<std::vector<Expr>> indices = merged_all(st.indices);
    if (!indices) continue;
    // A value over a merge with an inner extent known at run time would be computed with a
    // division by a size symbol (c % s0 for j), which no vector form takes: such loops stay
    // apart. Over a constant inner extent the division is by a constant, which the vector
    // forms split (contiguous_split.cpp); the merge is then decided by the indices alone.
    std::optional<std::vector<Expr>> values = st.values;
    if (!nb) {
      values = merged_all(st.values);
      if (!values) continue;
    } else {
      for (Expr& v : *values) {
        if (depends_on(v, a.name) || depends_on(v, b.name))
          v = simplify(substitute(v, sub), ranges);
      }
    }
    st.loops = std::move(loops);
    st.indices = std::move(*indices);
    st.values = std::move(*values);
    for (auto& [old, expr] : st.old_expr) {
      if (depends_on(expr, a.name) || depends_on(expr, b.name)) expr = substitute(expr, sub);
    }
  }
}

// Renames the surviving loops to prefix0, prefix1, ... and rewrites everything in them.
// `outside` holds the free variables of the indices that are not loop variables.
std::map<std::string, Expr> rename_loops(MergeState& st, const std::string& prefix,
                                         const std::set<std::string>& outside) {
  std::map<std::string, Expr> rename;
  for (size_t i = 0; i < st.loops.size(); ++i) {
    std::string name = prefix + std::to_string(i);
    if (outside.count(name) != 0) {
      throw std::invalid_argument("stax::index: new loop variable " + name +
                                  " clashes with a free variable of an index");
    }
    rename[st.loops[i].name] = Expr::var(name);
    st.loops[i].name = name;
  }
  return rename;
}

std::set<std::string> outside_vars(const std::vector<Expr>& indices,
                                   const std::vector<LoopVar>& loop_vars) {
  std::set<std::string> out;
  for (const Expr& e : indices) {
    for (const std::string& v : free_vars(e)) out.insert(v);
  }
  for (const LoopVar& l : loop_vars) out.erase(l.name);
  return out;
}

Domain domain_of(const std::vector<LoopVar>& loop_vars, const SymbolTable& symbols) {
  std::map<std::string, Expr> extents;
  for (const LoopVar& l : loop_vars) extents[l.name] = l.extent;
  return Domain(std::move(extents), symbols);
}

std::vector<LoopVar> as_loop_vars(const std::vector<Loop>& loops) {
  std::vector<LoopVar> out;
  out.reserve(loops.size());
  for (const Loop& l : loops) out.push_back({l.name, l.extent});
  return out;
}

}  // namespace

CollapseResult collapse_with_mapping(const Expr& e, const std::vector<LoopVar>& loop_vars,
                                     const std::string& prefix, const SymbolTable& symbols) {
  std::set<std::string> outside = outside_vars({e}, loop_vars);
  MergeState st;
  st.symbols = symbols;
  st.indices = {simplify(e, domain_of(loop_vars, symbols))};
  st.taken = free_vars(e);
  CollapseResult result;
  // Loops of extent 1 do not affect the iteration order: drop them (the variable is 0).
  for (const LoopVar& l : loop_vars) {
    st.taken.insert(l.name);
    if (l.extent == Expr(1)) {
      result.old_to_new[l.name] = Expr();
      continue;
    }
    bool used = depends_on(st.indices[0], l.name);
    st.loops.push_back(Loop{l.name, l.extent, used});
    if (used) st.old_expr[l.name] = Expr::var(l.name);
  }
  // An unused loop between two used ones separates them: only merge pairs of used loops.
  merge_adjacent(st, [](const Loop& a, const Loop& b) { return a.used && b.used; });
  std::vector<Loop> survivors;
  for (const Loop& l : st.loops) {
    if (l.used) survivors.push_back(l);
  }
  st.loops = std::move(survivors);
  auto rename = rename_loops(st, prefix, outside);
  const Domain ranges = domain_of(st.loops, symbols);
  result.collapsed.index = simplify(substitute(st.indices[0], rename), ranges);
  result.collapsed.vars = as_loop_vars(st.loops);
  for (auto& [old, expr] : st.old_expr) {
    result.old_to_new[old] = simplify(substitute(expr, rename), ranges);
  }
  return result;
}

CollapsedIndex collapse(const Expr& e, const std::vector<LoopVar>& loop_vars,
                        const std::string& prefix, const SymbolTable& symbols) {
  return collapse_with_mapping(e, loop_vars, prefix, symbols).collapsed;
}

MergedLoops merge_loops(const std::vector<LoopVar>& loop_vars, const std::vector<Expr>& indices,
                        const std::string& prefix, const SymbolTable& symbols,
                        const std::vector<Expr>& values) {
  std::set<std::string> outside = outside_vars(indices, loop_vars);
  const Domain full = domain_of(loop_vars, symbols);
  MergeState st;
  st.symbols = symbols;
  for (const Expr& idx : indices) {
    st.indices.push_back(simplify(idx, full));
    for (const std::string& v : free_vars(idx)) st.taken.insert(v);
  }
  for (const Expr& v : values) {
    st.values.push_back(simplify(v, full));
    for (const std::string& name : free_vars(v)) st.taken.insert(name);
  }
  MergedLoops result;
  for (const LoopVar& l : loop_vars) {
    st.taken.insert(l.name);
    if (l.extent == Expr(1)) {
      result.old_to_new[l.name] = Expr();
      continue;
    }
    st.loops.push_back(Loop{l.name, l.extent, true});
    st.old_expr[l.name] = Expr::var(l.name);
  }
  merge_adjacent(st, [](const Loop&, const Loop&) { return true; });
  auto rename = rename_loops(st, prefix, outside);
  const Domain ranges = domain_of(st.loops, symbols);
  result.vars = as_loop_vars(st.loops);
  for (auto& [old, expr] : st.old_expr) {
    result.old_to_new[old] = simplify(substitute(expr, rename), ranges);
  }
  return result;
}

}  // namespace stax::index
