// What the lowerings of convolution and convolution_backward share (lower_convolution.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/convolution_args.h"
#include "lowering/loop_ir.h"

namespace stax::lowering {

// What eager's kernels accumulate a convolution's products in: float32 for the half types,
// float64 for itself; integers wrap, and a wrapping int64 sum converts to the dtype exactly
// as a wrapping sum in the dtype would.
DType convolution_accumulation_dtype(DType dtype);

// The window of `c` for a call computing `direction`'s value, of `result_sizes`.
ConvolutionWindow convolution_window(const ir::ConvolutionArgs& c,
                                     ConvolutionWindow::Direction direction,
                                     std::vector<index::Expr> result_sizes);

// `load` at `at` converted to `acc`, read under `inside` (when set) and zero outside it: a
// window position in the padding.
OpsValue masked_load(OpsHandler& h, const Loader& load, const std::vector<index::Expr>& at,
                     const std::optional<OpsValue>& inside, DType acc);

}  // namespace stax::lowering
