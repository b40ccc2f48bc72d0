// Symbolic integer index expressions over loop variables and size symbols (the index algebra
// of lowering and scheduling): constants, variables, +, *, floor division and modulo by
// positive constants or by positive monomials of size symbols (issue 33: sizes known only at
// run time, `s0`, `s1`, ..., with what is known of them).
//
// Every Expr is kept in a canonical polynomial form as it is built: a constant plus a sorted
// sum of coefficient * monomial terms, where a monomial is a sorted product of atoms
// (variables, floordiv(e, c), mod(e, c)). So algebraically equal polynomials compare equal
// with ==. Range-aware rewriting (e.g. (128*i0 + i1) // 128 -> i0 when 0 <= i1 < 128) is done
// by simplify(), given the ranges of the variables.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace stax::index {

namespace detail {
struct ExprNode;
}

// Ranges of loop variables: name -> extent n, meaning the variable takes values 0..n-1.
using RangeMap = std::map<std::string, int64_t>;

// What is known of a size symbol: its value lies in [lo, hi] (lo >= 0: it is a size) and is a
// multiple of `multiple_of`; `hint` is the example value it had when the program was
// compiled, for heuristics only, never for a proof.
struct SizeSymbol {
  int64_t lo = 0;
  int64_t hi = INT64_MAX;
  int64_t multiple_of = 1;
  int64_t hint = 0;
  friend bool operator==(const SizeSymbol&, const SizeSymbol&) = default;
};
using SymbolTable = std::map<std::string, SizeSymbol>;

class Expr;

// What a stage that does not take size symbols yet throws for a symbolic size: the driver
// compiles such a graph per size instead (driver/compiler.h), while any other error is the
// graph's own.
class SymbolicSizesRefused : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Where the variables of an index expression range: each loop variable over
// [0, extent - 1], its extent an expression over size symbols; each size symbol as its
// SizeSymbol says. Rules that hold "within the domain" hold for every value of the symbols
// that their facts allow and every point of the loops at those values.
struct Domain;

class Expr {
 public:
  Expr();                  // the constant 0
  Expr(int64_t constant);  // NOLINT(google-explicit-constructor): literals in formulas
  static Expr var(const std::string& name);

  bool is_constant() const;
  std::optional<int64_t> constant_value() const;
  // True when the expression is exactly one variable with coefficient 1.
  std::optional<std::string> as_var() const;

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a);
  friend Expr operator*(const Expr& a, const Expr& b);
  Expr& operator+=(const Expr& b) { return *this = *this + b; }
  Expr& operator*=(const Expr& b) { return *this = *this * b; }

  friend bool operator==(const Expr& a, const Expr& b);
  friend bool operator!=(const Expr& a, const Expr& b) { return !(a == b); }
  // A total order on canonical forms (for use as map keys).
  friend bool operator<(const Expr& a, const Expr& b);

  const detail::ExprNode& node() const { return *node_; }
  explicit Expr(std::shared_ptr<const detail::ExprNode> node) : node_(std::move(node)) {}

 private:
  std::shared_ptr<const detail::ExprNode> node_;
};

struct Domain {
  Domain() = default;
  Domain(const RangeMap& ranges);  // NOLINT(google-explicit-constructor): constant extents
  // {{"i0", 64}, {"i1", 128}}: constant extents written in place.
  Domain(std::initializer_list<RangeMap::value_type> ranges)  // NOLINT(google-explicit-constructor)
      : Domain(RangeMap(ranges)) {}
  Domain(std::map<std::string, Expr> loop_extents, SymbolTable size_symbols);
  std::map<std::string, Expr> extents;
  SymbolTable symbols;
};

// floor(a / divisor) and a - divisor * floor(a / divisor) (Python semantics), divisor > 0.
// Throws std::invalid_argument for a non-positive divisor.
Expr floordiv(const Expr& a, int64_t divisor);
Expr mod(const Expr& a, int64_t divisor);
// The same by a divisor that is a constant or a monomial c * s0 * s1 ... (c >= 1) of size
// symbols, which the caller guarantees positive where the expression is used (sizes of
// dimensions with at least one element). Throws std::invalid_argument for any other divisor.
Expr floordiv(const Expr& a, const Expr& divisor);
Expr mod(const Expr& a, const Expr& divisor);

// Readable form, e.g. "128*i0 + i1", "(c0 // 128)", "(c0 % 128)".
std::string to_string(const Expr& e);
// C++ source form for generated code. Floor division and modulo are emitted as plain `/` and
// `%` when the ranges prove the dividend non-negative, else as stax_floordiv / stax_mod calls.
std::string to_cpp(const Expr& e, const Domain& domain);

// Value at a point; every free variable must be bound (throws std::out_of_range otherwise).
int64_t evaluate(const Expr& e, const std::map<std::string, int64_t>& values);

std::set<std::string> free_vars(const Expr& e);
// The number of floordiv and mod operations in `e` written out as a tree; any count above
// `limit` may be returned as soon as it is reached (the walk stops there).
int64_t count_divisions(const Expr& e, int64_t limit);
bool depends_on(const Expr& e, const std::string& var);
Expr substitute(const Expr& e, const std::map<std::string, Expr>& replacements);

// Closed interval [lo, hi] containing every value of e within the domain (each loop variable
// over [0, extent - 1], each size symbol within its facts). Variables missing from the domain
// make the bound unknown (nullopt).
struct Interval {
  int64_t lo;
  int64_t hi;
};
std::optional<Interval> bounds(const Expr& e, const Domain& domain);

// Whether e >= 0 everywhere within the domain: kProved, kRefuted (e < 0 somewhere in it, for a
// domain whose symbols and loops are not empty), or kUnknown. Beyond interval bounds it
// reasons about loop variables against their symbolic extents (i < s0 gives s0 - 1 - i >= 0).
enum class Truth { kProved, kRefuted, kUnknown };
Truth is_nonnegative(const Expr& e, const Domain& domain);
// a == b everywhere within the domain when simplify(a - b) is 0 (kProved); kRefuted when
// a - b is a nonzero constant; kUnknown otherwise (a guard would be needed).
Truth equal_within(const Expr& a, const Expr& b, const Domain& domain);

// Range-aware simplification to a canonical form: equal indices over the given ranges get the
// same form wherever the rules below can show it. Rules: floordiv/mod of a sum split into the
// part divisible by the divisor and a remainder whose bounds are known; x // c -> 0 and
// x % c -> x when 0 <= x < c; nested floordiv merged; c*(e // c) + e % c -> e; variables of
// extent 1 replaced by 0.
Expr simplify(const Expr& e, const Domain& domain);

// e(var + 1) - e(var) when it is the same constant for every value of the other variables
// (the access stride used for vectorization decisions); nullopt when it is not constant.
std::optional<int64_t> stride(const Expr& e, const std::string& var, const Domain& domain);
// The same when the stride is an expression over size symbols (s1*768 for the outer loop of a
// [s0, s1, 768] tensor); nullopt when it depends on a loop variable.
std::optional<Expr> symbolic_stride(const Expr& e, const std::string& var, const Domain& domain);

// A loop variable with its extent (a constant, or an expression over size symbols), in loop
// order (outermost first).
struct LoopVar {
  std::string name;
  Expr extent;
  friend bool operator==(const LoopVar&, const LoopVar&) = default;
};

// The extent of a loop for a stage that does not handle size symbols yet: its constant value;
// throws std::invalid_argument naming `stage`, the loop and the extent when it is symbolic
// (docs/symbolic_sizes.md: a symbolic program is refused there, never compiled at a hint).
int64_t static_extent(const LoopVar& loop, const char* stage);

// Whether `e` may divide in floordiv/mod: a positive constant or c * s0 * s1 ... (c >= 1).
bool is_divisor(const Expr& e);

// Dimension collapsing for dependence normalization (Example 7.1): drops the variables the
// index does not use, merges adjacent used variables (outer a, inner b) whenever the index
// depends on them only through extent(b)*a + b, and renames the survivors to
// `<prefix>0, <prefix>1, ...` in loop order. `128*i0 + i1` over {i0: 64, i1: 128} becomes
// `c0` over {c0: 8192}; `i0` over {i0: 64, i1: 128} becomes `c0` over {c0: 64}.
struct CollapsedIndex {
  Expr index;
  std::vector<LoopVar> vars;
  friend bool operator==(const CollapsedIndex&, const CollapsedIndex&) = default;
};
// Extents may be expressions over the size symbols in `symbols` (a loop over [s0, s1] merges
// into one over s0*s1 where s1 may divide); without symbols every extent is a constant.
CollapsedIndex collapse(const Expr& e, const std::vector<LoopVar>& loop_vars,
                        const std::string& prefix = "c", const SymbolTable& symbols = {});

// collapse() together with the substitution it applied: for every loop variable of extent 1
// the value 0, and for every loop variable the collapsed index still uses its expression in
// the new variables (e.g. a -> c0 // 128, b -> c0 % 128 when a and b were merged). Loop
// variables the index does not use are absent. Both functions throw std::invalid_argument when
// a new name would clash with a free variable of `e` that is not a loop variable.
struct CollapseResult {
  CollapsedIndex collapsed;
  std::map<std::string, Expr> old_to_new;
};
CollapseResult collapse_with_mapping(const Expr& e, const std::vector<LoopVar>& loop_vars,
                                     const std::string& prefix = "c",
                                     const SymbolTable& symbols = {});

// Loop simplification for a whole loop nest: merges adjacent loops (outer a, inner b) when
// *every* index in `indices` depends on them only through extent(b)*a + b (or on neither),
// and drops loops of extent 1. Returns the new loops (named `<prefix>0, ...`) and, for each
// old variable, its expression in the new variables, to substitute into the indices.
// Variables of the indices that are not loop variables are left alone; a new name clashing
// with one of them throws std::invalid_argument.
struct MergedLoops {
  std::vector<LoopVar> vars;
  std::map<std::string, Expr> old_to_new;
};
// `values`: what the body computes from the loop variables besides its indices (index values,
// a relative position); over a loop pair whose inner extent is known only at run time they
// take the merge test as the indices do.
MergedLoops merge_loops(const std::vector<LoopVar>& loop_vars, const std::vector<Expr>& indices,
                        const std::string& prefix, const SymbolTable& symbols = {},
                        const std::vector<Expr>& values = {});

// Where to split a loop `var` (its extent in `ranges`) that the indices reach through floor
// division or modulo: the period d such that, with var = d*hi + lo (hi < extent/d, lo < d),
// no floordiv or mod of any index depends on lo any more, so lo walks each index with a
// constant stride (contiguous_split.cpp). nullopt when no index divides var, when d does not
// divide the extent, or when some division would still depend on lo.
std::optional<int64_t> contiguous_split(const std::vector<Expr>& indices, const std::string& var,
                                        const Domain& ranges);

}  // namespace stax::index
