// Printing of index expressions: the readable to_string form and the C++ source form used by
// generated kernels (to_cpp), which picks `/` and `%` only for provably non-negative dividends.
#include <cstdint>
#include <limits>
#include <string>

#include "index/expr.h"
#include "index/internal.h"
#include "index/node.h"

namespace stax::index {

using detail::Atom;
using detail::AtomKind;
using detail::ExprNode;
using detail::Term;

namespace {

class Printer {
 public:
  Printer(bool cpp, const Domain* domain) : cpp_(cpp), domain_(domain) {}

  std::string expr(const Expr& e) const {
    const ExprNode& n = e.node();
    if (n.terms.empty()) return integer(n.constant);
    std::string out;
    bool first = true;
    for (const Term& t : n.terms) {
      std::string body;
      for (size_t i = 0; i < t.factors.size(); ++i) {
        if (i > 0) body += "*";
        body += atom(t.factors[i]);
      }
      append(out, t.coeff, body, first);
      first = false;
    }
    if (n.constant != 0) append(out, n.constant, "", false);
    return out;
  }

 private:
  // Appends coeff*body (or the constant coeff when body is empty) with its sign as a separator.
  void append(std::string& out, int64_t coeff, const std::string& body, bool first) const {
    bool negative = coeff < 0 && coeff != std::numeric_limits<int64_t>::min();
    int64_t magnitude = negative ? -coeff : coeff;
    if (first) {
      if (negative) out += "-";
    } else {
      out += negative ? " - " : " + ";
    }
    if (body.empty()) {
      out += integer(magnitude);
    } else if (magnitude == 1) {
      out += body;
    } else {
      out += integer(magnitude) + "*" + body;
    }
  }

  std::string integer(int64_t v) const {
    if (v == std::numeric_limits<int64_t>::min()) {
      return cpp_ ? "(-9223372036854775807 - 1)" : "-9223372036854775808";
    }
    return std::to_string(v);
  }

  // The dividend of a floordiv/mod atom, parenthesized unless it is a single atom.
  std::string operand(const Expr& arg) const {
    std::string s = expr(arg);
    return detail::as_single_atom(arg) != nullptr ? s : "(" + s + ")";
  }

  std::string atom(const Atom& a) const {
    if (a.kind == AtomKind::kVar) return a.name;
    bool is_div = a.kind == AtomKind::kFloorDiv;
    // A symbolic divisor (c*s0*...) is positive by floordiv's contract, as a constant one is.
    std::string d = a.constant_divisor() ? integer(*a.constant_divisor()) : operand(a.divisor);
    if (!cpp_) return "(" + operand(a.arg) + (is_div ? " // " : " % ") + d + ")";
    auto b = detail::partial_bounds(a.arg, *domain_);
    if (b && b->lo >= 0) return "(" + operand(a.arg) + (is_div ? " / " : " % ") + d + ")";
    return std::string(is_div ? "stax_floordiv(" : "stax_mod(") + expr(a.arg) + ", " + d + ")";
  }

  bool cpp_;
  const Domain* domain_;
};

}  // namespace

std::string to_string(const Expr& e) {
  return Printer(false, nullptr).expr(e);
}

std::string to_cpp(const Expr& e, const Domain& domain) {
  return Printer(true, &domain).expr(e);
}

}  // namespace stax::index
