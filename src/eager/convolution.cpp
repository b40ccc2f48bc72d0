// The convolution of the eager interpreter (issue 15): ATen's convolution with 1, 2 or 3
// spatial dims, forward or transposed, grouped (depthwise included), strided, padded and
// dilated, with or without a bias (ir/convolution_args.h reads and checks the arguments).
// A direct reference implementation: one sum per output element over the input channels of
// its group and the kernel offsets, clear loops rather than fast ones. What torch 2.13.0
// computes on CPU, probed:
// - Floating dtypes: each product and the sum in double, then the bias added in double and
//   the result rounded once to the dtype. This is the oracle: products of float32, float16 and
//   bfloat16 values are exact in double and a double sum of them is the exact sum to within
//   2^-53 relative per addition, so the result is the exact convolution rounded once, the one
//   every accumulation order (PyTorch's, oneDNN's and Stax's, all in float32 for the three)
//   approximates; the comparison tolerance (driver/tolerance.h) covers float32 accumulation.
//   float64 is summed in double, as PyTorch does.
// - Zero padding contributes no product: an input position outside the input is left out of
//   the sum, as oneDNN (float32, bfloat16) computes it. PyTorch's slow path (float64, float16,
//   and float32 in some shapes) multiplies the padding's zeros by the weight, so an inf or NaN
//   weight tap that only meets padding gives NaN there; Stax does not follow it.
// - A transposed convolution is the gradient of the forward one with respect to its input:
//   output position y receives in[x] * weight[k] for every x and k with
//   x * stride - padding + k * dilation = y; output_padding only widens the result (its extra
//   positions receive what falls there, else the bias alone).
// - Integer dtypes (int64 everywhere; int32, int16, int8, uint8 forward and undilated, which is
//   what eager implements): exact arithmetic modulo 2^64, then wrapped to the dtype, which is
//   what PyTorch's wrapping arithmetic in the dtype gives in any order (probed with grouped,
//   strided, padded convolutions with a bias whose sums overflow each dtype).
// - Empty results (a batch of 0, or a forward input with no channels, which PyTorch gives no
//   output channels) are returned without reading the operands.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "eager/ops.h"
#include "eager/row_major.h"
#include "ir/convolution_args.h"

namespace stax::eager::detail {

namespace {

// The sizes of a convolution with its spatial dims padded in front to 3 (a missing dim has
// size 1, kernel 1, stride 1, no padding, dilation 1, which leaves every sum unchanged).
struct Geometry {
  bool transposed = false;
  int64_t batch = 0;
  int64_t groups = 1;
  int64_t in_channels = 0;    // C_in
  int64_t in_per_group = 0;   // C_in / groups
  int64_t out_per_group = 0;  // C_out / groups
  std::array<int64_t, 3> in{}, out{}, kernel{}, stride{}, padding{}, dilation{};

  int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  int64_t out_volume() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_volume() const { return kernel[0] * kernel[1] * kernel[2]; }
};

Geometry geometry_of(const ir::ConvolutionArgs& a, const std::vector<int64_t>& result_sizes) {
  Geometry g;
  g.transposed = a.transposed;
  g.batch = a.input_sizes[0];
  g.groups = a.groups;
  g.in_channels = a.input_sizes[1];
  g.in_per_group = g.in_channels / a.groups;
  g.out_per_group = a.out_channels() / a.groups;
  const size_t lead = 3 - a.spatial_dims();
  for (size_t d = 0; d < 3; ++d) {
    const bool present = d >= lead;
    const size_t s = d - lead;
    g.in[d] = present ? a.input_sizes[s + 2] : 1;
    g.out[d] = present ? result_sizes[s + 2] : 1;
    g.kernel[d] = present ? a.weight_sizes[s + 2] : 1;
    g.stride[d] = present ? a.stride[s] : 1;
    g.padding[d] = present ? a.padding[s] : 0;
    g.dilation[d] = present ? a.dilation[s] : 1;
  }
  return g;
}

// Integer values as unsigned 64-bit words, whose arithmetic wraps as the dtype's does.
std::vector<uint64_t> gather_words(const Tensor& t) {
  std::vector<uint64_t> out;
  for (int64_t v : gather_ints(t)) out.push_back(static_cast<uint64_t>(v));
  return out;
}

// The input position that kernel offset k reads for output position o along one dim, or -1
// when it falls outside the input (padding) or, transposed, between the stride's positions.
int64_t input_position(const Geometry& g, size_t d, int64_t o, int64_t k) {
  if (!g.transposed) {
    const int64_t x = o * g.stride[d] - g.padding[d] + k * g.dilation[d];
    return x >= 0 && x < g.in[d] ? x : -1;
  }
  // y = x * stride - padding + k * dilation, solved for x.
  const int64_t t = o + g.padding[d] - k * g.dilation[d];
  if (t < 0 || t % g.stride[d] != 0) return -1;
  const int64_t x = t / g.stride[d];
  return x < g.in[d] ? x : -1;
}

// Calls store(row-major output position, output channel, sum) for every output element, the
// sum of its products in `Acc` (double, or uint64_t wrapping for integers). `in` is
// [N, C_in, in...] and `w` the weight ([C_out, C_in/groups, kernel...], transposed
// [C_in, C_out/groups, kernel...]), both row-major.
template <typename Acc, typename Store>
void convolve(const Geometry& g, const std::vector<Acc>& in, const std::vector<Acc>& w,
              Store store) {
  const int64_t in_volume = g.in_volume(), kernel_volume = g.kernel_volume();
  const int64_t out_channels = g.out_per_group * g.groups;
  // Input positions per output position and kernel offset, one table per dim (-1: none).
  std::array<std::vector<int64_t>, 3> taps;
  for (size_t d = 0; d < 3; ++d) {
    for (int64_t o = 0; o < g.out[d]; ++o) {
      for (int64_t k = 0; k < g.kernel[d]; ++k) taps[d].push_back(input_position(g, d, o, k));
    }
  }
  int64_t position = 0;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      const int64_t group = oc / g.out_per_group;
      const int64_t oc_in_group = oc % g.out_per_group;
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            Acc sum = 0;
            for (int64_t c = 0; c < g.in_per_group; ++c) {
              const int64_t ic = group * g.in_per_group + c;
              const Acc* x = in.data() + (n * g.in_channels + ic) * in_volume;
              // The weight's [kernel...] block for this pair of channels.
              const Acc* k_block = w.data() + (g.transposed ? ic * g.out_per_group + oc_in_group
                                                            : oc * g.in_per_group + c) *
                                                  kernel_volume;
              for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
                const int64_t x0 = taps[0][static_cast<size_t>(o0 * g.kernel[0] + k0)];
                if (x0 < 0) continue;
                for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
                  const int64_t x1 = taps[1][static_cast<size_t>(o1 * g.kernel[1] + k1)];
                  if (x1 < 0) continue;
                  const Acc* row = x + (x0 * g.in[1] + x1) * g.in[2];
                  const Acc* k_row = k_block + (k0 * g.kernel[1] + k1) * g.kernel[2];
                  for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
                    const int64_t x2 = taps[2][static_cast<size_t>(o2 * g.kernel[2] + k2)];
                    if (x2 >= 0) sum += row[x2] * k_row[k2];
                  }
                }
              }
            }
            store(position++, oc, sum);
          }
        }
      }
    }
  }
}

}  // namespace

Tensor eval_convolution(const Env& env, const ir::Node& node) {
  const ir::ConvolutionArgs a = ir::convolution_args(env.graph, node);
  const ir::TensorType& type = env.result_type(node);
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  if (out.numel() == 0) return out;
  const Geometry g = geometry_of(a, type.sizes);
  const size_t input_position = 0, weight_position = 1, bias_position = 2;
  const Tensor& input = env.tensor(node, input_position);
  const Tensor& weight = env.tensor(node, weight_position);
  const std::optional<Tensor> bias =
      a.bias ? std::optional<Tensor>(env.tensor(node, bias_position)) : std::nullopt;
  if (is_floating(a.dtype)) {
    std::vector<double> sums(static_cast<size_t>(out.numel()));
    const std::vector<double> bias_values = bias ? gather_floats(*bias) : std::vector<double>{};
    convolve<double>(g, gather_floats(input), gather_floats(weight),
                     [&](int64_t o, int64_t channel, double sum) {
                       if (bias) sum += bias_values[static_cast<size_t>(channel)];
                       sums[static_cast<size_t>(o)] = sum;
                     });
    write_all(out, [&](const std::vector<int64_t>& index, int64_t p) {
      out.set(index, round_to(a.dtype, sums[static_cast<size_t>(p)]));
    });
  } else {
    // Unsigned 64-bit arithmetic wraps (signed overflow would be undefined); the store wraps
    // to the dtype.
    std::vector<uint64_t> sums(static_cast<size_t>(out.numel()));
    const std::vector<uint64_t> bias_values = bias ? gather_words(*bias) : std::vector<uint64_t>{};
    convolve<uint64_t>(g, gather_words(input), gather_words(weight),
                       [&](int64_t o, int64_t channel, uint64_t sum) {
                         if (bias) sum += bias_values[static_cast<size_t>(channel)];
                         sums[static_cast<size_t>(o)] = sum;
                       });
    write_all(out, [&](const std::vector<int64_t>& index, int64_t p) {
      store_int(out, index, static_cast<int64_t>(sums[static_cast<size_t>(p)]));
    });
  }
  return out;
}

// convolution_backward: the three gradients by one scatter over every product of the forward
// convolution, in double (the oracle; eager's float32 kernels sum in another order), each
// result rounded once. The node is one of the three results (result_index); a result the
// output mask leaves out is the empty [0] tensor its type says.
Tensor eval_convolution_backward(const Env& env, const ir::Node& node) {
  const ir::ConvolutionBackwardArgs b = ir::convolution_backward_args(env.graph, node);
  const ir::ConvolutionArgs& a = b.forward;
  const ir::TensorType& type = env.result_type(node);
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  if (!b.output_mask[static_cast<size_t>(node.result_index)]) return out;
  const size_t grad_position = 0, input_position_arg = 1, weight_position = 2;
  const Geometry g = geometry_of(a, a.result_sizes());
  const std::vector<double> grad = gather_floats(env.tensor(node, grad_position));
  const std::vector<double> in = gather_floats(env.tensor(node, input_position_arg));
  const std::vector<double> w = gather_floats(env.tensor(node, weight_position));
  std::vector<double> sums(static_cast<size_t>(out.numel()), 0.0);
  const int64_t in_volume = g.in_volume(), out_volume = g.out_volume();
  const int64_t kernel_volume = g.kernel_volume();
  const int64_t out_channels = g.out_per_group * g.groups;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      const int64_t group = oc / g.out_per_group;
      for (int64_t o = 0; o < out_volume; ++o) {
        const int64_t o0 = o / (g.out[1] * g.out[2]), o1 = o / g.out[2] % g.out[1];
        const int64_t o2 = o % g.out[2];
        const double dy = grad[static_cast<size_t>((n * out_channels + oc) * out_volume + o)];
        if (node.result_index == 2) {
          sums[static_cast<size_t>(oc)] += dy;
          continue;
        }
        for (int64_t c = 0; c < g.in_per_group; ++c) {
          const int64_t ic = group * g.in_per_group + c;
          for (int64_t k = 0; k < kernel_volume; ++k) {
            const int64_t k0 = k / (g.kernel[1] * g.kernel[2]);
            const int64_t k1 = k / g.kernel[2] % g.kernel[1], k2 = k % g.kernel[2];
            const int64_t x0 = input_position(g, 0, o0, k0), x1 = input_position(g, 1, o1, k1);
            const int64_t x2 = input_position(g, 2, o2, k2);
            if (x0 < 0 || x1 < 0 || x2 < 0) continue;
            const int64_t x =
                (n * g.in_channels + ic) * in_volume + (x0 * g.in[1] + x1) * g.in[2] + x2;
            const int64_t wk = (oc * g.in_per_group + c) * kernel_volume + k;
            if (node.result_index == 0) {
              sums[static_cast<size_t>(x)] += dy * w[static_cast<size_t>(wk)];
            } else {
              sums[static_cast<size_t>(wk)] += dy * in[static_cast<size_t>(x)];
            }
          }
        }
      }
    }
  }
  write_all(out, [&](const std::vector<int64_t>& index, int64_t p) {
    out.set(index, round_to(a.dtype, sums[static_cast<size_t>(p)]));
  });
  return out;
}

}  // namespace stax::eager::detail
