// What a 2-D pooling node computes, read from its arguments: ATen's
//   max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
//   avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
//              divisor_override)
//   _adaptive_avg_pool2d(self, output_size)
// and of their backward ops, which carry the forward's window parameters after the gradient:
//   max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
//                                    ceil_mode, indices)
//   avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
//                       count_include_pad, divisor_override)
//   _adaptive_avg_pool2d_backward(grad_output, self)   (output_size: grad_output's H and W)
// over an input [N, C, H, W] or [C, H, W] (the last two dims pooled, every leading index a
// plane of its own). Output position o along a spatial dim reads the window
//   kernel windows:   o * stride - padding + k * dilation, k in [0, kernel)  (avg: dilation 1)
//   adaptive windows: [floor(o * in / out), ceil((o + 1) * in / out))
// and positions outside the input are not part of it (never the maximum, never summed).
// A backward op's result is the gradient of `self` (its sizes and dtype): each input position
// gathers grad_output over the outputs whose window holds it (max pooling: those whose index
// is that position).
// What eager computes from there (which index a tie or a NaN gives, which divisor a window
// that hangs over the padding takes) is eager/pooling.cpp's file comment.
//
// Type inference, the eager interpreter, lowering, the comparison tolerance and the run limits
// all read pooling nodes through pooling_args, so they never disagree on which argument is
// which or on what eager refuses. The refusals are torch 2.13.0's (pooling_args.cpp lists
// them), each a GraphError naming the op and the shapes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace stax::ir {

enum class PoolingKind : uint8_t { Max, Average, AdaptiveAverage };

struct PoolingArgs {
  PoolingKind kind = PoolingKind::Max;
  bool backward = false;  // one of the *_backward ops
  ValueRef input;         // self
  ValueRef grad_output;   // backward ops: of the forward's result's sizes and the input's dtype
  ValueRef indices;       // max_pool2d_with_indices_backward: int64, of the result's sizes
  DType dtype = DType::Float32;      // of the input and of the pooled values
  std::vector<int64_t> input_sizes;  // [N, C, H, W] or [C, H, W]
  // Per spatial dim (H, W). A single given value is expanded; an empty stride is the kernel.
  // Adaptive pooling has no kernel: these keep their defaults there.
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0}, dilation{1, 1};
  bool ceil_mode = false;
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override;
  std::array<int64_t, 2> in{}, out{};  // the spatial sizes of the input and of the result

  // The dims before H and W (1 or 2).
  size_t leading_dims() const { return input_sizes.size() - 2; }
  // The input's sizes with H and W replaced by the output's.
  std::vector<int64_t> result_sizes() const;
  // Adaptive windows along spatial dim d: [start, end) of output position o.
  int64_t adaptive_start(size_t d, int64_t o) const;
  int64_t adaptive_end(size_t d, int64_t o) const;
  // Backward: the outputs along spatial dim d whose adaptive window holds input position i,
  // [first, end) (the adaptive windows with in and out swapped).
  int64_t adaptive_first_output(size_t d, int64_t i) const;
  int64_t adaptive_end_output(size_t d, int64_t i) const;
  // The loop extent of a window along each spatial dim: the kernel, or the largest adaptive
  // window (at least 1). Backward ops gather: the kernel (one term per window offset), or the
  // most adaptive windows that hold one input position.
  std::array<int64_t, 2> window() const;
  // window()[0] * window()[1]: the elements each result element reads at most.
  int64_t window_elements() const;
  // The most terms a result element sums: window_elements() forward; backward, per dim only
  // the offsets r whose position h + padding - r * dilation divides by the stride can meet an
  // output, at most ceil(kernel / (stride / gcd(stride, dilation))) of them (and no more than
  // the outputs).
  int64_t summed_terms() const;
};

// Whether `op` is one of the pooling ops above (forward or backward).
bool is_pooling_op(std::string_view op);

// Reads and checks a pooling node's arguments (GraphError on what eager refuses).
PoolingArgs pooling_args(const Graph& graph, const Node& node);

}  // namespace stax::ir
