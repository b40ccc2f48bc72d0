// Sizes and strides as lists of index expressions (shape_exprs.h).
#include "index/shape_exprs.h"

#include <stdexcept>

namespace stax::index {

std::vector<Expr> to_exprs(const std::vector<int64_t>& values) {
  return std::vector<Expr>(values.begin(), values.end());
}

Expr product(const std::vector<Expr>& exprs) {
  Expr n(1);
  for (const Expr& e : exprs) n = n * e;
  return n;
}

std::optional<std::vector<int64_t>> constant_values(const std::vector<Expr>& exprs) {
  std::vector<int64_t> values;
  values.reserve(exprs.size());
  for (const Expr& e : exprs) {
    const auto c = e.constant_value();
    if (!c) return std::nullopt;
    values.push_back(*c);
  }
  return values;
}

bool all_constant(const std::vector<Expr>& exprs) {
  for (const Expr& e : exprs) {
    if (!e.is_constant()) return false;
  }
  return true;
}

int64_t static_value(const Expr& e, const std::string& stage, const std::string& what) {
  if (const auto c = e.constant_value()) return *c;
  throw SymbolicSizesRefused(stage + " does not take sizes known only at run time yet (" + what +
                             " is " + to_string(e) + ")");
}

std::vector<int64_t> static_values(const std::vector<Expr>& exprs, const std::string& stage,
                                   const std::string& what) {
  std::vector<int64_t> values;
  values.reserve(exprs.size());
  for (const Expr& e : exprs) values.push_back(static_value(e, stage, what));
  return values;
}

std::map<std::string, int64_t> hint_values(const SymbolTable& symbols) {
  std::map<std::string, int64_t> hints;
  for (const auto& [name, facts] : symbols) hints.emplace(name, facts.hint);
  return hints;
}

int64_t value_at_hints(const Expr& e, const SymbolTable& symbols) {
  if (const auto c = e.constant_value()) return *c;
  return evaluate(e, hint_values(symbols));
}

std::vector<int64_t> values_at_hints(const std::vector<Expr>& exprs, const SymbolTable& symbols) {
  const auto hints = hint_values(symbols);
  std::vector<int64_t> values;
  values.reserve(exprs.size());
  for (const Expr& e : exprs) values.push_back(evaluate(e, hints));
  return values;
}

std::optional<int64_t> upper_bound(const Expr& e, const SymbolTable& symbols) {
  if (const auto c = e.constant_value()) return c;
  const auto b = bounds(e, Domain({}, symbols));
  if (!b) return std::nullopt;
  return b->hi;
}

std::vector<Expr> contiguous_strides(const std::vector<Expr>& sizes) {
  std::vector<Expr> strides(sizes.size(), Expr(1));
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
  return strides;
}

std::string format_exprs(const std::vector<Expr>& exprs) {
  std::string text = "[";
  for (size_t i = 0; i < exprs.size(); ++i) text += (i ? ", " : "") + to_string(exprs[i]);
  return text + "]";
}

}  // namespace stax::index
