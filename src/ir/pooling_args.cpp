// The meaning and the checks of a pooling node's arguments (pooling_args.h). The refusals are
// torch 2.13.0's, probed with torch.ops.aten.max_pool2d_with_indices.default,
// avg_pool2d.default and _adaptive_avg_pool2d.default on CPU (the messages follow torch's
// wording, with the op's name in front):
// max_pool2d_with_indices and avg_pool2d:
// - kernel_size of neither one nor two entries; stride of neither zero (the kernel), one nor
//   two; padding (and dilation) of neither one nor two;
// - a value that does not fit a 32-bit int (PyTorch's kernels take ints);
// - a kernel of 0 or less; a stride of 0 ("should not be zero") or less; a dilation of 0 or
//   less; a negative padding; a padding above half the kernel (kernel / 2, rounded down; the
//   dilation does not widen it);
// - an input neither 3-D [C, H, W] nor 4-D [N, C, H, W], or with a dim of size 0 other than a
//   4-D input's batch;
// - an output size below 1 in a spatial dim: (in + 2 padding - dilation (kernel - 1) - 1) /
//   stride + 1, the division rounding down, or up under ceil_mode, where a last window that
//   would start at or after in + padding (in the right padding) is dropped;
// - bool inputs, and for avg_pool2d the integer dtypes other than int64 (not implemented for
//   them, even on an empty batch); divisor_override = 0.
// _adaptive_avg_pool2d:
// - an output_size of other than two entries, or a negative one (0 is accepted: an empty
//   result);
// - an input neither 3-D nor 4-D, or with an H or W of size 0 (the batch and the channels may
//   be 0);
// - a dtype that is not floating when the result has elements (an empty result is computed
//   for any dtype).
// The backward ops check their window parameters and `self` as the forward does, and:
// - grad_output must have the forward result's sizes and self's dtype ("expected dtype float
//   for `gradOutput` but got dtype double"; "Expected a tensor of dimension 4 and
//   tensor.size[2] == 2 but got ..."), indices int64 ("expected scalar type Long") of the same
//   sizes;
// - max_pool2d_with_indices_backward takes floating dtypes only ("max_pool2d_backward" not
//   implemented for 'Long', even on an empty batch), avg_pool2d_backward floating and int64;
// - _adaptive_avg_pool2d_backward takes floating dtypes only (even for an empty result), a
//   grad_output of 3 or 4 dims with non-zero H and W, whose H and W are the output_size. Eager
//   does not check that grad_output's leading dims match self's, nor that self's H and W are
//   non-zero: it writes out of bounds there (glibc aborts with heap corruption). Stax refuses
//   both.
// Eager's max_pool2d_with_indices_backward does not check the values of `indices` either: -1 is
// skipped, any other index adds to that position of the plane, out of its bounds too (heap
// corruption). Those are data, not the graph's shapes: eager/pooling.cpp's file comment and
// lowering/lower_pooling_backward.cpp's say what the oracle and the compiled code do with them.
#include "ir/pooling_args.h"

#include <algorithm>
#include <climits>
#include <string>

#include "ir/op_schema.h"
#include "ir/text_format.h"

namespace stax::ir {

namespace {

// Argument positions, ATen's order.
// Argument positions, ATen's order. The backward ops put grad_output first and the forward's
// arguments after it (self at 1, ...): positions of the forward plus one.
constexpr size_t kSelf = 0, kKernel = 1, kStride = 2, kPadding = 3;
constexpr size_t kMaxDilation = 4, kMaxCeil = 5, kMaxIndices = 6;  // indices: backward only
constexpr size_t kAvgCeil = 4, kAvgCountIncludePad = 5, kAvgDivisor = 6;
constexpr size_t kOutputSize = 1;

using Wide = __int128;

// Python's floor division (PyTorch's div_rtn) for a positive divisor.
Wide floor_div(Wide a, Wide b) {
  const Wide q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// "(2x5x5)", as PyTorch spells per-plane sizes.
std::string plane(int64_t c, Wide h, Wide w) {
  return "(" + std::to_string(c) + "x" + std::to_string(static_cast<int64_t>(h)) + "x" +
         std::to_string(static_cast<int64_t>(w)) + ")";
}

// A list parameter of one or two entries (or none, for a stride: the kernel), expanded to two.
std::array<int64_t, 2> pair_param(const Node& n, size_t position, const char* name,
                                  const char* allowed, bool empty_ok,
                                  const std::array<int64_t, 2>& if_empty) {
  const std::vector<int64_t> list = int_list_arg(n, position).value_or(std::vector<int64_t>{});
  if (list.empty() && empty_ok) return if_empty;
  if (list.size() == 1) return {list[0], list[0]};
  if (list.size() == 2) return {list[0], list[1]};
  throw GraphError(n.op + ": " + name + " must " + allowed + ", got " + name + "=" +
                   format_sizes(list));
}

void check_fits_int(const Node& n, const std::array<int64_t, 2>& v, const char* name) {
  for (int64_t x : v) {
    if (x >= INT_MIN && x <= INT_MAX) continue;
    throw GraphError(n.op + ": " + name + " value cannot be converted to type int without " +
                     "overflow (PyTorch's pooling kernels take 32-bit ints), got " + name + "=" +
                     format_sizes({v[0], v[1]}));
  }
}

std::string pair_text(const char* a, const char* b, const std::array<int64_t, 2>& v) {
  return std::string(a) + ": " + std::to_string(v[0]) + " " + b + ": " + std::to_string(v[1]);
}

// The checks max_pool2d_with_indices and avg_pool2d share, and their output sizes.
void read_kernel_pool(const Graph& graph, const Node& n, PoolingArgs& a) {
  const bool max = a.kind == PoolingKind::Max;
  const std::string& op = n.op;
  const size_t b = a.backward ? 1 : 0;
  a.kernel = pair_param(n, b + kKernel, "kernel_size",
                        "either be a single int, or a tuple of two ints", false, {});
  a.stride = pair_param(n, b + kStride, "stride",
                        "either be omitted, a single int, or a tuple of two ints", true, a.kernel);
  a.padding = pair_param(n, b + kPadding, "padding",
                         "either be a single int, or a tuple of two ints", false, {});
  if (max) {
    a.dilation = pair_param(n, b + kMaxDilation, "dilation",
                            "be either a single int, or a tuple of two ints", false, {});
    a.ceil_mode = bool_arg(n, b + kMaxCeil);
  } else {
    a.ceil_mode = bool_arg(n, b + kAvgCeil);
    a.count_include_pad = bool_arg(n, b + kAvgCountIncludePad);
    a.divisor_override = optional_int_arg(n, b + kAvgDivisor);
  }
  check_fits_int(n, a.kernel, "kernel_size");
  check_fits_int(n, a.stride, "stride");
  check_fits_int(n, a.padding, "padding");
  check_fits_int(n, a.dilation, "dilation");
  if (a.kernel[0] <= 0 || a.kernel[1] <= 0) {
    throw GraphError(op + ": kernel size should be greater than zero, but got " +
                     pair_text("kH", "kW", a.kernel));
  }
  if (a.stride[0] == 0 || a.stride[1] == 0) {
    throw GraphError(
        op + ": stride should not be zero, got stride=" + format_sizes({a.stride[0], a.stride[1]}));
  }
  if (a.stride[0] < 0 || a.stride[1] < 0) {
    throw GraphError(op + ": stride should be greater than zero, but got " +
                     pair_text("dH", "dW", a.stride));
  }
  if (a.dilation[0] <= 0 || a.dilation[1] <= 0) {
    throw GraphError(op + ": dilation should be greater than zero, but got " +
                     pair_text("dilationH", "dilationW", a.dilation));
  }
  if (a.padding[0] < 0 || a.padding[1] < 0) {
    throw GraphError(op + ": pad must be non-negative, but got padding=" +
                     format_sizes({a.padding[0], a.padding[1]}));
  }
  for (size_t d = 0; d < 2; ++d) {
    if (a.padding[d] <= a.kernel[d] / 2) continue;
    throw GraphError(
        op + ": pad should be smaller than or equal to half of kernel size, but " +
        "got padH = " + std::to_string(a.padding[0]) + ", padW = " + std::to_string(a.padding[1]) +
        ", kH = " + std::to_string(a.kernel[0]) + ", kW = " + std::to_string(a.kernel[1]));
  }

  const std::vector<int64_t>& sizes = a.input_sizes;
  if (sizes.size() != 3 && sizes.size() != 4) {
    throw GraphError(op + ": expected a 3-D [C, H, W] or 4-D (batch mode) [N, C, H, W] input, " +
                     "got sizes " + format_sizes(sizes));
  }
  for (size_t d = sizes.size() == 4 ? 1 : 0; d < sizes.size(); ++d) {
    if (sizes[d] != 0) continue;
    throw GraphError(op + ": expected a 3-D or 4-D (batch mode) input with a dim of size 0 " +
                     "only in the batch, but got sizes " + format_sizes(sizes));
  }
  std::array<Wide, 2> out{};
  bool too_small = false;
  for (size_t d = 0; d < 2; ++d) {
    const Wide in = a.in[d], k = a.kernel[d], s = a.stride[d], p = a.padding[d];
    const Wide dil = a.dilation[d];
    Wide size = floor_div(in + 2 * p - dil * (k - 1) - 1 + (a.ceil_mode ? s - 1 : 0), s) + 1;
    // Under ceil_mode the last window starts inside the input or its left padding.
    if (a.ceil_mode && (size - 1) * s >= in + p) --size;
    if (size > INT64_MAX) throw GraphError(op + ": the output size overflows int64");
    out[d] = size;
    too_small = too_small || size < 1;
  }
  const int64_t channels = sizes[sizes.size() - 3];
  if (too_small) {
    throw GraphError(op + ": given input size: " + plane(channels, a.in[0], a.in[1]) +
                     ". Calculated output size: " + plane(channels, out[0], out[1]) +
                     ". Output size is too small (kernel_size " +
                     format_sizes({a.kernel[0], a.kernel[1]}) + ", stride " +
                     format_sizes({a.stride[0], a.stride[1]}) + ", padding " +
                     format_sizes({a.padding[0], a.padding[1]}) +
                     (max ? ", dilation " + format_sizes({a.dilation[0], a.dilation[1]}) : "") +
                     (a.ceil_mode ? ", ceil_mode" : "") + ")");
  }
  a.out = {static_cast<int64_t>(out[0]), static_cast<int64_t>(out[1])};

  const std::string dtype = std::string(dtype_name(a.dtype));
  if (a.dtype == DType::Bool) {
    throw GraphError(op + ": bool is not supported (PyTorch implements " +
                     (max ? "max_pool2d for floating and integer" : "avg_pool2d for floating") +
                     " dtypes" + (max ? "" : " and i64") + " only): input " +
                     format_type(graph.value(a.input).type));
  }
  if (max && a.backward && !is_floating(a.dtype)) {
    throw GraphError(op + ": " + dtype + " is not supported (PyTorch implements " +
                     "max_pool2d_backward for floating dtypes only)");
  }
  if (!max && is_integral(a.dtype) && a.dtype != DType::Int64) {
    throw GraphError(op + ": " + dtype + " is not supported (PyTorch implements avg_pool2d " +
                     "for floating dtypes and i64 only)");
  }
  if (a.divisor_override && *a.divisor_override == 0) {
    throw GraphError(op + ": divisor must be not zero (divisor_override=0)");
  }
}

void read_adaptive_pool(const Graph& graph, const Node& n, PoolingArgs& a) {
  const std::string& op = n.op;
  std::vector<int64_t> size;
  if (a.backward) {
    // The output size is grad_output's H and W (checked against self in check_gradients).
    const std::vector<int64_t>& grad = graph.value(a.grad_output).type.sizes;
    if (grad.size() != 3 && grad.size() != 4) {
      throw GraphError(op + ": expected a 3-D or 4-D grad_output, got sizes " + format_sizes(grad));
    }
    for (size_t d = grad.size() - 2; d < grad.size(); ++d) {
      if (grad[d] != 0) continue;
      throw GraphError(op + ": expected grad_output to have non-zero size for non-batch " +
                       "dimensions, but grad_output has sizes " + format_sizes(grad) +
                       " with dimension " + std::to_string(d) + " being empty");
    }
    size = {grad[grad.size() - 2], grad[grad.size() - 1]};
  } else {
    size = int_list_arg(n, kOutputSize).value_or(std::vector<int64_t>{});
  }
  if (size.size() != 2) {
    throw GraphError(op + ": output_size must be 2 values, got output_size=" + format_sizes(size));
  }
  if (size[0] < 0 || size[1] < 0) {
    throw GraphError(op +
                     ": output_size must not be negative, got output_size=" + format_sizes(size));
  }
  const std::vector<int64_t>& sizes = a.input_sizes;
  if (sizes.size() != 3 && sizes.size() != 4) {
    throw GraphError(op + ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got sizes " +
                     format_sizes(sizes));
  }
  for (size_t d = sizes.size() - 2; d < sizes.size(); ++d) {
    if (sizes[d] != 0) continue;
    throw GraphError(op + ": expected input to have non-zero size for non-batch dimensions, " +
                     "but input has sizes " + format_sizes(sizes) + " with dimension " +
                     std::to_string(d) + " being empty");
  }
  a.out = {size[0], size[1]};
  int64_t numel = size[0] * size[1];  // the result's byte size fits int64: so do these
  for (size_t d = 0; d + 2 < sizes.size(); ++d) numel *= sizes[d];
  // The backward refuses integer dtypes even for an empty result.
  if ((numel > 0 || a.backward) && !is_floating(a.dtype)) {
    throw GraphError(op + ": " + std::string(dtype_name(a.dtype)) + " is not supported " +
                     "(PyTorch implements adaptive_avg_pool2d" + (a.backward ? "_backward" : "") +
                     " for floating dtypes only): input " + format_type(graph.value(a.input).type));
  }
}

// A backward op's tensors against the forward's result: grad_output (and indices) of its
// sizes, grad_output of the input's dtype, indices int64.
void check_gradients(const Graph& graph, const Node& n, const PoolingArgs& a) {
  const std::vector<int64_t> expected = a.result_sizes();
  const TensorType& self = graph.value(a.input).type;
  const TensorType& grad = graph.value(a.grad_output).type;
  const std::string shapes =
      " (self " + format_type(self) + ", the forward's result " + format_sizes(expected) + ")";
  if (grad.dtype != a.dtype) {
    throw GraphError(n.op + ": expected grad_output of self's dtype, got " + format_type(grad) +
                     shapes);
  }
  if (grad.sizes != expected) {
    throw GraphError(n.op + ": expected grad_output of the forward result's sizes, got " +
                     format_type(grad) + shapes);
  }
  if (a.kind != PoolingKind::Max) return;
  const TensorType& indices = graph.value(a.indices).type;
  if (indices.dtype != DType::Int64 || indices.sizes != expected) {
    throw GraphError(n.op + ": expected int64 indices of the forward result's sizes, got " +
                     format_type(indices) + shapes);
  }
}

int64_t gcd(int64_t a, int64_t b) {
  return b == 0 ? a : gcd(b, a % b);
}

}  // namespace

std::vector<int64_t> PoolingArgs::result_sizes() const {
  std::vector<int64_t> sizes(input_sizes.begin(), input_sizes.end() - 2);
  sizes.push_back(out[0]);
  sizes.push_back(out[1]);
  return sizes;
}

int64_t PoolingArgs::adaptive_start(size_t d, int64_t o) const {
  return static_cast<int64_t>(Wide{o} * in[d] / out[d]);
}

int64_t PoolingArgs::adaptive_end(size_t d, int64_t o) const {
  return static_cast<int64_t>(((Wide{o} + 1) * in[d] + out[d] - 1) / out[d]);
}

int64_t PoolingArgs::adaptive_first_output(size_t d, int64_t i) const {
  return static_cast<int64_t>(Wide{i} * out[d] / in[d]);
}

int64_t PoolingArgs::adaptive_end_output(size_t d, int64_t i) const {
  return static_cast<int64_t>(((Wide{i} + 1) * out[d] + in[d] - 1) / in[d]);
}

std::array<int64_t, 2> PoolingArgs::window() const {
  if (kind != PoolingKind::AdaptiveAverage) return kernel;
  // Forward: the longest window [start(o), end(o)) of an output; backward: the longest run
  // [first_output(i), end_output(i)) of an input position, the same windows with in and out
  // swapped.
  std::array<int64_t, 2> w{1, 1};
  for (size_t d = 0; d < 2; ++d) {
    const int64_t from = backward ? in[d] : out[d], to = backward ? out[d] : in[d];
    if (from == 0) continue;
    if (to % from == 0) {
      w[d] = to / from;
    } else if (from <= (int64_t{1} << 16)) {
      for (int64_t o = 0; o < from; ++o) {
        const int64_t length = backward ? adaptive_end_output(d, o) - adaptive_first_output(d, o)
                                        : adaptive_end(d, o) - adaptive_start(d, o);
        w[d] = std::max(w[d], length);
      }
    } else {
      // No window is longer than to / from rounded up, plus the one position two neighbouring
      // windows share.
      w[d] = to / from + 2;
    }
  }
  return w;
}

int64_t PoolingArgs::summed_terms() const {
  if (!backward || kind == PoolingKind::AdaptiveAverage) return window_elements();
  int64_t terms = 1;
  for (size_t d = 0; d < 2; ++d) {
    const int64_t period = stride[d] / gcd(stride[d], dilation[d]);
    terms *= std::min((kernel[d] + period - 1) / period, out[d]);
  }
  return terms;
}

int64_t PoolingArgs::window_elements() const {
  const std::array<int64_t, 2> w = window();
  return w[0] * w[1];
}

bool is_pooling_op(std::string_view op) {
  return op == "max_pool2d_with_indices" || op == "avg_pool2d" || op == "_adaptive_avg_pool2d" ||
         op == "max_pool2d_with_indices_backward" || op == "avg_pool2d_backward" ||
         op == "_adaptive_avg_pool2d_backward";
}

PoolingArgs pooling_args(const Graph& graph, const Node& node) {
  PoolingArgs a;
  std::string_view op = node.op;
  constexpr std::string_view suffix = "_backward";
  if (op.size() > suffix.size() && op.substr(op.size() - suffix.size()) == suffix) {
    a.backward = true;
    op.remove_suffix(suffix.size());
  }
  if (op == "max_pool2d_with_indices") {
    a.kind = PoolingKind::Max;
  } else if (op == "avg_pool2d") {
    a.kind = PoolingKind::Average;
  } else if (op == "_adaptive_avg_pool2d") {
    a.kind = PoolingKind::AdaptiveAverage;
  } else {
    throw GraphError(node.op + ": not a pooling op");
  }
  const size_t self_at = a.backward ? kSelf + 1 : kSelf;
  if (a.backward) {
    tensor_arg(graph, node, 0);  // checks the kind
    a.grad_output = std::get<ValueRef>(node.args[0]);
    if (a.kind == PoolingKind::Max) {
      tensor_arg(graph, node, 1 + kMaxIndices);
      a.indices = std::get<ValueRef>(node.args[1 + kMaxIndices]);
    }
  }
  const TensorType& self = tensor_arg(graph, node, self_at).type;  // checks the kind
  a.input = std::get<ValueRef>(node.args[self_at]);
  a.dtype = self.dtype;
  a.input_sizes = self.sizes;
  if (self.sizes.size() >= 2) {
    a.in = {self.sizes[self.sizes.size() - 2], self.sizes[self.sizes.size() - 1]};
  }
  if (a.kind == PoolingKind::AdaptiveAverage) {
    read_adaptive_pool(graph, node, a);
  } else {
    read_kernel_pool(graph, node, a);
  }
  if (a.backward) check_gradients(graph, node, a);
  return a;
}

}  // namespace stax::ir
