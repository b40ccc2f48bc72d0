// The 2-D pooling ops of the eager interpreter: max_pool2d_with_indices, avg_pool2d and
// _adaptive_avg_pool2d (ir/pooling_args.h reads and checks the arguments). Each input plane
// (every index of the leading dims) is pooled on its own, one window per output element, in
// PyTorch's scan order (rows, then columns). What torch 2.13.0 computes on CPU, probed with
// contiguous and channels-last inputs of every dtype it takes (the results agree bit for bit):
// - max pool: a running maximum from the dtype's lowest value (-inf for floats) that takes an
//   element when it is greater or NaN. So a NaN wins over everything, and the *last* NaN of
//   the window gives the index (a later NaN replaces an earlier one); among equal maxima the
//   *first* wins. The index is h * W + w in the input plane. Before any element is taken the
//   index is the window's first position inside the input (its start moved down by whole
//   dilations past the padding): that is what a window of only -inf (or only the integer
//   dtype's lowest value) gives, and a dilated window that holds no input position at all
//   gives -inf and that position, outside the plane.
// - avg_pool2d: a window [start, start + kernel) per dim, start = o * stride - padding, clipped
//   to [-padding, in + padding) for count_include_pad's divisor (so a ceil_mode window that
//   hangs over the right padding counts only what lies inside the padding) and to [0, in) for
//   the elements summed and for the divisor without count_include_pad; divisor_override
//   replaces either. The sum runs in PyTorch's opmath type (float for float32, float16 and
//   bfloat16, double for float64) in scan order and is divided there, then rounded once to
//   the dtype. int64 sums wrap and divide truncating toward zero (a divisor of -1 wraps too;
//   PyTorch's division traps on INT64_MIN / -1).
// - _adaptive_avg_pool2d: windows [floor(o * in / out), ceil((o + 1) * in / out)) per dim,
//   summed in the opmath type in scan order, then divided by the window's height and then by
//   its width (two roundings, as PyTorch's kernel divides).
// The backward ops (their arguments ir/pooling_args.h) scatter grad_output into a zeroed
// gradient of the input, output by output in scan order, adding in the dtype itself (a 16-bit
// float sum is rounded after every addition: no float accumulator), for contiguous and
// channels-last operands alike (probed in torch 2.13.0 for float32, bfloat16, float16, float64;
// the results agree bit for bit with this order):
// - max_pool2d_with_indices_backward: grad_input[indices[o]] += grad_output[o]. An index of -1
//   is skipped; eager adds at any other index, even outside the output's window; outside the
//   plane it writes out of bounds (heap corruption): the oracle refuses those at run time.
// - avg_pool2d_backward: each element of o's window (inside the input) += grad_output[o] /
//   divisor(o), the quotient rounded to the dtype once (the forward's divisor rules); int64
//   divides truncating and adds wrapping.
// - _adaptive_avg_pool2d_backward: each element of o's window += grad_output[o] / height /
//   width, rounded to the dtype after each division. (Eager's channels-last kernel, taken for
//   a channels-last grad_output, divides once by height * width in the channels its vector
//   loop covers, 8 float32, 4 float64 or 16 16-bit lanes with torch's AVX2 kernels: one
//   rounding apart. The oracle follows the contiguous kernel, as the forward's does.)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "eager/ops.h"
#include "eager/row_major.h"
#include "ir/pooling_args.h"

namespace stax::eager::detail {

namespace {

// The planes and the plane sizes of a pooling node, and a loop over its output elements in
// row-major order: visit(plane, oh, ow, flat output position).
struct Planes {
  int64_t count = 1;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;

  explicit Planes(const ir::PoolingArgs& a)
      : in_h(a.in[0]), in_w(a.in[1]), out_h(a.out[0]), out_w(a.out[1]) {
    for (size_t d = 0; d < a.leading_dims(); ++d) count *= a.input_sizes[d];
  }

  template <typename Visit>
  void each_output(Visit visit) const {
    int64_t p = 0;
    for (int64_t plane = 0; plane < count; ++plane) {
      for (int64_t oh = 0; oh < out_h; ++oh) {
        for (int64_t ow = 0; ow < out_w; ++ow) visit(plane, oh, ow, p++);
      }
    }
  }
};

// One dim of a max pool window: the positions start, start + dilation, ... below `end`, the
// first of them moved past the padding.
struct MaxWindow {
  int64_t first, end, step;
};
MaxWindow max_window(const ir::PoolingArgs& a, size_t d, int64_t o) {
  int64_t start = o * a.stride[d] - a.padding[d];
  const int64_t end = std::min(start + (a.kernel[d] - 1) * a.dilation[d] + 1, a.in[d]);
  while (start < 0) start += a.dilation[d];
  return {start, end, a.dilation[d]};
}

// max pool over `x` (planes of in_h * in_w, row-major), values of type T compared from
// `lowest`: writes value(p) and index(p) for each output position p.
template <typename T>
void max_pool(const ir::PoolingArgs& a, const std::vector<T>& x, T lowest, std::vector<T>& values,
              std::vector<int64_t>& indices) {
  const Planes planes(a);
  planes.each_output([&](int64_t plane, int64_t oh, int64_t ow, int64_t p) {
    const MaxWindow h = max_window(a, 0, oh), w = max_window(a, 1, ow);
    const T* in = x.data() + plane * planes.in_h * planes.in_w;
    T best = lowest;
    int64_t best_index = h.first * planes.in_w + w.first;
    for (int64_t ih = h.first; ih < h.end; ih += h.step) {
      for (int64_t iw = w.first; iw < w.end; iw += w.step) {
        const int64_t i = ih * planes.in_w + iw;
        const T v = in[i];
        bool take = v > best;
        if constexpr (std::is_floating_point_v<T>) take = take || std::isnan(v);
        if (take) {
          best = v;
          best_index = i;
        }
      }
    }
    values[static_cast<size_t>(p)] = best;
    indices[static_cast<size_t>(p)] = best_index;
  });
}

// One dim of an average pool window: the summed positions [first, end) and the extent
// count_include_pad counts.
struct AvgWindow {
  int64_t first, end, padded_count;
};
AvgWindow avg_window(const ir::PoolingArgs& a, size_t d, int64_t o) {
  const int64_t start = o * a.stride[d] - a.padding[d];
  const int64_t padded_end = std::min(start + a.kernel[d], a.in[d] + a.padding[d]);
  return {std::max<int64_t>(start, 0), std::min(padded_end, a.in[d]), padded_end - start};
}

// The sum of a window of one plane in type Acc, in scan order.
template <typename Acc, typename T>
Acc window_sum(const T* plane, int64_t in_w, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
  Acc sum = 0;
  for (int64_t ih = h0; ih < h1; ++ih) {
    for (int64_t iw = w0; iw < w1; ++iw) sum += static_cast<Acc>(plane[ih * in_w + iw]);
  }
  return sum;
}

// avg_pool2d over floats: sums and divides in Acc (float or double).
template <typename Acc>
std::vector<double> avg_pool_floats(const ir::PoolingArgs& a, const std::vector<double>& x) {
  const Planes planes(a);
  std::vector<double> out(static_cast<size_t>(planes.count * planes.out_h * planes.out_w));
  planes.each_output([&](int64_t plane, int64_t oh, int64_t ow, int64_t p) {
    const AvgWindow h = avg_window(a, 0, oh), w = avg_window(a, 1, ow);
    if (h.first >= h.end || w.first >= w.end) {
      out[static_cast<size_t>(p)] = 0;  // not reached: every window meets the input
      return;
    }
    const int64_t divisor = a.divisor_override    ? *a.divisor_override
                            : a.count_include_pad ? h.padded_count * w.padded_count
                                                  : (h.end - h.first) * (w.end - w.first);
    const double* in = x.data() + plane * planes.in_h * planes.in_w;
    const Acc sum = window_sum<Acc>(in, planes.in_w, h.first, h.end, w.first, w.end);
    out[static_cast<size_t>(p)] = static_cast<double>(sum / static_cast<Acc>(divisor));
  });
  return out;
}

// avg_pool2d over int64: wrapping sums, truncating division.
std::vector<int64_t> avg_pool_ints(const ir::PoolingArgs& a, const std::vector<int64_t>& x) {
  const Planes planes(a);
  std::vector<int64_t> out(static_cast<size_t>(planes.count * planes.out_h * planes.out_w));
  planes.each_output([&](int64_t plane, int64_t oh, int64_t ow, int64_t p) {
    const AvgWindow h = avg_window(a, 0, oh), w = avg_window(a, 1, ow);
    if (h.first >= h.end || w.first >= w.end) {
      out[static_cast<size_t>(p)] = 0;
      return;
    }
    const int64_t divisor = a.divisor_override    ? *a.divisor_override
                            : a.count_include_pad ? h.padded_count * w.padded_count
                                                  : (h.end - h.first) * (w.end - w.first);
    const int64_t* in = x.data() + plane * planes.in_h * planes.in_w;
    // Unsigned arithmetic wraps (signed overflow would be undefined).
    uint64_t sum = 0;
    for (int64_t ih = h.first; ih < h.end; ++ih) {
      for (int64_t iw = w.first; iw < w.end; ++iw) {
        sum += static_cast<uint64_t>(in[ih * planes.in_w + iw]);
      }
    }
    const auto s = static_cast<int64_t>(sum);
    out[static_cast<size_t>(p)] = divisor == -1 ? static_cast<int64_t>(0 - sum) : s / divisor;
  });
  return out;
}

// _adaptive_avg_pool2d: sums in Acc, then / height / width.
template <typename Acc>
std::vector<double> adaptive_avg_pool(const ir::PoolingArgs& a, const std::vector<double>& x) {
  const Planes planes(a);
  std::vector<double> out(static_cast<size_t>(planes.count * planes.out_h * planes.out_w));
  planes.each_output([&](int64_t plane, int64_t oh, int64_t ow, int64_t p) {
    const int64_t h0 = a.adaptive_start(0, oh), h1 = a.adaptive_end(0, oh);
    const int64_t w0 = a.adaptive_start(1, ow), w1 = a.adaptive_end(1, ow);
    const double* in = x.data() + plane * planes.in_h * planes.in_w;
    const Acc sum = window_sum<Acc>(in, planes.in_w, h0, h1, w0, w1);
    out[static_cast<size_t>(p)] =
        static_cast<double>(sum / static_cast<Acc>(h1 - h0) / static_cast<Acc>(w1 - w0));
  });
  return out;
}

Tensor store_floats(DType dtype, const std::vector<int64_t>& sizes,
                    const std::vector<double>& values) {
  Tensor out = Tensor::empty(dtype, sizes);
  write_all(out, [&](const std::vector<int64_t>& index, int64_t p) {
    out.set(index, round_to(dtype, values[static_cast<size_t>(p)]));
  });
  return out;
}

Tensor store_ints(DType dtype, const std::vector<int64_t>& sizes,
                  const std::vector<int64_t>& values) {
  Tensor out = Tensor::empty(dtype, sizes);
  write_all(out, [&](const std::vector<int64_t>& index, int64_t p) {
    store_int(out, index, values[static_cast<size_t>(p)]);
  });
  return out;
}

}  // namespace

std::vector<Tensor> eval_max_pool2d_with_indices(const Env& env, const ir::Node& node) {
  const ir::PoolingArgs a = ir::pooling_args(env.graph, node);
  const std::vector<int64_t> sizes = a.result_sizes();
  const Tensor& input = env.tensor(node, 0);
  const Planes planes(a);
  const auto n = static_cast<size_t>(planes.count * planes.out_h * planes.out_w);
  std::vector<int64_t> indices(n);
  Tensor values;
  if (is_floating(a.dtype)) {
    std::vector<double> maxima(n);
    max_pool<double>(a, gather_floats(input), -std::numeric_limits<double>::infinity(), maxima,
                     indices);
    values = store_floats(a.dtype, sizes, maxima);
  } else {
    std::vector<int64_t> maxima(n);
    max_pool<int64_t>(a, gather_ints(input), integer_range(a.dtype).lowest, maxima, indices);
    values = store_ints(a.dtype, sizes, maxima);
  }
  return {values, store_ints(DType::Int64, sizes, indices)};
}

Tensor eval_pooling(const Env& env, const ir::Node& node) {
  const ir::PoolingArgs a = ir::pooling_args(env.graph, node);
  const std::vector<int64_t> sizes = a.result_sizes();
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  // An empty result is computed for any dtype (adaptive pooling's dtype check needs elements).
  if (numel == 0) return Tensor::empty(a.dtype, sizes);
  const Tensor& input = env.tensor(node, 0);
  const bool f64 = a.dtype == DType::Float64;
  if (a.kind == ir::PoolingKind::AdaptiveAverage) {
    const std::vector<double> x = gather_floats(input);
    return store_floats(a.dtype, sizes,
                        f64 ? adaptive_avg_pool<double>(a, x) : adaptive_avg_pool<float>(a, x));
  }
  if (!is_floating(a.dtype))
    return store_ints(a.dtype, sizes, avg_pool_ints(a, gather_ints(input)));
  const std::vector<double> x = gather_floats(input);
  return store_floats(a.dtype, sizes,
                      f64 ? avg_pool_floats<double>(a, x) : avg_pool_floats<float>(a, x));
}

namespace {

// A backward op's scatter over floats (values as doubles of the dtype): for each plane and
// each output p in scan order, add(plane's gradient, oh, ow, p) adds grad_output[p]'s share to
// the gradient, each sum rounded to the dtype.
std::vector<double> backward_floats(const ir::PoolingArgs& a, const std::vector<double>& grad,
                                    const std::vector<int64_t>& indices) {
  const Planes planes(a);
  const int64_t plane_size = planes.in_h * planes.in_w;
  std::vector<double> gi(static_cast<size_t>(planes.count * plane_size), 0.0);
  auto add = [&](double* plane, int64_t at, double v) {
    plane[at] = round_to(a.dtype, plane[at] + v);
  };
  planes.each_output([&](int64_t plane, int64_t oh, int64_t ow, int64_t p) {
    double* g = gi.data() + plane * plane_size;
    const double go = grad[static_cast<size_t>(p)];
    if (a.kind == ir::PoolingKind::Max) {
      const int64_t at = indices[static_cast<size_t>(p)];
      if (at == -1) return;
      if (at < 0 || at >= plane_size) {
        throw std::invalid_argument(
            "max_pool2d_with_indices_backward: index " + std::to_string(at) +
            " outside the input plane of " + std::to_string(planes.in_h) + "x" +
            std::to_string(planes.in_w) + " (eager writes out of bounds there)");
      }
      add(g, at, go);
      return;
    }
    int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0;
    double share = 0;
    if (a.kind == ir::PoolingKind::Average) {
      const AvgWindow h = avg_window(a, 0, oh), w = avg_window(a, 1, ow);
      const int64_t divisor = a.divisor_override    ? *a.divisor_override
                              : a.count_include_pad ? h.padded_count * w.padded_count
                                                    : (h.end - h.first) * (w.end - w.first);
      // One rounding of the quotient (double division rounded to the dtype gives the float
      // division's result: 53 bits are more than twice float's 24, plus 2).
      share = round_to(a.dtype, go / static_cast<double>(divisor));
      h0 = h.first, h1 = h.end, w0 = w.first, w1 = w.end;
    } else {
      h0 = a.adaptive_start(0, oh), h1 = a.adaptive_end(0, oh);
      w0 = a.adaptive_start(1, ow), w1 = a.adaptive_end(1, ow);
      share = round_to(a.dtype, round_to(a.dtype, go / static_cast<double>(h1 - h0)) /
                                    static_cast<double>(w1 - w0));
    }
    for (int64_t ih = h0; ih < h1; ++ih) {
      for (int64_t iw = w0; iw < w1; ++iw) add(g, ih * planes.in_w + iw, share);
    }
  });
  return gi;
}

// avg_pool2d_backward over int64: truncating quotients, wrapping sums.
std::vector<int64_t> avg_backward_ints(const ir::PoolingArgs& a, const std::vector<int64_t>& grad) {
  const Planes planes(a);
  const int64_t plane_size = planes.in_h * planes.in_w;
  std::vector<uint64_t> gi(static_cast<size_t>(planes.count * plane_size), 0);
  planes.each_output([&](int64_t plane, int64_t oh, int64_t ow, int64_t p) {
    const AvgWindow h = avg_window(a, 0, oh), w = avg_window(a, 1, ow);
    const int64_t divisor = a.divisor_override    ? *a.divisor_override
                            : a.count_include_pad ? h.padded_count * w.padded_count
                                                  : (h.end - h.first) * (w.end - w.first);
    const int64_t go = grad[static_cast<size_t>(p)];
    const uint64_t share =
        divisor == -1 ? 0 - static_cast<uint64_t>(go) : static_cast<uint64_t>(go / divisor);
    uint64_t* g = gi.data() + plane * plane_size;
    for (int64_t ih = h.first; ih < h.end; ++ih) {
      for (int64_t iw = w.first; iw < w.end; ++iw) g[ih * planes.in_w + iw] += share;
    }
  });
  return {gi.begin(), gi.end()};
}

}  // namespace

Tensor eval_pooling_backward(const Env& env, const ir::Node& node) {
  const ir::PoolingArgs a = ir::pooling_args(env.graph, node);
  const std::vector<int64_t>& sizes = a.input_sizes;
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return Tensor::empty(a.dtype, sizes);
  const Tensor& grad = env.tensor(node, 0);
  if (!is_floating(a.dtype)) {
    return store_ints(a.dtype, sizes, avg_backward_ints(a, gather_ints(grad)));
  }
  std::vector<int64_t> indices;
  if (a.kind == ir::PoolingKind::Max) indices = gather_ints(env.tensor(node, 7));
  return store_floats(a.dtype, sizes, backward_floats(a, gather_floats(grad), indices));
}

}  // namespace stax::eager::detail
