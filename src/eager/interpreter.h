// The eager reference interpreter: runs a graph op by op on host tensors with plain loops over
// strided tensors, following PyTorch's semantics. It is the oracle every compiled result is
// checked against, so it favours obvious correctness over speed.
//
// Reductions compute what PyTorch's CPU kernels give, as exactly as one rounding allows:
// - sum of floats: the elements (converted to the result dtype) are added in double and the
//   sum is rounded once to the result dtype. PyTorch accumulates float32 in float32 (f16 and
//   bf16 in float32) with cascade summation, whose partial sums are within a few ulps of the
//   exact ones, so both overflow to +-inf exactly when the exact sum leaves the dtype's range
//   (three 3e38 sum to inf). NaN anywhere gives NaN, +inf and -inf together give NaN. The
//   accumulator starts at +0 (as PyTorch's), so a sum of -0.0 elements only is +0.0; an
//   empty sum is +0.0.
// - mean of floats: PyTorch's CPU mean is sum(...).div_(count): the sum rounded to the dtype,
//   then divided by count in the dtype's opmath type (float for f32/f16/bf16, double for
//   f64) and rounded to the dtype. So the mean of three 3e38 is inf, not 3e38; an empty mean
//   is NaN (0 / 0).
// - sum of integers and bool: exact 64-bit arithmetic wrapping modulo 2^64 (the result is
//   int64 as in PyTorch), then stored in the result dtype.
// - amax / amin: NaN anywhere gives NaN; otherwise the largest / smallest element, exactly.
//   -0.0 and +0.0 compare equal: of the two, the first in row-major order is returned
//   (PyTorch leaves that sign unspecified: its vectorized and scalar paths differ, and
//   comparisons treat the two zeros as equal). A reduction over zero elements throws.
// - prod: floats multiply in double, rounded once (PyTorch multiplies in the dtype, so a
//   product whose partial products leave the dtype's range may overflow there and not here);
//   integers and bool exactly modulo 2^64 like sum, result int64 unless dtype=. An empty
//   product is 1.
// - argmax / argmin: the row-major position among the reduced elements (dim=None: the
//   flattened index) of the first extreme element; a NaN is the extreme and its first
//   occurrence wins; result int64; zero elements throw; bool inputs are refused (as PyTorch).
// - any / all: nonzero (NaN included) is true; empty: any False, all True; result bool, u8
//   for u8 inputs (as PyTorch).
// - var / std / var_mean: Welford's update in double (every floating dtype, as PyTorch's CPU
//   kernel), M2 / max(0, N - correction), the square root for std, rounded once; var / std of
//   a whole f32/f64 tensor are PyTorch's two passes (mean() in the dtype, then the sum of
//   (x - mean)^2 in double). N <= correction gives inf (NaN when M2 is 0, so an empty or
//   one-element var with correction 1 is NaN, as PyTorch); any inf or NaN gives NaN. var_mean
//   returns {var, mean}, its mean Welford's (no overflow of a sum) and NaN when empty, as
//   PyTorch's.
// - logsumexp: PyTorch's composition, m = amax(x), shift = m unless m is +-inf (then 0),
//   log(sum(exp(x - shift))) + shift, each step rounded to the result dtype as the ATen ops it
//   is made of are, the sum in double. So an inf maximum gives inf, all -inf gives -inf, an
//   empty reduction -inf; integral/bool inputs compute in f32.
//
// Matrix products (mm, bmm, addmm, baddbmm; contraction.cpp states the rules): floats summed
// in double and rounded once, bias included; integers modulo 2^width; beta == 0 drops the bias.
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
// A graph with copy_ (issue 16, point 6) writes the new values into those inputs' storage
// after the last node ran; every node reads the inputs' old values.
// `all_values`, when given, receives the value of every graph value by ValueRef::index (the
// comparison tolerance measures condition numbers on them: driver/tolerance.h).
std::vector<Tensor> run(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                        std::vector<Tensor>* all_values = nullptr);

// torch.Tensor.view's stride rule (shared with lowering).
using ir::view_strides;

}  // namespace stax::eager
