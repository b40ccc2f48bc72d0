// What the lowerings of the pooling ops (lower_pooling.cpp) and of their backward ops
// (lower_pooling_backward.cpp) share: the windows along one spatial dim as index expressions,
// avg_pool2d's divisor, and the layout rule (channels last in, channels last out).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/pooling_args.h"
#include "lowering/channels_last.h"
#include "lowering/loop_ir.h"
#include "lowering/lowered_value.h"
#include "lowering/ops_handler.h"

namespace stax::lowering::pooling {

using index::Expr;

OpsValue int64_constant(OpsHandler& h, int64_t v);

// The loops over a pooling result or gradient ([N,] C, H, W): row-major, or the channels
// innermost where the operand read is stored channels last (the kernels then vectorize along
// contiguous channels, and the result is stored channels last, as eager's kernels store it).
struct ResultLoops : StoreLoops {
  ResultLoops(const std::vector<Expr>& sizes, bool channels_last)
      : StoreLoops(sizes, channels_last ? std::optional<size_t>(sizes.size() - 3) : std::nullopt) {}
};

// The value of an empty result of node `node` (no element to compute, nothing to read).
LoweredValue empty_result(const std::string& op, int node, DType dtype, std::vector<Expr> sizes);

// Issue 33: the spatial sizes of a pooling node's input and of its pooled result (a backward
// node's grad_output) as expressions over the size symbols (constants for a static node),
// with the symbols' facts, which the window rules below reason with: a mask or a divisor
// that a static node drops where no window reaches past the input is kept unless that is
// proved for every size.
struct PoolingSizes {
  std::array<Expr, 2> in, out;
  index::SymbolTable symbols;
  // Whether a >= b for every value of the symbols.
  bool proved_at_least(const Expr& a, const Expr& b) const;
};
PoolingSizes pooling_sizes(const ir::PoolingArgs& a, const std::vector<Expr>& input_sizes,
                           const std::vector<Expr>& pooled_sizes,
                           const index::SymbolTable& symbols);

// One spatial dim of a kernel window: output position o, window offset r, input position
// o * stride - padding + r * dilation.
struct KernelDim {
  Expr in, out;
  int64_t kernel, stride, padding, dilation;
  // What kernel_dims proves of the windows (PoolingSizes): whether the last window may end
  // past the input (ceil_mode's last window, or the right padding), may end past the input
  // and its right padding, and whether an input position may lie past every output's window
  // start (the backward's gather then masks o < out).
  bool may_end_after_input = true;
  bool may_end_after_padded_input = true;
  bool may_pass_last_output = true;

  Expr start(const Expr& o) const { return o * stride - padding; }
  Expr position(const Expr& o, const Expr& r) const { return start(o) + r * dilation; }
  // Whether some window starts in the left padding, or ends past the input: where loads need
  // a mask.
  bool starts_before() const { return padding > 0; }
  bool ends_after() const { return may_end_after_input; }
};

// The kernel window of each spatial dim of `a`.
std::array<KernelDim, 2> kernel_dims(const ir::PoolingArgs& a, const PoolingSizes& sizes);

// avg_pool2d's count along one dim (eager/pooling.cpp): with count_include_pad the window
// clipped to the padded input, min(kernel, in + padding - start); without, clipped to the
// input, min(start + kernel, in) - max(start, 0). nullopt where it is the kernel for every o.
std::optional<OpsValue> avg_count(OpsHandler& h, const KernelDim& dim, bool count_include_pad,
                                  const Expr& o);

// _adaptive_avg_pool2d's window along one dim: [floor(o * in / out), ceil((o + 1) * in / out)).
// Either size may be a size symbol (the backward swaps them).
struct AdaptiveDim {
  Expr in, out;
  // Whether every window has the same length (in / out) at every size: then the loop's
  // extent, and no window needs a mask.
  bool uniform = false;
  // Throws SymbolicSizesRefused where `out` is over the symbols but no divisor the index
  // algebra takes (a window's result, as (s0 + 3) // 4), unless `in` is 1.
  AdaptiveDim(Expr in_size, Expr out_size, const PoolingSizes& sizes);
  // With in == 1 (the backward of a global average: every position meets output 0) the
  // window is [0, 1) for every o < out.
  Expr start(const Expr& o) const { return in == Expr(1) ? Expr(0) : index::floordiv(o * in, out); }
  Expr end(const Expr& o) const {
    return in == Expr(1) ? Expr(1) : index::floordiv((o + 1) * in + (out - 1), out);
  }
};

// The loop extent of the windows along each spatial dim (PoolingArgs::window(), which a
// static node gives): over size symbols an adaptive window's length where every window has
// it, else a bound of every window's length that holds at every size (masked per window).
std::array<Expr, 2> window_extents(const ir::PoolingArgs& a, const PoolingSizes& sizes);

// Whether the value `load` of these sizes ([N, C, H, W] or [C, H, W]) is stored channels
// last, or computed from operands stored so: some load walks the channels contiguously and
// none the width.
bool reads_channels_last(const Loader& load, const std::vector<Expr>& sizes,
                         const index::SymbolTable& symbols);

}  // namespace stax::lowering::pooling
