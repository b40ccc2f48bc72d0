// Private helpers shared by the index algebra's source files: overflow-checked integer
// arithmetic, Python-style integer division, and partial interval bounds.
#pragma once

#include <cstdint>
#include <optional>

#include "index/expr.h"

namespace stax::index::detail {

// Throw std::overflow_error when the exact result does not fit in int64_t.
int64_t checked_add(int64_t a, int64_t b);
int64_t checked_mul(int64_t a, int64_t b);
int64_t checked_neg(int64_t a);

// floor(a / b) and a - b * floor(a / b) for b != 0 (Python semantics).
int64_t floordiv_int(int64_t a, int64_t b);
int64_t mod_int(int64_t a, int64_t b);

// Like bounds(), but sound for expressions with variables missing from the domain: a mod atom is
// always within [0, divisor - 1] whatever its argument; only sub-expressions that need an
// unknown variable's range are unknown.
std::optional<Interval> partial_bounds(const Expr& e, const Domain& domain);

}  // namespace stax::index::detail
