// Sizes and strides as index expressions (issue 33): a stage that works on symbolic shapes
// holds them as std::vector<Expr> (constants where a dim is static), and these helpers are the
// one place that turns such a list into numbers. A stage that does not take size symbols yet
// reads a list through static_values(), which names the stage instead of using a value that
// holds only at the hint (docs/symbolic_sizes.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "index/expr.h"

namespace stax::index {

std::vector<Expr> to_exprs(const std::vector<int64_t>& values);
// The product of the list (1 for an empty list): an element count.
Expr product(const std::vector<Expr>& exprs);
// The list's values when every entry is a constant.
std::optional<std::vector<int64_t>> constant_values(const std::vector<Expr>& exprs);
bool all_constant(const std::vector<Expr>& exprs);

// The constant value of `e`, or SymbolicSizesRefused: "<stage> does not take sizes known
// only at run time yet (<what> is <e>)".
int64_t static_value(const Expr& e, const std::string& stage, const std::string& what = "a size");
std::vector<int64_t> static_values(const std::vector<Expr>& exprs, const std::string& stage,
                                   const std::string& what = "a size");

// Values at the symbols' hints (for heuristics: cost models, tile and vector choices).
std::map<std::string, int64_t> hint_values(const SymbolTable& symbols);
int64_t value_at_hints(const Expr& e, const SymbolTable& symbols);
std::vector<int64_t> values_at_hints(const std::vector<Expr>& exprs, const SymbolTable& symbols);

// The largest value `e` takes where the symbols' facts hold (for proofs: index widths);
// nullopt when it is unbounded there.
std::optional<int64_t> upper_bound(const Expr& e, const SymbolTable& symbols);

// Row-major contiguous strides of the sizes (last dim stride 1).
std::vector<Expr> contiguous_strides(const std::vector<Expr>& sizes);

// "[s0, 128]"
std::string format_exprs(const std::vector<Expr>& exprs);

}  // namespace stax::index
