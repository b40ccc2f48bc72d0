// The kernel IR verifier, run after every pass in debug builds and in tests: operand dtypes
// per op_info/op_accepts, values defined before use (in an enclosing scope), vector widths
// consistent across operands, loads, stores and accumulators, masks bool, checks on integer
// values, accumulators declared before they are updated or read.
#pragma once

#include <string>

#include "kernel/kernel_ir.h"

namespace stax::kernel {

// Throws std::logic_error naming the kernel, `after` (the pass) and the problem.
void verify(const Kernel& kernel, const std::string& after);

// Whether lower_kernel verifies after each pass: debug builds, or STAX_VERIFY_KERNEL_IR=1.
bool verification_enabled();

}  // namespace stax::kernel
