// Builds the scalar kernel IR of one fused node by running its node bodies under an
// IR-building OpsHandler (the define-by-run interface of lowering/ops_handler.h): shared
// outer loops, per-outer-iteration local arrays, then each nest's pointwise loops, its
// accumulators, its reduction loops with the body, and what follows them (reduced values
// and their stores). Values are deduplicated (CSE); elided buffers stay values, localized
// buffers become local arrays indexed without the outer variables.
#pragma once

#include "kernel/kernel_ir.h"
#include "scheduler/schedule.h"

namespace stax::kernel {

// Error codes of the kernel error variable: 0 is no error, kDivisionByZeroCode integer
// division by zero, and every indirect index check its own code from
// kFirstIndexErrorCode on, numbered across the whole module by `next_error_code`.
inline constexpr int kDivisionByZeroCode = 1;
inline constexpr int kFirstIndexErrorCode = 2;

Kernel build_kernel(const scheduler::Schedule& schedule, const scheduler::FusedNode& fused,
                    int& next_error_code);

}  // namespace stax::kernel
