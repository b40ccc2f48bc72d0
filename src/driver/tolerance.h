// How closely a compiled result must match the eager oracle. Float32 starts from PyTorch's
// assert_close defaults (rtol 1.3e-6, atol 1e-5). A reduction of length L sums in another
// order than the oracle (W lane accumulators, combined at the end; the oracle accumulates in
// double): the rounding errors of the float partial sums grow like sqrt(L) for inputs of
// magnitude about 1, so both tolerances scale by sqrt(L). A dropped or repeated element
// (an error of the order of one input) stays far outside this bound.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace stax {

struct Tolerance {
  double rtol;
  double atol;
};

// The longest reduction (number of elements combined into one output) in the graph; 1 if none.
int64_t longest_reduction(const ir::Graph& graph);
Tolerance comparison_tolerance(DType dtype, int64_t reduction_length);

}  // namespace stax
