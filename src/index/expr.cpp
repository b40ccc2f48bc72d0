// Construction of index expressions in canonical polynomial form: the total order on nodes,
// the arithmetic operators, floordiv/mod constructors with constant folding, and the
// structural queries (evaluate, free_vars, depends_on, substitute).
#include "index/expr.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "index/internal.h"
#include "index/node.h"

namespace stax::index {

namespace detail {

namespace {

[[noreturn]] void overflow() {
  throw std::overflow_error("stax::index: integer overflow in index arithmetic");
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Natural order: digit runs compare by numeric value, so "i2" < "i10". Ties (e.g. "i01" vs
// "i1") fall back to plain string order so the order stays total.
int compare_names(const std::string& a, const std::string& b) {
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      size_t ie = i;
      size_t je = j;
      while (ie < a.size() && is_digit(a[ie])) ++ie;
      while (je < b.size() && is_digit(b[je])) ++je;
      size_t is = i;
      size_t js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js ? -1 : 1;
      int c = a.compare(is, ie - is, b, js, je - js);
      if (c != 0) return c < 0 ? -1 : 1;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j])
        return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]) ? -1 : 1;
      ++i;
      ++j;
    }
  }
  if (i < a.size() || j < b.size()) return i < a.size() ? 1 : -1;
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

int compare_int(int64_t a, int64_t b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

const std::shared_ptr<const ExprNode>& zero_node() {
  static const std::shared_ptr<const ExprNode> zero = std::make_shared<const ExprNode>();
  return zero;
}

bool atom_less(const Atom& a, const Atom& b) {
  return compare_atoms(a, b) < 0;
}

}  // namespace

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

int64_t checked_neg(int64_t a) {
  int64_t r = 0;
  if (__builtin_sub_overflow(int64_t{0}, a, &r)) overflow();
  return r;
}

int64_t floordiv_int(int64_t a, int64_t b) {
  if (b == -1) return checked_neg(a);
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t mod_int(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int compare_atoms(const Atom& a, const Atom& b) {
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.kind == AtomKind::kVar) return compare_names(a.name, b.name);
  int c = compare_exprs(a.arg, b.arg);
  if (c != 0) return c;
  return compare_exprs(a.divisor, b.divisor);
}

int compare_factors(const std::vector<Atom>& a, const std::vector<Atom>& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int c = compare_atoms(a[i], b[i]);
    if (c != 0) return c;
  }
  return compare_int(static_cast<int64_t>(a.size()), static_cast<int64_t>(b.size()));
}

int compare_exprs(const Expr& a, const Expr& b) {
  const ExprNode& x = a.node();
  const ExprNode& y = b.node();
  if (&x == &y) return 0;
  size_t n = std::min(x.terms.size(), y.terms.size());
  for (size_t i = 0; i < n; ++i) {
    int c = compare_factors(x.terms[i].factors, y.terms[i].factors);
    if (c != 0) return c;
    c = compare_int(x.terms[i].coeff, y.terms[i].coeff);
    if (c != 0) return c;
  }
  if (x.terms.size() != y.terms.size()) return x.terms.size() < y.terms.size() ? -1 : 1;
  return compare_int(x.constant, y.constant);
}

Expr make_expr(int64_t constant, std::vector<Term> terms) {
  for (Term& t : terms) {
    if (!std::is_sorted(t.factors.begin(), t.factors.end(), atom_less)) {
      std::sort(t.factors.begin(), t.factors.end(), atom_less);
    }
  }
  std::stable_sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) {
    return compare_factors(a.factors, b.factors) < 0;
  });
  std::vector<Term> out;
  out.reserve(terms.size());
  for (Term& t : terms) {
    if (t.coeff == 0) continue;
    if (t.factors.empty()) {
      constant = checked_add(constant, t.coeff);
      continue;
    }
    if (!out.empty() && compare_factors(out.back().factors, t.factors) == 0) {
      out.back().coeff = checked_add(out.back().coeff, t.coeff);
      if (out.back().coeff == 0) out.pop_back();
    } else {
      out.push_back(std::move(t));
    }
  }
  if (constant == 0 && out.empty()) return Expr();
  auto node = std::make_shared<ExprNode>();
  node->constant = constant;
  node->terms = std::move(out);
  return Expr(std::shared_ptr<const ExprNode>(std::move(node)));
}

Expr atom_expr(Atom atom) {
  std::vector<Term> terms(1);
  terms[0].coeff = 1;
  terms[0].factors.push_back(std::move(atom));
  return make_expr(0, std::move(terms));
}

const Atom* as_single_atom(const Expr& e) {
  const ExprNode& n = e.node();
  if (n.constant != 0 || n.terms.size() != 1) return nullptr;
  const Term& t = n.terms[0];
  if (t.coeff != 1 || t.factors.size() != 1) return nullptr;
  return &t.factors[0];
}

}  // namespace detail

using detail::Atom;
using detail::AtomKind;
using detail::ExprNode;
using detail::Term;

Expr::Expr() : node_(detail::zero_node()) {}

Expr::Expr(int64_t constant) {
  if (constant == 0) {
    node_ = detail::zero_node();
  } else {
    auto node = std::make_shared<ExprNode>();
    node->constant = constant;
    node_ = std::move(node);
  }
}

Expr Expr::var(const std::string& name) {
  if (name.empty()) throw std::invalid_argument("stax::index: empty variable name");
  Atom atom;
  atom.kind = AtomKind::kVar;
  atom.name = name;
  return detail::atom_expr(std::move(atom));
}

bool Expr::is_constant() const {
  return node_->terms.empty();
}

std::optional<int64_t> Expr::constant_value() const {
  if (!is_constant()) return std::nullopt;
  return node_->constant;
}

std::optional<std::string> Expr::as_var() const {
  const Atom* a = detail::as_single_atom(*this);
  if (a == nullptr || a->kind != AtomKind::kVar) return std::nullopt;
  return a->name;
}

Expr operator+(const Expr& a, const Expr& b) {
  const ExprNode& x = a.node();
  const ExprNode& y = b.node();
  if (y.terms.empty() && y.constant == 0) return a;
  if (x.terms.empty() && x.constant == 0) return b;
  std::vector<Term> terms;
  terms.reserve(x.terms.size() + y.terms.size());
  terms.insert(terms.end(), x.terms.begin(), x.terms.end());
  terms.insert(terms.end(), y.terms.begin(), y.terms.end());
  return detail::make_expr(detail::checked_add(x.constant, y.constant), std::move(terms));
}

Expr operator-(const Expr& a) {
  const ExprNode& x = a.node();
  std::vector<Term> terms = x.terms;
  for (Term& t : terms) t.coeff = detail::checked_neg(t.coeff);
  return detail::make_expr(detail::checked_neg(x.constant), std::move(terms));
}

Expr operator-(const Expr& a, const Expr& b) {
  return a + (-b);
}

Expr operator*(const Expr& a, const Expr& b) {
  const ExprNode& x = a.node();
  const ExprNode& y = b.node();
  if (x.terms.empty() && x.constant == 1) return b;
  if (y.terms.empty() && y.constant == 1) return a;
  std::vector<Term> terms;
  terms.reserve(x.terms.size() * y.terms.size() + x.terms.size() + y.terms.size());
  for (const Term& s : x.terms) {
    for (const Term& t : y.terms) {
      Term p;
      p.coeff = detail::checked_mul(s.coeff, t.coeff);
      p.factors.reserve(s.factors.size() + t.factors.size());
      std::merge(s.factors.begin(), s.factors.end(), t.factors.begin(), t.factors.end(),
                 std::back_inserter(p.factors), detail::atom_less);
      terms.push_back(std::move(p));
    }
  }
  if (y.constant != 0) {
    for (const Term& s : x.terms)
      terms.push_back({detail::checked_mul(s.coeff, y.constant), s.factors});
  }
  if (x.constant != 0) {
    for (const Term& t : y.terms)
      terms.push_back({detail::checked_mul(t.coeff, x.constant), t.factors});
  }
  return detail::make_expr(detail::checked_mul(x.constant, y.constant), std::move(terms));
}

bool operator==(const Expr& a, const Expr& b) {
  return detail::compare_exprs(a, b) == 0;
}
bool operator<(const Expr& a, const Expr& b) {
  return detail::compare_exprs(a, b) < 0;
}

namespace {

// A divisor of floordiv/mod: a constant, or c * s0 * s1 ... with c >= 1 over variables (size
// symbols; the caller vouches that they are positive where the expression is used).
void check_divisor(const Expr& divisor, const char* op) {
  if (auto c = divisor.constant_value()) {
    if (*c <= 0) {
      throw std::invalid_argument(std::string("stax::index: ") + op + " by a non-positive divisor");
    }
    return;
  }
  if (!is_divisor(divisor)) {
    throw std::invalid_argument(std::string("stax::index: ") + op + " by " + to_string(divisor) +
                                ": a divisor is a positive constant or a product of sizes");
  }
}

Expr division_atom(AtomKind kind, const Expr& a, const Expr& divisor) {
  Atom atom;
  atom.kind = kind;
  atom.arg = a;
  atom.divisor = divisor;
  return detail::atom_expr(std::move(atom));
}

}  // namespace

Expr floordiv(const Expr& a, int64_t divisor) {
  return floordiv(a, Expr(divisor));
}

Expr mod(const Expr& a, int64_t divisor) {
  return mod(a, Expr(divisor));
}

Expr floordiv(const Expr& a, const Expr& divisor) {
  check_divisor(divisor, "floordiv");
  if (divisor == Expr(1)) return a;
  if (a == divisor) return Expr(1);
  auto c = a.constant_value();
  auto d = divisor.constant_value();
  if (c && d) return Expr(detail::floordiv_int(*c, *d));
  if (c && *c == 0) return Expr();
  return division_atom(AtomKind::kFloorDiv, a, divisor);
}

Expr mod(const Expr& a, const Expr& divisor) {
  check_divisor(divisor, "mod");
  if (divisor == Expr(1) || a == divisor) return Expr();
  auto c = a.constant_value();
  auto d = divisor.constant_value();
  if (c && d) return Expr(detail::mod_int(*c, *d));
  if (c && *c == 0) return Expr();
  return division_atom(AtomKind::kMod, a, divisor);
}

namespace {

int64_t eval_atom(const Atom& a, const std::map<std::string, int64_t>& values) {
  switch (a.kind) {
    case AtomKind::kVar:
      return values.at(a.name);
    case AtomKind::kFloorDiv:
    case AtomKind::kMod: {
      const int64_t d = evaluate(a.divisor, values);
      if (d <= 0) {
        throw std::domain_error("stax::index: a divisor evaluated to " + std::to_string(d) + " (" +
                                to_string(a.divisor) + ")");
      }
      const int64_t x = evaluate(a.arg, values);
      return a.kind == AtomKind::kFloorDiv ? detail::floordiv_int(x, d) : detail::mod_int(x, d);
    }
  }
  return 0;
}

void collect_vars(const Expr& e, std::set<std::string>& out) {
  for (const Term& t : e.node().terms) {
    for (const Atom& a : t.factors) {
      if (a.kind == AtomKind::kVar) {
        out.insert(a.name);
      } else {
        collect_vars(a.arg, out);
        collect_vars(a.divisor, out);
      }
    }
  }
}

}  // namespace

int64_t evaluate(const Expr& e, const std::map<std::string, int64_t>& values) {
  const ExprNode& n = e.node();
  int64_t sum = n.constant;
  for (const Term& t : n.terms) {
    int64_t p = t.coeff;
    for (const Atom& a : t.factors) p = detail::checked_mul(p, eval_atom(a, values));
    sum = detail::checked_add(sum, p);
  }
  return sum;
}

std::set<std::string> free_vars(const Expr& e) {
  std::set<std::string> out;
  collect_vars(e, out);
  return out;
}

bool depends_on(const Expr& e, const std::string& var) {
  for (const Term& t : e.node().terms) {
    for (const Atom& a : t.factors) {
      if (a.kind == AtomKind::kVar ? a.name == var
                                   : depends_on(a.arg, var) || depends_on(a.divisor, var)) {
        return true;
      }
    }
  }
  return false;
}

Expr substitute(const Expr& e, const std::map<std::string, Expr>& replacements) {
  if (replacements.empty()) return e;
  const ExprNode& n = e.node();
  Expr sum(n.constant);
  for (const Term& t : n.terms) {
    Expr p(t.coeff);
    for (const Atom& a : t.factors) {
      switch (a.kind) {
        case AtomKind::kVar: {
          auto it = replacements.find(a.name);
          p = p * (it == replacements.end() ? Expr::var(a.name) : it->second);
          break;
        }
        case AtomKind::kFloorDiv:
          p = p * floordiv(substitute(a.arg, replacements), substitute(a.divisor, replacements));
          break;
        case AtomKind::kMod:
          p = p * mod(substitute(a.arg, replacements), substitute(a.divisor, replacements));
          break;
      }
    }
    sum = sum + p;
  }
  return sum;
}

bool is_divisor(const Expr& e) {
  if (auto c = e.constant_value()) return *c >= 1;
  const ExprNode& n = e.node();
  if (n.constant != 0 || n.terms.size() != 1 || n.terms[0].coeff < 1) return false;
  for (const Atom& a : n.terms[0].factors) {
    if (a.kind != AtomKind::kVar) return false;
  }
  return true;
}

int64_t static_extent(const LoopVar& loop, const char* stage) {
  if (auto n = loop.extent.constant_value()) return *n;
  throw SymbolicSizesRefused(std::string(stage) + ": loop " + loop.name + " runs over " +
                             to_string(loop.extent) +
                             ", a size known only at run time; symbolic sizes are not "
                             "supported here yet");
}

Domain::Domain(const RangeMap& ranges) {
  for (const auto& [name, extent] : ranges) extents.emplace_hint(extents.end(), name, extent);
}

Domain::Domain(std::map<std::string, Expr> loop_extents, SymbolTable size_symbols)
    : extents(std::move(loop_extents)), symbols(std::move(size_symbols)) {
  for (const auto& [name, facts] : symbols) {
    if (facts.lo < 0 || facts.hi < facts.lo || facts.multiple_of < 1) {
      throw std::invalid_argument("stax::index: size symbol " + name + " has range [" +
                                  std::to_string(facts.lo) + ", " + std::to_string(facts.hi) +
                                  "] multiple of " + std::to_string(facts.multiple_of) +
                                  "; a size lies in [lo, hi] with 0 <= lo <= hi");
    }
    if (extents.count(name) != 0) {
      throw std::invalid_argument("stax::index: " + name +
                                  " is both a loop variable and a size symbol");
    }
  }
}

}  // namespace stax::index
