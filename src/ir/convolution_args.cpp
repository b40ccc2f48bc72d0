// The meaning and the checks of a convolution node's arguments (convolution_args.h). The
// refusals are torch 2.13.0's, probed with torch.ops.aten.convolution.default on CPU:
// - operands of different dtypes (the bias included);
// - a weight of fewer than 3 dims, or of more than 5 (PyTorch has no 4-D convolution), and an
//   input whose rank is not the weight's: aten.convolution takes no unbatched input (only
//   torch.nn.functional.conv* add the batch dim);
// - stride, padding, dilation or output_padding lists of neither one entry nor one per spatial
//   dim ([] included), and a stride, dilation or groups of 0 or less, or a negative padding or
//   output_padding (output_padding is checked, and then ignored, for a forward convolution);
// - a weight dim 0 smaller than or not divisible by groups, input channels that do not match
//   the weight (C_in = weight[1] * groups forward, weight[0] transposed), a bias that is not 1-D
//   with C_out elements;
// - forward: a padded input smaller than the dilated kernel in some dim (so every forward
//   output is at least 1 wide);
// - a kernel dim of size 0;
// - an input with a spatial dim of size 0 unless its batch or channel dim is 0 as well (those
//   two are PyTorch's empty-input path, which computes an empty result for any dtype and
//   skips the checks below);
// - transposed, on a non-empty input: an output_padding not smaller than the stride or the
//   dilation of its dim, and an output size of 0 or less (a negative size also on an empty
//   input). oneDNN accepts a 0-wide output for float32 batches of 2 or more; the slow path,
//   every other dtype and PyTorch's meta function refuse it, and so does Stax;
// - on a non-empty input, the dtypes eager has no kernel for: bool; and int32, int16, int8 and
//   uint8 for a transposed or a dilated convolution (slow_conv_transpose and slow_conv_dilated
//   are not implemented for them; int64 and every floating dtype are). A bool input with no
//   channels and a bias is refused too: the empty-input path adds the bias as int64 and cannot
//   cast the sum back to bool.
#include "ir/convolution_args.h"

#include <string>

#include "ir/op_schema.h"
#include "ir/text_format.h"

namespace stax::ir {

namespace {

// Argument positions, ATen's order:
//   convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
//               groups)
//   convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
//                        transposed, output_padding, groups, output_mask)
struct Positions {
  size_t input, weight;
  std::optional<size_t> bias;  // a tensor (the forward op's); the backward op has bias_sizes
  size_t stride, padding, dilation, transposed, output_padding, groups;
};
constexpr size_t kGradOutput = 0, kBiasSizes = 3, kOutputMask = 10;
const Positions kForward{0, 1, 2, 3, 4, 5, 6, 7, 8};
const Positions kBackward{1, 2, std::nullopt, 4, 5, 6, 7, 8, 9};

// "(2 x 3)", as PyTorch spells per-channel sizes in its messages.
std::string by(const std::vector<int64_t>& sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? " x " : "") + std::to_string(sizes[i]);
  return s + ")";
}

std::string dims_text(size_t n) {
  return std::to_string(n) + (n == 1 ? " value" : " values");
}

// A parameter list with one entry per spatial dim; a single entry is repeated.
std::vector<int64_t> expand_param(const Node& n, size_t position, const char* name,
                                  size_t spatial) {
  std::vector<int64_t> list = int_list_arg(n, position).value_or(std::vector<int64_t>{});
  if (list.size() == 1 && spatial > 1) list.assign(spatial, list[0]);
  if (list.size() != spatial) {
    throw GraphError(n.op + ": expected " + name + " to be a single integer value or a list of " +
                     dims_text(spatial) + " to match the convolution dimensions, but got " + name +
                     "=" + format_sizes(list));
  }
  return list;
}

void check_each(const Node& n, const std::vector<int64_t>& list, const char* name, bool zero_ok) {
  for (int64_t v : list) {
    if (v > 0 || (zero_ok && v == 0)) continue;
    throw GraphError(n.op + ": " + (zero_ok ? "negative " : "non-positive ") + name +
                     " is not supported, got " + name + "=" + format_sizes(list));
  }
}

// a * b + c in 128 bits: the sizes and parameters fit int64, their combinations may not.
using Wide = __int128;

int64_t narrow(const Node& n, Wide v, const std::string& what) {
  if (v > INT64_MAX || v < INT64_MIN) throw GraphError(n.op + ": " + what + " overflows int64");
  return static_cast<int64_t>(v);
}

}  // namespace

size_t ConvolutionArgs::spatial_dims() const {
  return weight_sizes.size() - 2;
}

int64_t ConvolutionArgs::out_channels() const {
  return transposed ? weight_sizes[1] * groups : weight_sizes[0];
}

std::vector<int64_t> ConvolutionArgs::result_sizes() const {
  std::vector<int64_t> out = {input_sizes[0], out_channels()};
  if (!transposed && input_sizes[1] == 0) out[1] = 0;  // PyTorch's empty-input path
  for (size_t d = 0; d < spatial_dims(); ++d) {
    const Wide in = input_sizes[d + 2], k = weight_sizes[d + 2];
    const Wide s = stride[d], p = padding[d], dil = dilation[d];
    // convolution_args checked that these fit int64 and are not negative.
    const Wide size = transposed ? (in - 1) * s - 2 * p + dil * (k - 1) + output_padding[d] + 1
                                 : (in + 2 * p - dil * (k - 1) - 1) / s + 1;
    out.push_back(static_cast<int64_t>(size));
  }
  return out;
}

int64_t ConvolutionArgs::products_per_output() const {
  int64_t n = input_sizes[1] / groups;
  for (size_t d = 0; d < spatial_dims(); ++d) n *= weight_sizes[d + 2];
  return n;
}

namespace {

// The forward convolution a node names, read from the positions of its arguments and checked.
ConvolutionArgs read_convolution(const Graph& graph, const Node& node, const Positions& at) {
  const std::string& op = node.op;
  ConvolutionArgs a;
  const TensorType& input = tensor_arg(graph, node, at.input).type;  // checks the kind
  const TensorType& weight = tensor_arg(graph, node, at.weight).type;
  a.input = std::get<ValueRef>(node.args[at.input]);
  a.weight = std::get<ValueRef>(node.args[at.weight]);
  if (at.bias) a.bias = optional_tensor_arg(node, *at.bias);
  const TensorType* bias = a.bias ? &graph.value(*a.bias).type : nullptr;
  a.dtype = input.dtype;
  a.input_sizes = input.sizes;
  a.weight_sizes = weight.sizes;
  a.transposed = bool_arg(node, at.transposed);
  a.groups = int_arg(node, at.groups);

  // One dtype for every operand: PyTorch neither promotes nor casts.
  if (weight.dtype != input.dtype || (bias != nullptr && bias->dtype != input.dtype)) {
    std::string operands = "input " + format_type(input) + ", weight " + format_type(weight);
    if (bias != nullptr) operands += ", bias " + format_type(*bias);
    throw GraphError(op + ": expected input, weight and bias to have the same dtype, but got " +
                     operands);
  }

  const size_t rank = weight.sizes.size();
  if (rank < 3) {
    throw GraphError(op + ": weight should have at least three dimensions ([C_out, C_in/groups, " +
                     "kernel...]), got weight of size " + format_sizes(weight.sizes));
  }
  if (rank > 5) {
    throw GraphError(op + ": weight of size " + format_sizes(weight.sizes) + " has " +
                     std::to_string(rank - 2) +
                     " spatial dims; PyTorch implements 1-, 2- and 3-D convolutions only");
  }
  const size_t spatial = rank - 2;
  a.stride = expand_param(node, at.stride, "stride", spatial);
  a.padding = expand_param(node, at.padding, "padding", spatial);
  a.dilation = expand_param(node, at.dilation, "dilation", spatial);
  a.output_padding = expand_param(node, at.output_padding, "output_padding", spatial);
  check_each(node, a.padding, "padding", /*zero_ok=*/true);
  check_each(node, a.output_padding, "output_padding", /*zero_ok=*/true);
  check_each(node, a.stride, "stride", /*zero_ok=*/false);
  check_each(node, a.dilation, "dilation", /*zero_ok=*/false);
  if (a.groups <= 0) {
    throw GraphError(
        op + ": non-positive groups is not supported, got groups=" + std::to_string(a.groups));
  }

  if (input.sizes.size() != rank) {
    throw GraphError(op + ": expected " + std::to_string(rank) + "-dimensional input for " +
                     std::to_string(rank) + "-dimensional weight " + format_sizes(weight.sizes) +
                     ", but got " + std::to_string(input.sizes.size()) +
                     "-dimensional input of size " + format_sizes(input.sizes) +
                     " instead (the input needs a batch dim: [N, C_in, spatial...])");
  }
  const std::string given = op + ": given groups=" + std::to_string(a.groups) + ", ";
  if (weight.sizes[0] < a.groups) {
    throw GraphError(given + "expected weight to be at least " + std::to_string(a.groups) +
                     " at dimension 0, but got weight of size " + format_sizes(weight.sizes) +
                     " instead");
  }
  if (weight.sizes[0] % a.groups != 0) {
    throw GraphError(given + "expected weight to be divisible by " + std::to_string(a.groups) +
                     " at dimension 0, but got weight of size " + format_sizes(weight.sizes) +
                     " instead");
  }
  const int64_t channels = input.sizes[1];
  const int64_t want_channels = a.transposed ? weight.sizes[0] : weight.sizes[1] * a.groups;
  if (channels != want_channels) {
    throw GraphError(given + (a.transposed ? "transposed, " : "") + "weight of size " +
                     format_sizes(weight.sizes) + ", expected input" + format_sizes(input.sizes) +
                     " to have " + std::to_string(want_channels) + " channels, but got " +
                     std::to_string(channels) + " channels instead");
  }
  const int64_t out_channels = a.out_channels();
  if (bias != nullptr && (bias->sizes.size() != 1 || bias->sizes[0] != out_channels)) {
    throw GraphError(op + ": given " + (a.transposed ? "transposed, " : "") + "weight of size " +
                     format_sizes(weight.sizes) + ", expected bias to be 1-dimensional with " +
                     std::to_string(out_channels) + " elements, but got bias of size " +
                     format_sizes(bias->sizes) + " instead");
  }

  const std::vector<int64_t> in_spatial(input.sizes.begin() + 2, input.sizes.end());
  const std::vector<int64_t> kernel(weight.sizes.begin() + 2, weight.sizes.end());
  if (!a.transposed) {
    // The padded input must hold the dilated kernel (checked on empty inputs too).
    std::vector<int64_t> padded, dilated;
    bool fits = true;
    for (size_t d = 0; d < spatial; ++d) {
      const Wide p = Wide{in_spatial[d]} + 2 * Wide{a.padding[d]};
      const Wide k = Wide{a.dilation[d]} * (Wide{kernel[d]} - 1) + 1;
      padded.push_back(narrow(node, p, "the padded input size"));
      dilated.push_back(narrow(node, k, "the dilated kernel size"));
      fits = fits && p >= k;
    }
    if (!fits) {
      throw GraphError(op + ": calculated padded input size per channel: " + by(padded) +
                       ". Kernel size: " + by(dilated) +
                       ". Kernel size can't be greater than actual input size (input " +
                       format_sizes(input.sizes) + ", weight " + format_sizes(weight.sizes) +
                       ", padding " + format_sizes(a.padding) + ", dilation " +
                       format_sizes(a.dilation) + ")");
    }
  }
  for (int64_t k : kernel) {
    if (k > 0) continue;
    throw GraphError(op + ": kernel size should be greater than zero, but got kernel size " +
                     by(kernel) + " (weight of size " + format_sizes(weight.sizes) + ")");
  }

  // PyTorch's empty-input path: a batch or channel dim of 0 gives an empty result.
  const bool empty_input = input.sizes[0] == 0 || channels == 0;
  bool empty_spatial = false;
  for (int64_t s : in_spatial) empty_spatial = empty_spatial || s == 0;
  if (!empty_input && empty_spatial) {
    throw GraphError(op + ": only zero batch or zero channel inputs are supported, but got " +
                     "input shape: " + format_sizes(input.sizes));
  }

  if (a.transposed) {
    if (!empty_input) {
      for (size_t d = 0; d < spatial; ++d) {
        if (a.output_padding[d] < a.stride[d] || a.output_padding[d] < a.dilation[d]) continue;
        throw GraphError(op + ": output padding must be smaller than either stride or " +
                         "dilation, but got output_padding=" + format_sizes(a.output_padding) +
                         ", stride=" + format_sizes(a.stride) + ", dilation=" +
                         format_sizes(a.dilation) + " (spatial dim " + std::to_string(d) + ")");
      }
    }
    std::vector<int64_t> out;
    bool too_small = false;
    for (size_t d = 0; d < spatial; ++d) {
      const Wide size = (Wide{in_spatial[d]} - 1) * a.stride[d] - 2 * Wide{a.padding[d]} +
                        Wide{a.dilation[d]} * (Wide{kernel[d]} - 1) + a.output_padding[d] + 1;
      out.push_back(narrow(node, size, "the output size"));
      too_small = too_small || size < 0 || (size == 0 && !empty_input);
    }
    if (too_small) {
      throw GraphError(op + ": given input size per channel: " + by(in_spatial) +
                       ". Calculated output size per channel: " + by(out) +
                       ". Output size is too small (transposed, weight of size " +
                       format_sizes(weight.sizes) + ", stride " + format_sizes(a.stride) +
                       ", padding " + format_sizes(a.padding) + ", dilation " +
                       format_sizes(a.dilation) + ", output_padding " +
                       format_sizes(a.output_padding) + ")");
    }
  }

  // The dtypes eager computes in (see the file comment).
  const std::string dtype = std::string(dtype_name(a.dtype));
  if (!empty_input) {
    if (a.dtype == DType::Bool) {
      throw GraphError(op + ": bool is not supported (PyTorch implements convolution for " +
                       "floating dtypes and integers only): input " + format_type(input));
    }
    const bool narrow_int = is_integral(a.dtype) && a.dtype != DType::Int64;
    bool dilated = false;
    for (int64_t d : a.dilation) dilated = dilated || d != 1;
    if (narrow_int && a.transposed) {
      throw GraphError(op + ": a transposed convolution is not implemented for " + dtype +
                       " (PyTorch's slow_conv_transpose takes floating dtypes and i64 only)");
    }
    if (narrow_int && dilated) {
      throw GraphError(op + ": a dilated convolution (dilation " + format_sizes(a.dilation) +
                       ") is not implemented for " + dtype +
                       " (PyTorch's slow_conv_dilated takes floating dtypes and i64 only)");
    }
  } else if (a.dtype == DType::Bool && bias != nullptr && input.sizes[0] > 0) {
    throw GraphError(op + ": a bool input with no channels and a bias is not supported " +
                     "(PyTorch adds the bias as i64 and cannot cast the result back to bool)");
  }
  return a;
}

}  // namespace

ConvolutionArgs convolution_args(const Graph& graph, const Node& node) {
  if (node.op != "convolution") throw GraphError(node.op + ": not a convolution");
  return read_convolution(graph, node, kForward);
}

std::vector<int64_t> ConvolutionBackwardArgs::result_sizes(int result) const {
  if (!output_mask[static_cast<size_t>(result)]) return {0};
  if (result == 0) return forward.input_sizes;
  if (result == 1) return forward.weight_sizes;
  return {forward.out_channels()};
}

ConvolutionBackwardArgs convolution_backward_args(const Graph& graph, const Node& node) {
  const std::string& op = node.op;
  if (op != "convolution_backward") throw GraphError(op + ": not a convolution_backward");
  ConvolutionBackwardArgs b;
  b.forward = read_convolution(graph, node, kBackward);
  const TensorType& grad = tensor_arg(graph, node, kGradOutput).type;
  b.grad_output = std::get<ValueRef>(node.args[kGradOutput]);
  b.bias_sizes = int_list_arg(node, kBiasSizes);
  const std::vector<int64_t> mask = std::get<std::vector<int64_t>>(node.args[kOutputMask]);
  if (mask.size() != 3) {
    throw GraphError(op + ": expected output_mask to hold 3 bools, got " +
                     std::to_string(mask.size()));
  }
  for (size_t k = 0; k < 3; ++k) b.output_mask[k] = mask[k] != 0;
  const ConvolutionArgs& f = b.forward;
  if (f.transposed) {
    throw GraphError(op + ": the backward of a transposed convolution is not supported by Stax " +
                     "yet (input " + format_sizes(f.input_sizes) + ", weight " +
                     format_sizes(f.weight_sizes) + ")");
  }
  if (grad.dtype != f.dtype) {
    throw GraphError(op + ": expected grad_output to have the input's dtype " +
                     std::string(dtype_name(f.dtype)) + ", but got grad_output " +
                     format_type(grad));
  }
  if (!is_floating(f.dtype)) {
    throw GraphError(op + ": not implemented for " + std::string(dtype_name(f.dtype)) +
                     " (PyTorch's convolution gradients take floating dtypes only)");
  }
  if (grad.sizes != f.result_sizes()) {
    throw GraphError(op + ": expected grad_output of size " + format_sizes(f.result_sizes()) +
                     " (the convolution's output: input " + format_sizes(f.input_sizes) +
                     ", weight " + format_sizes(f.weight_sizes) + "), but got " +
                     format_sizes(grad.sizes));
  }
  return b;
}

int64_t convolution_products_per_element(const Graph& graph, const Node& node) {
  if (node.op == "convolution") return convolution_args(graph, node).products_per_output();
  const ConvolutionBackwardArgs b = convolution_backward_args(graph, node);
  const ConvolutionArgs& f = b.forward;
  Wide n = 1;
  if (node.result_index == 0) {
    n = f.out_channels() / f.groups;
    for (size_t d = 0; d < f.spatial_dims(); ++d) n *= f.weight_sizes[d + 2];
  } else {
    const std::vector<int64_t> out = f.result_sizes();
    n = out[0];
    for (size_t d = 2; d < out.size(); ++d) n *= out[d];
  }
  return narrow(node, n, "the reduction length");
}

}  // namespace stax::ir
