// Interval bounds of index expressions over loop ranges [0, n-1] (interval arithmetic over the
// canonical polynomial form). Used by simplify() and to_cpp(), and exported as bounds().
#include <algorithm>
#include <optional>

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

std::optional<Interval> atom_bounds(const Atom& a, const RangeMap& ranges) {
  switch (a.kind) {
    case AtomKind::kVar: {
      auto it = ranges.find(a.name);
      if (it == ranges.end() || it->second < 1) return std::nullopt;
      return Interval{0, it->second - 1};
    }
    case AtomKind::kFloorDiv: {
      auto b = detail::partial_bounds(a.arg, ranges);
      if (!b) return std::nullopt;
      return Interval{detail::floordiv_int(b->lo, a.divisor),
                      detail::floordiv_int(b->hi, a.divisor)};
    }
    case AtomKind::kMod: {
      auto b = detail::partial_bounds(a.arg, ranges);
      if (b) {
        int64_t m = detail::floordiv_int(b->lo, a.divisor);
        if (m == detail::floordiv_int(b->hi, a.divisor)) {
          // The whole range lies in one period: mod subtracts the same multiple everywhere.
          return Interval{detail::mod_int(b->lo, a.divisor), detail::mod_int(b->hi, a.divisor)};
        }
      }
      return Interval{0, a.divisor - 1};
    }
  }
  return std::nullopt;
}

}  // namespace

namespace detail {

std::optional<Interval> partial_bounds(const Expr& e, const RangeMap& ranges) {
  const ExprNode& n = e.node();
  WideInterval sum{n.constant, n.constant};
  for (const Term& t : n.terms) {
    WideInterval p{t.coeff, t.coeff};
    for (const Atom& a : t.factors) {
      auto b = atom_bounds(a, ranges);
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

std::optional<Interval> bounds(const Expr& e, const RangeMap& ranges) {
  for (const std::string& v : free_vars(e)) {
    auto it = ranges.find(v);
    if (it == ranges.end() || it->second < 1) return std::nullopt;
  }
  return detail::partial_bounds(e, ranges);
}

}  // namespace stax::index
