// Where the parts of a fused node sit in its kernel IR, as the builder lays them out: shared
// outer loops, then one Block per nest holding its pointwise loops, whose innermost body
// holds the accumulator declarations, the reduction loops and what follows them.
#pragma once

#include <vector>

#include "kernel/kernel_ir.h"

namespace stax::kernel {

struct NestView {
  Stmt* block = nullptr;         // the nest's Block
  std::vector<Stmt*> pointwise;  // its pointwise loops, outer to inner
  Block* inner = nullptr;        // the innermost pointwise body (or the Block's)
  std::vector<Stmt*> reduction;  // the reduction loops, outer to inner (scalar form)
};

// The shared outer loops of the kernel, outer to inner.
std::vector<Stmt*> outer_loops(Kernel& kernel);
// The body the nests are in (the innermost outer loop's, or the kernel's).
Block& nests_body(Kernel& kernel);
std::vector<NestView> nests(Kernel& kernel);

// The first loop of `role` directly in `block`, or nullptr.
Stmt* find_loop(Block& block, LoopRole role);

}  // namespace stax::kernel
