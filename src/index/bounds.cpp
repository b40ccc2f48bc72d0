// Interval bounds of index expressions within a domain (interval arithmetic over the canonical
// polynomial form; loop variables over [0, extent - 1], size symbols within their facts), and
// the sign proofs that need more than intervals: a loop variable compared with its own
// symbolic extent (is_nonnegative). Used by simplify() and to_cpp(), and exported.
#include <algorithm>
#include <optional>
#include <utility>

#include "index/expr.h"
#include "index/internal.h"
#include "index/node.h"

namespace stax::index {

using detail::Atom;
using detail::AtomKind;
using detail::Term;

namespace {

// Intervals are computed in 128-bit arithmetic; a result outside int64_t is reported unknown.
using Wide = __int128;

struct WideInterval {
  Wide lo;
  Wide hi;
};

constexpr Wide kMax = static_cast<Wide>(INT64_MAX);
constexpr Wide kMin = static_cast<Wide>(INT64_MIN);

bool fits(const WideInterval& w) {
  return w.lo >= kMin && w.hi <= kMax;
}

WideInterval widen(const Interval& i) {
  return {i.lo, i.hi};
}

std::optional<WideInterval> mul(const WideInterval& a, const WideInterval& b) {
  Wide p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  WideInterval r{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
  if (!fits(r)) return std::nullopt;
  return r;
}

std::optional<Interval> var_bounds(const std::string& name, const Domain& domain) {
  if (auto it = domain.symbols.find(name); it != domain.symbols.end()) {
    return Interval{it->second.lo, it->second.hi};
  }
  auto it = domain.extents.find(name);
  if (it == domain.extents.end()) return std::nullopt;
  if (auto n = it->second.constant_value()) {
    if (*n < 1) return std::nullopt;
    return Interval{0, *n - 1};
  }
  // A loop over a symbolic extent: i <= extent - 1 <= the extent's largest value - 1. An
  // extent that may be 0 runs no iteration then, so the bound is vacuous for those values.
  auto e = detail::partial_bounds(it->second, domain);
  if (!e || e->hi < 1) return std::nullopt;
  return Interval{0, e->hi - 1};
}

std::optional<Interval> atom_bounds(const Atom& a, const Domain& domain) {
  if (a.kind == AtomKind::kVar) return var_bounds(a.name, domain);
  auto d = detail::partial_bounds(a.divisor, domain);
  if (!d) return std::nullopt;
  // A divisor is positive wherever the expression is used (floordiv's contract).
  const int64_t dlo = std::max<int64_t>(d->lo, 1);
  const int64_t dhi = std::max<int64_t>(d->hi, 1);
  auto b = detail::partial_bounds(a.arg, domain);
  if (a.kind == AtomKind::kFloorDiv) {
    if (!b) return std::nullopt;
    // floor(x / d) is monotone in x, and for fixed x monotone in d: the extremes lie at the
    // corners.
    int64_t v[4] = {detail::floordiv_int(b->lo, dlo), detail::floordiv_int(b->lo, dhi),
                    detail::floordiv_int(b->hi, dlo), detail::floordiv_int(b->hi, dhi)};
    return Interval{*std::min_element(v, v + 4), *std::max_element(v, v + 4)};
  }
  if (b && dlo == dhi) {
    int64_t m = detail::floordiv_int(b->lo, dlo);
    if (m == detail::floordiv_int(b->hi, dlo)) {
      // The whole range lies in one period: mod subtracts the same multiple everywhere.
      return Interval{detail::mod_int(b->lo, dlo), detail::mod_int(b->hi, dlo)};
    }
  }
  if (b && b->lo >= 0) return Interval{0, std::min(b->hi, dhi - 1)};
  return Interval{0, dhi - 1};
}

// Symbolic extremes: expressions over size symbols only between which e lies for every point
// of the loops, found term by term for terms linear in one loop-dependent atom whose
// multiplier has a known sign. Nullopt when some term is beyond that.
struct Extremes {
  Expr lo;
  Expr hi;
};

bool only_symbols(const Expr& e, const Domain& domain);

std::optional<Extremes> symbolic_extremes(const Expr& e, const Domain& domain);

// The symbolic range of one loop-dependent atom.
std::optional<Extremes> atom_extremes(const Atom& a, const Domain& domain) {
  if (a.kind == AtomKind::kVar) {
    auto it = domain.extents.find(a.name);
    if (it == domain.extents.end() || !only_symbols(it->second, domain)) return std::nullopt;
    return Extremes{Expr(0), it->second - Expr(1)};
  }
  if (!only_symbols(a.divisor, domain)) return std::nullopt;
  if (a.kind == AtomKind::kMod) return Extremes{Expr(0), a.divisor - Expr(1)};
  auto x = symbolic_extremes(a.arg, domain);
  if (!x) return std::nullopt;
  return Extremes{floordiv(x->lo, a.divisor), floordiv(x->hi, a.divisor)};
}

bool only_symbols(const Expr& e, const Domain& domain) {
  for (const std::string& v : free_vars(e)) {
    if (domain.symbols.count(v) == 0) return false;
  }
  return true;
}

std::optional<Extremes> symbolic_extremes(const Expr& e, const Domain& domain) {
  const detail::ExprNode& n = e.node();
  Expr lo(n.constant);
  Expr hi(n.constant);
  for (const Term& t : n.terms) {
    std::vector<Atom> sizes;
    const Atom* loop_atom = nullptr;
    for (const Atom& a : t.factors) {
      if (a.kind == AtomKind::kVar && domain.symbols.count(a.name) != 0) {
        sizes.push_back(a);
      } else if (loop_atom == nullptr) {
        loop_atom = &a;
      } else {
        return std::nullopt;  // a product of two loop-dependent atoms
      }
    }
    Expr multiplier(t.coeff);
    for (const Atom& s : sizes) multiplier = multiplier * detail::atom_expr(s);
    if (loop_atom == nullptr) {
      lo = lo + multiplier;
      hi = hi + multiplier;
      continue;
    }
    auto range = atom_extremes(*loop_atom, domain);
    if (!range) return std::nullopt;
    // Sizes are >= 0, so the multiplier has the coefficient's sign (or is 0).
    if (t.coeff > 0) {
      lo = lo + multiplier * range->lo;
      hi = hi + multiplier * range->hi;
    } else {
      lo = lo + multiplier * range->hi;
      hi = hi + multiplier * range->lo;
    }
  }
  return Extremes{lo, hi};
}

}  // namespace

namespace detail {

std::optional<Interval> partial_bounds(const Expr& e, const Domain& domain) {
  const ExprNode& n = e.node();
  WideInterval sum{n.constant, n.constant};
  for (const Term& t : n.terms) {
    WideInterval p{t.coeff, t.coeff};
    for (const Atom& a : t.factors) {
      auto b = atom_bounds(a, domain);
      if (!b) return std::nullopt;
      auto q = mul(p, widen(*b));
      if (!q) return std::nullopt;
      p = *q;
    }
    sum.lo += p.lo;
    sum.hi += p.hi;
    if (!fits(sum)) return std::nullopt;
  }
  return Interval{static_cast<int64_t>(sum.lo), static_cast<int64_t>(sum.hi)};
}

}  // namespace detail

std::optional<Interval> bounds(const Expr& e, const Domain& domain) {
  for (const std::string& v : free_vars(e)) {
    if (domain.symbols.count(v) != 0) continue;
    auto it = domain.extents.find(v);
    if (it == domain.extents.end()) return std::nullopt;
    if (auto n = it->second.constant_value(); n && *n < 1) return std::nullopt;
  }
  return detail::partial_bounds(e, domain);
}

Truth is_nonnegative(const Expr& e, const Domain& domain) {
  // The symbolic step simplifies, and simplifying by a symbolic divisor asks for signs again;
  // past a few levels the answer is "unknown" rather than a deep recursion.
  constexpr int kMaxDepth = 4;
  thread_local int depth = 0;
  if (depth >= kMaxDepth) return Truth::kUnknown;
  struct Nested {
    Nested() { ++depth; }
    ~Nested() { --depth; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;
  } nested;
  if (auto b = bounds(e, domain)) {
    if (b->lo >= 0) return Truth::kProved;
    if (b->hi < 0) return Truth::kRefuted;
  }
  // Eliminate the loops symbolically, then bound what is left over the symbols alone (the
  // loops' terms may cancel against the symbols first: s0 - 1 - i0 over i0 < s0 is 0).
  if (auto x = symbolic_extremes(e, domain)) {
    Expr lo = simplify(x->lo, domain);
    if (auto b = bounds(lo, domain); b && b->lo >= 0) return Truth::kProved;
  }
  // Signs alone: a sum of terms with nonnegative coefficients over nonnegative factors, plus a
  // nonnegative constant, is nonnegative even where its interval's upper end overflows int64
  // (768*s27*s52 over symbols up to 2^31 - 1: arange's count in a dropout mask).
  const detail::ExprNode& n = e.node();
  bool signs_prove = n.constant >= 0;
  for (const Term& t : n.terms) {
    if (!signs_prove) break;
    signs_prove = t.coeff >= 0;
    for (const Atom& a : t.factors) {
      const auto b = atom_bounds(a, domain);
      signs_prove = signs_prove && b && b->lo >= 0;
    }
  }
  if (signs_prove) return Truth::kProved;
  return Truth::kUnknown;
}

}  // namespace stax::index
