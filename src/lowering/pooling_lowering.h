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
  ResultLoops(const std::vector<int64_t>& sizes, bool channels_last)
      : StoreLoops(sizes, channels_last ? std::optional<size_t>(sizes.size() - 3) : std::nullopt) {}
};

// The value of an empty result of node `node` (no element to compute, nothing to read).
LoweredValue empty_result(const std::string& op, int node, DType dtype, std::vector<int64_t> sizes);

// One spatial dim of a kernel window: output position o, window offset r, input position
// o * stride - padding + r * dilation.
struct KernelDim {
  int64_t in, out, kernel, stride, padding, dilation;

  Expr start(const Expr& o) const { return o * stride - padding; }
  Expr position(const Expr& o, const Expr& r) const { return start(o) + r * dilation; }
  // Whether some window starts in the left padding, or ends past the input (ceil_mode's last
  // window, or the right padding): where loads need a mask.
  bool starts_before() const { return padding > 0; }
  bool ends_after() const {
    return out > 0 && (out - 1) * stride - padding + (kernel - 1) * dilation >= in;
  }
};

// The kernel window of each spatial dim of `a`.
std::array<KernelDim, 2> kernel_dims(const ir::PoolingArgs& a);

// avg_pool2d's count along one dim (eager/pooling.cpp): with count_include_pad the window
// clipped to the padded input, min(kernel, in + padding - start); without, clipped to the
// input, min(start + kernel, in) - max(start, 0). nullopt where it is the kernel for every o.
std::optional<OpsValue> avg_count(OpsHandler& h, const KernelDim& dim, bool count_include_pad,
                                  const Expr& o);

// _adaptive_avg_pool2d's window along one dim: [floor(o * in / out), ceil((o + 1) * in / out)).
struct AdaptiveDim {
  int64_t in, out;
  Expr start(const Expr& o) const { return index::floordiv(o * in, out); }
  Expr end(const Expr& o) const { return index::floordiv((o + 1) * in + (out - 1), out); }
  // Whether every window has the same length (in / out), the loop's extent.
  bool uniform() const { return in % out == 0; }
};

// Whether the value `load` of these sizes ([N, C, H, W] or [C, H, W]) is stored channels
// last, or computed from operands stored so: some load walks the channels contiguously and
// none the width.
bool reads_channels_last(const Loader& load, const std::vector<int64_t>& sizes);

}  // namespace stax::lowering::pooling
