// Range-aware simplification of index expressions (simplify) and access strides (stride).
//
// simplify() repeats a bottom-up pass until nothing changes. A pass rebuilds every term from
// its simplified atoms and then recombines floordiv/mod pairs:
//   - a variable of extent 1 becomes 0;
//   - floordiv(a, c): a = c*q + r (terms whose coefficient c divides, constant split too) gives
//     q + floordiv(r, c); then on r: common-factor reduction g*r'/(g*c') -> r'/c'; constant when
//     the bounds of r lie within one multiple of c; floordiv(floordiv(x, d) + k, c) ->
//     floordiv(x + k*d, d*c); floordiv(mod(x, d), c) -> mod(floordiv(x, c), d/c) when c | d;
//     r = g*h + l with g | c and 0 <= l < g gives floordiv(h, c/g);
//   - mod(a, c): the same split drops c*q; then g*mod(r', c') for a common factor; r - m*c when
//     the bounds of r lie within [m*c, m*c + c - 1]; mod(mod(x, d), c) -> mod(x, c) when c | d;
//     r = g*h + l as above gives g*mod(h, c/g) + l;
//   - recombination: k*c*floordiv(x, c) + k*mod(x, c) -> k*x and
//     k*c*mod(floordiv(x, c), c2) + k*mod(x, c) -> k*mod(x, c*c2) (also times a common monomial);
//   - by a symbolic divisor d = c*s0*s1... (issue 33): the terms that d divides go to the
//     quotient; the rest r gives floordiv 0 and mod r when 0 <= r <= d - 1 is proved
//     (is_nonnegative, which compares loop variables with their symbolic extents);
//     floordiv(floordiv(x, d1), d) -> floordiv(x, d1*d); d*floordiv(x, d) + mod(x, d) -> x.
// A size symbol whose facts pin one value becomes that value.
// Every rule is an identity over the integers except those that use bounds, which hold for all
// points within the ranges, so the value never changes there.
#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "index/expr.h"
#include "index/internal.h"
#include "index/node.h"

namespace stax::index {

using detail::Atom;
using detail::AtomKind;
using detail::ExprNode;
using detail::Term;

namespace {

constexpr int kMaxPasses = 32;
constexpr int kMaxRecombinations = 64;

uint64_t magnitude(int64_t v) {
  return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

// gcd of c (> 0) with every coefficient and the constant of e.
int64_t content_gcd(const Expr& e, int64_t c) {
  uint64_t g = static_cast<uint64_t>(c);
  for (const Term& t : e.node().terms) g = std::gcd(g, magnitude(t.coeff));
  g = std::gcd(g, magnitude(e.node().constant));
  return static_cast<int64_t>(g);
}

// e / g for a g dividing every coefficient and the constant.
Expr divide_exact(const Expr& e, int64_t g) {
  std::vector<Term> terms = e.node().terms;
  for (Term& t : terms) t.coeff /= g;
  return detail::make_expr(e.node().constant / g, std::move(terms));
}

Expr term_expr(int64_t coeff, std::vector<Atom> factors) {
  std::vector<Term> terms(1);
  terms[0].coeff = coeff;
  terms[0].factors = std::move(factors);
  return detail::make_expr(0, std::move(terms));
}

// e = c * quotient + rest, where quotient takes the terms whose coefficient c divides and
// floor(constant / c); rest keeps the other terms and constant mod c (in [0, c)).
struct Split {
  Expr quotient;
  Expr rest;
};

Split split(const Expr& e, int64_t c) {
  std::vector<Term> q;
  std::vector<Term> r;
  for (const Term& t : e.node().terms) {
    if (t.coeff % c == 0) {
      q.push_back({t.coeff / c, t.factors});
    } else {
      r.push_back(t);
    }
  }
  int64_t k = e.node().constant;
  return {detail::make_expr(detail::floordiv_int(k, c), std::move(q)),
          detail::make_expr(detail::mod_int(k, c), std::move(r))};
}

// True when every term of s occurs in e with the same coefficient (s has at least one term).
bool contains_terms(const Expr& e, const Expr& s) {
  const auto& et = e.node().terms;
  if (s.node().terms.empty()) return false;
  for (const Term& t : s.node().terms) {
    auto it = std::lower_bound(et.begin(), et.end(), t, [](const Term& a, const Term& b) {
      return detail::compare_factors(a.factors, b.factors) < 0;
    });
    if (it == et.end() || detail::compare_factors(it->factors, t.factors) != 0 ||
        it->coeff != t.coeff) {
      return false;
    }
  }
  return true;
}

bool atom_less(const Atom& a, const Atom& b) {
  return detail::compare_atoms(a, b) < 0;
}

// a = d*quotient + rest for a symbolic divisor d = c*M (M a monomial of size symbols): the
// quotient takes the terms whose coefficient c divides and whose monomial contains M.
Split split_by_monomial(const Expr& a, const Expr& d) {
  const Term& dt = d.node().terms[0];
  std::vector<Term> q;
  std::vector<Term> r;
  for (const Term& t : a.node().terms) {
    if (t.coeff % dt.coeff == 0 && std::includes(t.factors.begin(), t.factors.end(),
                                                 dt.factors.begin(), dt.factors.end(), atom_less)) {
      std::vector<Atom> left;
      std::set_difference(t.factors.begin(), t.factors.end(), dt.factors.begin(), dt.factors.end(),
                          std::back_inserter(left), atom_less);
      q.push_back({t.coeff / dt.coeff, std::move(left)});
    } else {
      r.push_back(t);
    }
  }
  return {detail::make_expr(0, std::move(q)), detail::make_expr(a.node().constant, std::move(r))};
}

class Simplifier {
 public:
  explicit Simplifier(const Domain& domain) : domain_(domain) {}

  // One bottom-up pass (see the file comment).
  Expr pass(const Expr& e) {
    if (e.is_constant()) return e;
    auto it = pass_memo_.find(e);
    if (it != pass_memo_.end()) return it->second;
    const ExprNode& n = e.node();
    Expr sum(n.constant);
    for (const Term& t : n.terms) {
      Expr p(t.coeff);
      for (const Atom& a : t.factors) p = p * atom(a);
      sum = sum + p;
    }
    Expr result = recombine(sum);
    pass_memo_.emplace(e, result);
    return result;
  }

 private:
  std::optional<Interval> bounds_of(const Expr& e) const {
    return detail::partial_bounds(e, domain_);
  }

  Expr atom(const Atom& a) {
    switch (a.kind) {
      case AtomKind::kVar: {
        auto it = domain_.extents.find(a.name);
        if (it != domain_.extents.end() && it->second == Expr(1)) return Expr();
        auto sym = domain_.symbols.find(a.name);
        if (sym != domain_.symbols.end() && sym->second.lo == sym->second.hi) {
          return Expr(sym->second.lo);
        }
        return Expr::var(a.name);
      }
      case AtomKind::kFloorDiv:
        return fdiv_any(pass(a.arg), pass(a.divisor));
      case AtomKind::kMod:
        return fmod_any(pass(a.arg), pass(a.divisor));
    }
    return Expr();
  }

  Expr fdiv_any(const Expr& a, const Expr& d) {
    if (auto c = d.constant_value()) return fdiv(a, *c);
    if (a.is_constant() && a.constant_value() == 0) return Expr();
    Split s = split_by_monomial(a, d);
    return s.quotient + fdiv_rest_by_symbols(s.rest, d);
  }

  Expr fmod_any(const Expr& a, const Expr& d) {
    if (auto c = d.constant_value()) return fmod(a, *c);
    if (a.is_constant() && a.constant_value() == 0) return Expr();
    Expr r = split_by_monomial(a, d).rest;
    if (within_one_period(r, d)) return r;
    return mod(r, d);
  }

  // 0 <= r <= d - 1 everywhere within the domain.
  bool within_one_period(const Expr& r, const Expr& d) const {
    return is_nonnegative(r, domain_) == Truth::kProved &&
           is_nonnegative(d - Expr(1) - r, domain_) == Truth::kProved;
  }

  Expr fdiv_rest_by_symbols(const Expr& r, const Expr& d) {
    if (r.is_constant() && r.constant_value() == 0) return Expr();
    if (within_one_period(r, d)) return Expr();
    // floordiv(floordiv(x, d1), d) = floordiv(x, d1*d) for positive d1 and d.
    if (const Atom* a = detail::as_single_atom(r); a != nullptr && a->kind == AtomKind::kFloorDiv) {
      return fdiv_any(a->arg, a->divisor * d);
    }
    return floordiv(r, d);
  }

  // floordiv(a, c) for an already simplified a.
  Expr fdiv(const Expr& a, int64_t c) {
    if (c == 1) return a;
    if (auto v = a.constant_value()) return Expr(detail::floordiv_int(*v, c));
    auto key = std::make_pair(a, c);
    auto it = div_memo_.find(key);
    if (it != div_memo_.end()) return it->second;
    Split s = split(a, c);
    Expr result = s.quotient + fdiv_rest(s.rest, c);
    div_memo_.emplace(std::move(key), result);
    return result;
  }

  // floordiv(r, c) where no coefficient of r is divisible by c and its constant is in [0, c).
  Expr fdiv_rest(const Expr& r, int64_t c) {
    if (auto v = r.constant_value()) return Expr(detail::floordiv_int(*v, c));
    if (int64_t g = content_gcd(r, c); g > 1) return fdiv(divide_exact(r, g), c / g);
    if (auto b = bounds_of(r)) {
      int64_t m = detail::floordiv_int(b->lo, c);
      if (m == detail::floordiv_int(b->hi, c)) return Expr(m);
    }
    // floordiv(floordiv(x, d) + k, c) = floordiv(x + k*d, d*c).
    if (r.node().terms.size() == 1) {
      const Term& t = r.node().terms[0];
      const Atom& a = t.factors[0];
      int64_t dc = 0;
      int64_t kd = 0;
      if (t.coeff == 1 && t.factors.size() == 1 && a.kind == AtomKind::kFloorDiv) {
        auto inner = a.constant_divisor();
        if (!inner) return fdiv_any(a.arg + Expr(r.node().constant) * a.divisor, a.divisor * c);
        if (!__builtin_mul_overflow(*inner, c, &dc) &&
            !__builtin_mul_overflow(r.node().constant, *inner, &kd)) {
          return fdiv(a.arg + Expr(kd), dc);
        }
      }
    }
    // floordiv(mod(x, d), c) = mod(floordiv(x, c), d / c) when c divides d.
    if (const Atom* a = detail::as_single_atom(r); a != nullptr && a->kind == AtomKind::kMod &&
                                                   a->constant_divisor() &&
                                                   *a->constant_divisor() % c == 0) {
      return fmod(fdiv(a->arg, c), *a->constant_divisor() / c);
    }
    if (auto hl = high_low(r, c)) return fdiv(hl->high, c / hl->g);
    return floordiv(r, c);
  }

  // mod(a, c) for an already simplified a.
  Expr fmod(const Expr& a, int64_t c) {
    if (c == 1) return Expr();
    if (auto v = a.constant_value()) return Expr(detail::mod_int(*v, c));
    auto key = std::make_pair(a, c);
    auto it = mod_memo_.find(key);
    if (it != mod_memo_.end()) return it->second;
    Expr result = fmod_rest(split(a, c).rest, c);
    mod_memo_.emplace(std::move(key), result);
    return result;
  }

  // mod(r, c) where no coefficient of r is divisible by c and its constant is in [0, c).
  Expr fmod_rest(const Expr& r, int64_t c) {
    if (r.is_constant()) return r;
    if (int64_t g = content_gcd(r, c); g > 1) return Expr(g) * fmod(divide_exact(r, g), c / g);
    if (auto b = bounds_of(r)) {
      int64_t m = detail::floordiv_int(b->lo, c);
      if (m == detail::floordiv_int(b->hi, c)) return r - Expr(detail::checked_mul(m, c));
    }
    // mod(mod(x, d), c) = mod(x, c) when c divides d.
    if (const Atom* a = detail::as_single_atom(r); a != nullptr && a->kind == AtomKind::kMod &&
                                                   a->constant_divisor() &&
                                                   *a->constant_divisor() % c == 0) {
      return fmod(a->arg, c);
    }
    if (auto hl = high_low(r, c)) return Expr(hl->g) * fmod(hl->high, c / hl->g) + hl->low;
    return mod(r, c);
  }

  // r = g*high + low with g > 1 dividing c and 0 <= low < g within the ranges; then
  // floordiv(r, c) = floordiv(high, c/g) and mod(r, c) = g*mod(high, c/g) + low.
  struct HighLow {
    Expr high;
    Expr low;
    int64_t g;
  };

  std::optional<HighLow> high_low(const Expr& r, int64_t c) const {
    std::vector<int64_t> candidates;
    for (const Term& t : r.node().terms) {
      auto g = static_cast<int64_t>(std::gcd(magnitude(t.coeff), static_cast<uint64_t>(c)));
      if (g > 1) candidates.push_back(g);
    }
    std::sort(candidates.begin(), candidates.end(), std::greater<>());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    for (int64_t g : candidates) {
      std::vector<Term> high;
      std::vector<Term> low;
      for (const Term& t : r.node().terms) {
        if (t.coeff % g == 0) {
          high.push_back({t.coeff / g, t.factors});
        } else {
          low.push_back(t);
        }
      }
      int64_t k = r.node().constant;
      Expr low_e = detail::make_expr(detail::mod_int(k, g), std::move(low));
      auto b = bounds_of(low_e);
      if (b && b->lo >= 0 && b->hi < g) {
        return HighLow{detail::make_expr(detail::floordiv_int(k, g), std::move(high)), low_e, g};
      }
    }
    return std::nullopt;
  }

  Expr recombine(Expr e) {
    for (int i = 0; i < kMaxRecombinations; ++i) {
      auto next = recombine_once(e);
      if (!next) break;
      e = std::move(*next);
    }
    return e;
  }

  // One rewrite k*m*mod(x, c) + k*c*m*floordiv(x, c) -> k*m*x, or
  // k*m*mod(x, c) + k*c*m*mod(floordiv(x, c), c2) -> k*m*mod(x, c*c2), for a monomial m.
  std::optional<Expr> recombine_once(const Expr& e) {
    const auto& terms = e.node().terms;
    for (size_t ti = 0; ti < terms.size(); ++ti) {
      const Term& t = terms[ti];
      for (size_t fi = 0; fi < t.factors.size(); ++fi) {
        const Atom& m = t.factors[fi];
        if (m.kind != AtomKind::kMod) continue;
        if (fi > 0 && detail::compare_atoms(t.factors[fi - 1], m) == 0) continue;
        std::vector<Atom> rest = t.factors;
        rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(fi));
        Expr rest_e = rest.empty() ? Expr(t.coeff) : term_expr(t.coeff, rest);
        Expr mod_term = term_expr(t.coeff, t.factors);
        auto divisor = m.constant_divisor();
        if (!divisor) {
          // k*m*mod(x, d) + k*m*d*floordiv(x, d) -> k*m*x for a symbolic d.
          Expr partner = rest_e * m.divisor * fdiv_any(m.arg, m.divisor);
          if (contains_terms(e, partner)) return e - mod_term - partner + rest_e * m.arg;
          continue;
        }
        int64_t kc = 0;
        if (__builtin_mul_overflow(t.coeff, *divisor, &kc)) continue;
        Expr q = fdiv(m.arg, *divisor);
        Expr partner = (rest.empty() ? Expr(kc) : term_expr(kc, rest)) * q;
        if (contains_terms(e, partner)) return e - mod_term - partner + rest_e * m.arg;
        for (size_t ui = 0; ui < terms.size(); ++ui) {
          const Term& u = terms[ui];
          if (ui == ti || u.coeff != kc || u.factors.size() != rest.size() + 1) continue;
          if (!std::includes(u.factors.begin(), u.factors.end(), rest.begin(), rest.end(),
                             atom_less)) {
            continue;
          }
          std::vector<Atom> left;
          std::set_difference(u.factors.begin(), u.factors.end(), rest.begin(), rest.end(),
                              std::back_inserter(left), atom_less);
          if (left.size() != 1 || left[0].kind != AtomKind::kMod || left[0].arg != q ||
              !left[0].constant_divisor()) {
            continue;
          }
          int64_t cc = 0;
          if (__builtin_mul_overflow(*divisor, *left[0].constant_divisor(), &cc)) continue;
          return e - mod_term - term_expr(u.coeff, u.factors) + rest_e * mod(m.arg, cc);
        }
      }
    }
    return std::nullopt;
  }

  const Domain& domain_;
  std::map<Expr, Expr> pass_memo_;
  std::map<std::pair<Expr, int64_t>, Expr> div_memo_;
  std::map<std::pair<Expr, int64_t>, Expr> mod_memo_;
};

}  // namespace

Expr simplify(const Expr& e, const Domain& domain) {
  Simplifier s(domain);
  Expr cur = e;
  for (int i = 0; i < kMaxPasses; ++i) {
    Expr next = s.pass(cur);
    if (next == cur) break;
    cur = std::move(next);
  }
  return cur;
}

namespace {

// e(var + 1) - e(var), simplified where both points lie in the loop (var over [0, n - 2]).
std::optional<Expr> step(const Expr& e, const std::string& var, const Domain& domain) {
  if (!depends_on(e, var)) return Expr();
  Domain shifted_domain = domain;
  auto it = shifted_domain.extents.find(var);
  if (it != shifted_domain.extents.end()) {
    auto n = it->second.constant_value();
    if (!n) {
      it->second = it->second - Expr(1);
    } else if (*n >= 2) {
      it->second = Expr(*n - 1);
    }
  }
  Expr shifted = substitute(e, {{var, Expr::var(var) + Expr(1)}});
  return simplify(simplify(shifted, shifted_domain) - simplify(e, shifted_domain), shifted_domain);
}

}  // namespace

std::optional<int64_t> stride(const Expr& e, const std::string& var, const Domain& domain) {
  auto diff = step(e, var, domain);
  if (!diff) return std::nullopt;
  return diff->constant_value();
}

std::optional<Expr> symbolic_stride(const Expr& e, const std::string& var, const Domain& domain) {
  auto diff = step(e, var, domain);
  if (!diff) return std::nullopt;
  for (const std::string& v : free_vars(*diff)) {
    if (domain.symbols.count(v) == 0) return std::nullopt;
  }
  return diff;
}

Truth equal_within(const Expr& a, const Expr& b, const Domain& domain) {
  Expr diff = simplify(a - b, domain);
  if (auto c = diff.constant_value()) return *c == 0 ? Truth::kProved : Truth::kRefuted;
  return Truth::kUnknown;
}

}  // namespace stax::index
