// Algorithm 8.1 lives with the kernel IR passes (kernel/parallel_depth.h); code generation
// and its tests name it here too.
#pragma once

#include "kernel/parallel_depth.h"

namespace stax::codegen {
using kernel::kMinParallelChunk;
using kernel::parallel_depth;
}  // namespace stax::codegen
