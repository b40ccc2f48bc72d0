// Prints kernel IR as indented C++ against the kernel-header API (/work/kernel_api.md):
// stax::Vec<T, N>, stax::op_<name>, stax::convert<U>, reduce_*, argmax_update, Welford,
// VecSumOuter, any_zero, any_out_of_range. It takes no decision: every loop, lane count,
// access form and accumulator layout is in the IR. The same printer renders the IR after
// each pass for `stax explain --ir`.
#pragma once

#include <string>

#include "kernel/kernel_ir.h"

namespace stax::kernel {

// The C++ name of a buffer's pointer in kernel functions (inputs are in_<name>).
std::string pointer_name(const std::string& buffer, bool is_input);
// The C++ type of a value: float, stax::Vec<float, 16>, ...
std::string cpp_value_type(const ValueType& type);
// A C++ literal of `value` converted to `dtype` by ir::convert_scalar (float16/bfloat16 are
// held as float): exact integers, INT64_MIN as (-9223372036854775807LL - 1); floats round to
// the dtype; NaN and infinities are spelled with builtins.
std::string cpp_literal(const ir::Scalar& value, DType dtype);

// The statements of the kernel, indented by `indent` levels of two spaces. Kernels with
// checks expect `int32_t* stax_error` and `int64_t* stax_error_value` in scope.
std::string print_kernel(const Kernel& kernel, int indent = 0);

// The comment line naming the graph ops the kernel's loops compute, in graph order (issue 7
// point 6): "// ops of op0_op1: exp (e), sum (s)\n". The generated C++ has one before each
// kernel function per loop it holds; explain --ir prints it above the IR.
std::string print_source_ops(const Kernel& kernel);

// Declarations a kernel needs before the parallel region it runs in (the thread partials of
// split reductions).
std::string print_kernel_preamble(const Kernel& kernel, int indent = 0);

}  // namespace stax::kernel
