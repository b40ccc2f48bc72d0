// When index arithmetic fits int32 (issue 6 point 8): the bounds the index-narrowing pass
// decides with and the verifier checks with, over the kernel's ranges. One rule serves both,
// so the verifier accepts exactly what the pass can prove.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "kernel/kernel_ir.h"

namespace stax::kernel {

inline constexpr int64_t kInt32IndexMax = 2147483647;  // 2^31 - 1

// A bound on the magnitude of every value the printed C++ of `e` computes — each partial sum,
// each product prefix of a term, each dividend of a division or modulo, the literals and the
// result — whatever order the terms are added in. nullopt when a variable has no range or
// the bound leaves int64. `e` is int32-safe when the bound is at most kInt32IndexMax.
std::optional<int64_t> index_magnitude(const index::Expr& e, const index::Domain& ranges);

// The same bound for the expression as given and as index::simplify rewrites it over
// `ranges` (the simplification pass re-canonicalizes indices after the narrowing pass).
std::optional<int64_t> index_magnitude_as_printed(const index::Expr& e,
                                                  const index::Domain& ranges);

// A bound on every value a loop's header computes: begin, end, the limit, and the loop
// variable itself including the overshoot of its last step (`x += 16` from the last value
// below n reaches up to n + 15). nullopt when unknown, or when the loop's values leave the
// range the kernel records for its variable (every index bound relies on that range).
std::optional<int64_t> loop_header_magnitude(const Loop& loop, const index::Domain& ranges);

// A bound on every lane of an IndexValue: lane l is index + l * step.
std::optional<int64_t> index_value_magnitude(const Let& let, const index::Domain& ranges);

// Every index expression the printed kernel computes — loop bounds, loads, stores, index
// values, index definitions — with a description of where it is ("load of x").
void for_each_index_expr(const Kernel& kernel,
                         const std::function<void(const index::Expr&, const std::string&)>& f);

}  // namespace stax::kernel
