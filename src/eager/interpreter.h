// The eager reference interpreter: runs a graph op by op on host tensors with plain loops over
// strided tensors, following PyTorch's semantics. It is the oracle every compiled result is
// checked against, so it favours obvious correctness over speed.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/view_strides.h"
#include "runtime/tensor.h"

namespace stax::eager {

// Runs `graph` on `inputs` (one per graph input, in order) and returns its outputs. Inputs must
// match the declared dtype and sizes (strides may differ: any layout works); a mismatch throws
// std::invalid_argument naming the input. Outputs are returned as produced: view ops return
// views sharing storage with their operand (possibly a graph input), like PyTorch.
// Errors at run time: std::invalid_argument for a view of an incompatible layout,
// std::runtime_error for integer division by zero or integers to negative powers, and
// stax::AllocationError naming the value and the bytes when memory runs out (never a bare
// std::bad_alloc).
std::vector<Tensor> run(const ir::Graph& graph, const std::vector<Tensor>& inputs);

// torch.Tensor.view's stride rule (shared with lowering).
using ir::view_strides;

}  // namespace stax::eager
