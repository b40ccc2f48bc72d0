// The node layout behind Expr (the canonical polynomial form) and its structural helpers.
// Other modules may include this header to walk an expression; they must not build nodes by
// hand except through make_expr / atom_expr, which restore the canonical form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "index/expr.h"

namespace stax::index::detail {

enum class AtomKind : uint8_t { kVar, kFloorDiv, kMod };

// An indivisible factor of a monomial: a variable (a loop variable or a size symbol),
// floordiv(arg, divisor) or mod(arg, divisor).
struct Atom {
  AtomKind kind = AtomKind::kVar;
  std::string name;  // kVar only
  Expr arg;          // kFloorDiv / kMod: the dividend (never a constant)
  // kFloorDiv / kMod: a constant > 1, or a positive monomial over size symbols (c * s0 * s1...,
  // c >= 1) whose value is positive wherever the expression is used.
  Expr divisor;
  // The divisor's value when it is a constant (every divisor before size symbols).
  std::optional<int64_t> constant_divisor() const { return divisor.constant_value(); }
};

// coeff * factors[0] * factors[1] * ...; repeated atoms are powers.
struct Term {
  int64_t coeff = 0;          // never 0 in a canonical node
  std::vector<Atom> factors;  // non-empty, sorted by compare_atoms
};

// constant + sum of terms; terms sorted by compare_factors with pairwise distinct monomials.
struct ExprNode {
  int64_t constant = 0;
  std::vector<Term> terms;
};

// Three-way comparisons (<0, 0, >0) defining the deterministic total order of canonical forms.
// Variables compare in natural order ("i2" < "i10"); variables < floordiv atoms < mod atoms.
int compare_atoms(const Atom& a, const Atom& b);
int compare_factors(const std::vector<Atom>& a, const std::vector<Atom>& b);
int compare_exprs(const Expr& a, const Expr& b);

// Builds the canonical node for constant + sum(terms): sorts factors and terms, combines like
// terms, drops zero terms.
Expr make_expr(int64_t constant, std::vector<Term> terms);
// The expression consisting of the single atom (coefficient 1, constant 0).
Expr atom_expr(Atom atom);
// The atom when e is exactly one atom with coefficient 1 and constant 0.
const Atom* as_single_atom(const Expr& e);

}  // namespace stax::index::detail
