// What a convolution node (ATen's convolution: 1, 2 or 3 spatial dims, transposed or not,
// grouped, dilated, with or without a bias) computes, read from its arguments. With G groups,
// C_in/G input channels and C_out/G output channels per group, and kernel offsets k:
//   forward:    out[n, o, y] = bias[o] + sum_{c, k} in[n, g*C_in/G + c, y*stride - padding +
//               k*dilation] * weight[o, c, k], o in group g, positions outside the input left
//               out (zero padding);
//   transposed: the gradient of the forward one with respect to its input: out[n, o, y] =
//               bias[o] + sum_{c, k, x : x*stride - padding + k*dilation = y} in[n, c, x] *
//               weight[c, o - g*C_out/G, k], c in group g of the input channels.
// Type inference, the eager interpreter, lowering and the comparison tolerance all read
// convolution nodes through convolution_args, so they never disagree on which argument is
// which or on what eager refuses. The refusals are torch 2.13.0's (convolution_args.cpp lists
// them), each a GraphError naming the op and the shapes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace stax::ir {

struct ConvolutionArgs {
  ValueRef input, weight;
  std::optional<ValueRef> bias;
  DType dtype = DType::Float32;      // all operands' dtype (eager refuses mixed)
  std::vector<int64_t> input_sizes;  // [N, C_in, spatial...]
  // [C_out, C_in/groups, kernel...] (transposed: [C_in, C_out/groups, kernel...])
  std::vector<int64_t> weight_sizes;
  // One entry per spatial dim (a single value is expanded, as eager does).
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;

  size_t spatial_dims() const;
  // C_out: weight_sizes[0] (transposed: weight_sizes[1] * groups).
  int64_t out_channels() const;
  // [N, C_out, out spatial...]: (in + 2 padding - dilation (kernel - 1) - 1) / stride + 1
  // (transposed: (in - 1) stride - 2 padding + dilation (kernel - 1) + output_padding + 1).
  // PyTorch gives a forward convolution of an input with no channels (C_in = 0) a result with
  // no channels too, whatever C_out is (its empty-input path); so does this.
  std::vector<int64_t> result_sizes() const;
  // C_in/groups * prod(kernel): the products summed into each output element (the reduction
  // length). A transposed convolution's output element sums at most this many (the kernel
  // offsets whose input position falls on the stride grid and inside the input).
  int64_t products_per_output() const;
};

// Reads and checks a convolution node's arguments (GraphError on what eager refuses).
ConvolutionArgs convolution_args(const Graph& graph, const Node& node);

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask): the gradients of the forward convolution
// (`forward`, whose bias is unset) with respect to its input, weight and bias, three results
// of which output_mask says which are computed. A result the mask leaves out (eager returns
// None) is an empty tensor of size [0]. Floating dtypes only, and not transposed (Stax
// refuses that with its name); grad_output must have the forward result's sizes and dtype.
struct ConvolutionBackwardArgs {
  ConvolutionArgs forward;
  ValueRef grad_output;
  std::optional<std::vector<int64_t>> bias_sizes;  // read by eager's meta function only
  std::array<bool, 3> output_mask{};
  // grad_input: the input's sizes; grad_weight: the weight's; grad_bias: [C_out].
  std::vector<int64_t> result_sizes(int result) const;
};
ConvolutionBackwardArgs convolution_backward_args(const Graph& graph, const Node& node);

// The products summed into each element of a convolution or convolution_backward node's
// result (its reduction length, for tolerances and work limits): a convolution's
// products_per_output(); grad_input's C_out/groups * prod(kernel) (at most: stride and padding
// leave some out); grad_weight's and grad_bias's N * prod(output spatial dims).
int64_t convolution_products_per_element(const Graph& graph, const Node& node);

}  // namespace stax::ir
