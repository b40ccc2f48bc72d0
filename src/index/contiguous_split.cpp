// contiguous_split: where to split a loop that indices reach through floor division and
// modulo, so that the inner part of the split reaches memory without either.
//
// A flattened view of a permuted tensor (attention heads merged back into a hidden dimension,
// a [b*s, h*d] operand read from [b, h, s, d]) indexes its loop c of extent n as
// k1*(c // d) + (c % d): no constant stride along c, so the loop can be neither vectorized
// nor walked contiguously, and every element pays a division. Writing c = d*hi + lo
// (hi < n/d, lo < d) turns the atoms into hi and lo: the inner loop lo has stride 1 again.
// The split point is the gcd of what each atom asks for: floordiv(k*c + rest, q) and
// mod(k*c + rest, q) ask for q / gcd(k, q) (the period of the atom's value along c).
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "index/expr.h"
#include "index/node.h"

namespace stax::index {

using detail::Atom;
using detail::AtomKind;
using detail::Term;

namespace {

// The coefficient of the plain term `var` in e (0 when e has no such term).
int64_t linear_coefficient(const Expr& e, const std::string& var) {
  for (const Term& t : e.node().terms) {
    if (t.factors.size() == 1 && t.factors[0].kind == AtomKind::kVar && t.factors[0].name == var) {
      return t.coeff;
    }
  }
  return 0;
}

// Folds into `period` (a gcd; 0 = none yet) the period of every floordiv/mod atom of e, at
// any depth, whose dividend is linear in var.
void gather_periods(const Expr& e, const std::string& var, int64_t& period, bool& found) {
  for (const Term& t : e.node().terms) {
    for (const Atom& a : t.factors) {
      if (a.kind == AtomKind::kVar) continue;
      gather_periods(a.arg, var, period, found);
      if (!depends_on(a.arg, var)) continue;
      found = true;
      const int64_t k = linear_coefficient(a.arg, var);
      if (k == 0) continue;  // var only inside a nested atom: that atom decides
      const auto divisor = a.constant_divisor();
      if (!divisor) {
        period = 1;  // a period that is a size symbol: no constant split exists
        continue;
      }
      period = std::gcd(period, *divisor / std::gcd(k < 0 ? -k : k, *divisor));
    }
  }
}

// Whether some floordiv/mod atom of e, at any depth, has a dividend depending on var.
bool var_in_atom(const Expr& e, const std::string& var) {
  for (const Term& t : e.node().terms) {
    for (const Atom& a : t.factors) {
      if (a.kind != AtomKind::kVar && (depends_on(a.arg, var) || var_in_atom(a.arg, var))) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::optional<int64_t> contiguous_split(const std::vector<Expr>& indices, const std::string& var,
                                        const Domain& ranges) {
  // The other loops' extents may be expressions over size symbols (issue 33); var's is a
  // constant, which the split divides.
  const auto it = ranges.extents.find(var);
  if (it == ranges.extents.end() || !it->second.is_constant()) return std::nullopt;
  const int64_t extent = it->second.constant_value().value();
  int64_t period = 0;
  bool found = false;
  for (const Expr& e : indices) gather_periods(e, var, period, found);
  if (!found || period <= 1 || period >= extent || extent % period != 0) return std::nullopt;

  // '%' never occurs in a loop variable of generated code: these names clash with nothing.
  const std::string hi = "%split_hi", lo = "%split_lo";
  Domain split_ranges = ranges;
  split_ranges.extents.erase(var);
  split_ranges.extents[hi] = Expr(extent / period);
  split_ranges.extents[lo] = Expr(period);
  const std::map<std::string, Expr> sub{{var, Expr(period) * Expr::var(hi) + Expr::var(lo)}};
  for (const Expr& e : indices) {
    if (var_in_atom(simplify(substitute(e, sub), split_ranges), lo)) return std::nullopt;
  }
  return period;
}

}  // namespace stax::index
