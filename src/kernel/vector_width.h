// The vector width of one nest (Section 8.1: "a 512-bit register holds 16 float32 or 32
// float16 values"; the width is what the instruction set's register holds of the data). The
// kernel-form pass asks it for each loop it may vectorize; the reason goes on the nest's
// decision (NestDecision::vector_width_reason) for explain.
#pragma once

#include <string>

#include "kernel/kernel_ir.h"
#include "kernel/passes.h"

namespace stax::kernel {

struct VectorWidth {
  int lanes = 1;
  std::string reason;
};

// The lanes of `body` vectorized along `var`: one register of the widest element type among
// the values it holds in vectors, so that no value needs more than one register per vector
// and the narrow ones fill as much of theirs as the widest allows. Counted: the values that
// vary along `var` (loads, arithmetic, conversions), the operands of that arithmetic, the
// values stored along `var` and the accumulators of the body's reductions. Not counted: index
// arithmetic (index values and the integers computed only from them and from values that do
// not vary), which the index-narrowing pass may make int32 (issue 6 point 8) and which follows
// the data's lanes. 16-bit floats count as the float32 they are computed in (lowering rounds
// after every op, docs/kernel_header_api.md). Every width this gives, 1 to 64 lanes of any
// element type, is one the kernel header implements at every level (stax::Vec<T, N>).
VectorWidth choose_vector_width(const Kernel& kernel, const Block& body, const std::string& var,
                                const TargetOptions& target);

}  // namespace stax::kernel
