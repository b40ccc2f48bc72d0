// How closely a compiled output must match its eager reference in the fuzzer and the
// differential sweep: the project's per-output tolerance (driver/tolerance.h: the dtype's
// assert_close default widened for the sums and means feeding the output), further widened
// for the accumulating reductions that tolerance does not model.
//
// - var, std, var_mean and logsumexp add their elements like a sum, but not in the cascade
//   of driver/tolerance.h (Welford's updates, a sum of exponentials): a run of L additions
//   whose relative errors are independent and uniform in [-u, u] has an error of standard
//   deviation about u sqrt(L) / 3 of its result (the argument of driver/tolerance.h without
//   the cascade's bound on the run), so each allows 4 standard deviations, 4 u sqrt(L) / 3.
// - prod multiplies L factors, and every rounding's relative error passes unchanged into the
//   product: standard deviation u sqrt(L) / sqrt(3), allowance 4 u sqrt(L) / sqrt(3).
// u is the unit roundoff of the accumulation type (float32 for float16, bfloat16 and
// float32, float64 for float64). Allowances are added in quadrature to the rtol; atol stays
// the dtype's floor.
#pragma once

#include <cstddef>

#include "driver/tolerance.h"
#include "ir/graph.h"

namespace stax::fuzz {

Tolerance reference_tolerance(const ir::Graph& graph, size_t output);

}  // namespace stax::fuzz
