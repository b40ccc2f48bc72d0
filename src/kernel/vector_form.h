// The vector form of scalar kernel IR along one loop variable (Section 8.1): every value that
// depends on the variable becomes a vector of N lanes (lane l is iteration var + l), the
// others stay scalar until combined with a vector (then broadcast). Loads and stores take the
// contiguous, strided or gather form their index allows; a masked tail (count < N) reads and
// writes only its lanes, and its reductions and checks see only them. The same analysis
// tells the kernel-form pass whether a body has a vector form at all (vector_obstacle).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernel/kernel_ir.h"

namespace stax::kernel {

struct VectorContext {
  std::string var;  // the vectorized loop variable (after substitution)
  int lanes = 1;
  std::optional<index::Expr> count;  // a masked tail: lanes >= count do not exist
  // Applied to every index first (column blocks: x1 -> x1_block + 16 * k).
  std::map<std::string, index::Expr> substitution;
  // Accumulator renaming (column blocks own their accumulators); unmapped ids stay.
  std::map<int, int> accumulators;
};

// The vector form of `scalar`; values get fresh ids in `kernel`.
Block vectorize_block(Kernel& kernel, const Block& scalar, const VectorContext& context);

// The vector form of `scalar` along `var` before it is made: the values that vary with the
// variable (they become vectors), the values stored at an index that varies (stored as
// vectors, broadcast where they do not vary), and why there is no vector form: an index value,
// load or store whose index is not affine in the variable, a value that varies along it
// stored at an index that does not, an indirect index that does not enter its accesses
// linearly (nullopt: it has one; the sets are complete only then).
struct VectorAnalysis {
  std::set<int> varying;
  std::vector<int> stored_along;
  std::optional<std::string> obstacle;
};
VectorAnalysis analyze_vector_form(const Kernel& kernel, const Block& scalar,
                                   const std::string& var);

// Why `scalar` has no vector form along `var` (analyze_vector_form's obstacle).
std::optional<std::string> vector_obstacle(const Kernel& kernel, const Block& scalar,
                                           const std::string& var);

// The access form of an index along `var` when no indirect index is vectorized: Contiguous,
// Strided (with *stride) or nullopt when the stride is not constant.
std::optional<AccessForm> affine_access_form(const index::Expr& index, const std::string& var,
                                             const index::Domain& ranges, int64_t* stride);

}  // namespace stax::kernel
