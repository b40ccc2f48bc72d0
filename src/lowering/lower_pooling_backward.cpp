// Lowering of the pooling backward ops (ir/pooling_args.h) to Stax loop nests. Eager scatters
// grad_output into the input's gradient output by output (eager/pooling.cpp); Stax gathers
// instead, so that every result element is a sum over window offsets written once, with no
// atomics or ordering between threads: idx = (leading dims..., h, w), ridx = (rh, rw) over
//   kernel windows (max_pool2d_with_indices_backward, avg_pool2d_backward): for window offset
//     r = kernel - 1 - ridx per dim, the output o = (i + padding - r * dilation) / stride where
//     that divides and lies in [0, out) (masked loads elsewhere):
//       max  grad_output[o] where indices[o] == h * W + w, else 0;
//       avg  grad_output[o] / divisor(o) (the forward's divisor rules), the quotient rounded
//            to the dtype as eager rounds it;
//   adaptive windows (_adaptive_avg_pool2d_backward): the outputs whose window holds i,
//     o = floor(i * out / in) + ridx below ceil((i + 1) * out / in), each grad_output[o] /
//     height(o) / width(o), rounded to the dtype after each division as eager's.
// The offsets run so that o increases with ridx (rows, then columns): the terms are added in
// the order eager adds them to the element, its output scan order. Eager adds in the dtype
// itself (16-bit floats rounded after each addition). Windows of up to kMaxUnrolledTerms
// offsets do the same: one pointwise loop body adds the terms one by one, rounding each
// partial sum to the dtype, so the result is eager's bit for bit. Larger windows (rare: a
// 9x9 kernel) are a Sum reduction over the offsets in the opmath dtype (float32 for the half
// types) rounded once, the difference the tolerance's summation bound covers. int64
// (avg_pool2d_backward) divides truncating and sums wrapping, as eager.
// Max pooling's gather finds only the indices that point into their output's window, which is
// all max_pool2d_with_indices gives (with the same parameters); eager would also add a
// gradient at an index anywhere else in the plane (and write out of bounds outside it), and
// skips -1, which no position here equals.
// The loops store the result channels last where grad_output is stored so (or computed from
// operands stored so), as the forward's lowering does, so they walk its channels contiguously.
//
// The gather's innermost loop runs along the channels (channels last) or along W. Along W with
// a stride above 1, its loads divide the position by the stride: no vector loop expresses
// them, and each result element runs its window's terms one by one in scalar code (9 masked
// terms for ResNet's 3x3, stride 2: 4.6 ms of a float32 ResNet-18 training step at batch 2,
// 14.5 ms in bfloat16, measured with perf). Max pooling then takes eager's own form instead: a
// scatter-add of each grad_output element at its index (lower_max_pool_backward_scatter), one
// addition per output element, in eager's order, through Stax's runtime scatter.
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/pooling_args.h"
#include "lowering/lowerer.h"
#include "lowering/pooling_lowering.h"
#include "lowering/region_masks.h"

namespace stax::lowering {

namespace {

// Windows of at most this many offsets are added term by term in one pointwise loop body
// (eager's roundings exactly); larger ones are a Sum reduction (code size).
constexpr int64_t kMaxUnrolledTerms = 64;

using pooling::AdaptiveDim;
using pooling::avg_count;
using pooling::int64_constant;
using pooling::KernelDim;

// Along one kernel-window dim: the output position reached from input position i at loop
// offset ridx (window offset kernel - 1 - ridx), and where it exists; appends the conditions
// to `inside` (none where they always hold).
Expr kernel_output(OpsHandler& h, const KernelDim& dim, const Expr& i, const Expr& ridx,
                   std::optional<OpsValue>& inside) {
  const Expr t = i + dim.padding - (Expr(dim.kernel - 1) - ridx) * dim.dilation;
  // t >= 0 always where the window's last offset never reaches past the padding.
  if ((dim.kernel - 1) * dim.dilation > dim.padding) {
    inside = both(h, inside, index_at_least(h, t, 0));
  }
  if (dim.stride > 1) {
    inside =
        both(h, inside,
             apply(h, PointwiseOp::Eq,
                   {h.index_value(index::mod(t, dim.stride), DType::Int64), int64_constant(h, 0)}));
  }
  const Expr o = dim.stride > 1 ? index::floordiv(t, dim.stride) : t;
  // o < out always where the largest t, in - 1 + padding, gives an output.
  if (dim.may_pass_last_output) {
    inside = both(h, inside, index_below(h, o, dim.out));
  }
  return o;
}

}  // namespace

LoweredValue Lowerer::lower_pooling_backward(const ir::Node& node, const ir::Value& out) {
  const ir::PoolingArgs a = ir::pooling_args(graph_, node);
  const LoweredValue& grad = value(a.grad_output.index);
  const Loader load_grad = grad.loader;
  const DType result = out.type.dtype;
  const std::vector<Expr> sizes = sizes_of(out.type);
  const int self = node_index(node);
  const index::SymbolTable& symbols = graph_.size_symbols();
  const pooling::PoolingSizes spatial = pooling::pooling_sizes(a, sizes, grad.sizes, symbols);

  // An empty gradient (an empty batch or no channels): nothing to read. Over size symbols an
  // empty batch runs no loop.
  if (!out.type.is_symbolic() && out.type.numel() == 0) {
    return pooling::empty_result(node.op, self, result, sizes);
  }

  // The loop order: row-major, or the channels innermost where grad_output is channels last.
  const bool channels_last = pooling::reads_channels_last(load_grad, grad.sizes, symbols);
  if (a.kind == ir::PoolingKind::Max && !channels_last && a.stride[1] > 1) {
    return lower_max_pool_backward_scatter(node, a, out);
  }
  const pooling::ResultLoops loops(sizes, channels_last);
  const std::vector<Expr>& loop_sizes = loops.loop_sizes;
  const std::vector<Expr>& loop_strides = loops.loop_strides;
  const std::vector<Expr>& strides = loops.strides;
  auto logical = [loops](const std::vector<Expr>& idx) { return loops.logical(idx); };

  const DType acc = is_floating(result) ? opmath_dtype(result) : DType::Int64;
  using Term =
      std::function<OpsValue(OpsHandler&, const std::vector<Expr>&, const std::vector<Expr>&)>;
  Term term;
  std::vector<ComposedNodes> composed = {grad.composed};
  std::string what;
  // grad_output at the leading dims of idx and output position (oh, ow).
  auto grad_index = [](const std::vector<Expr>& idx, Expr oh, Expr ow) {
    std::vector<Expr> at(idx.begin(), idx.end() - 2);
    at.push_back(std::move(oh));
    at.push_back(std::move(ow));
    return at;
  };
  // `value` where `inside` holds (computed under it), 0 elsewhere.
  auto masked = [acc](OpsHandler& h, const std::optional<OpsValue>& inside,
                      const std::function<OpsValue()>& value) {
    if (!inside) return value();
    h.push_mask(*inside);
    const OpsValue v = value();
    h.pop_mask();
    return select_where(h, *inside, v, h.constant(ir::Scalar(int64_t{0}), acc));
  };

  if (a.kind == ir::PoolingKind::AdaptiveAverage) {
    // Input position i along dim d meets the outputs [first(i), end(i)): the adaptive windows
    // with in and out swapped.
    const std::array<AdaptiveDim, 2> outputs = {
        AdaptiveDim(spatial.out[0], spatial.in[0], spatial),
        AdaptiveDim(spatial.out[1], spatial.in[1], spatial)};
    const std::array<AdaptiveDim, 2> windows = {
        AdaptiveDim(spatial.in[0], spatial.out[0], spatial),
        AdaptiveDim(spatial.in[1], spatial.out[1], spatial)};
    what = "adaptive window gradient";
    term = [load_grad, outputs, windows, grad_index, masked, acc, result](
               OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) {
      const size_t n = idx.size();
      std::optional<OpsValue> inside;
      std::array<Expr, 2> o;
      for (size_t d = 0; d < 2; ++d) {
        const Expr i = idx[n - 2 + d];
        o[d] = outputs[d].start(i) + ridx[d];
        if (!outputs[d].uniform) {
          inside = both(h, inside, index_at_least(h, outputs[d].end(i) - o[d], 1));
        }
      }
      return masked(h, inside, [&] {
        OpsValue r = convert(h, load_grad(h, grad_index(idx, o[0], o[1])), acc);
        for (size_t d = 0; d < 2; ++d) {
          const OpsValue length = convert(
              h, h.index_value(windows[d].end(o[d]) - windows[d].start(o[d]), DType::Int64), acc);
          r = convert(h, convert(h, apply(h, PointwiseOp::Div, {r, length}), result), acc);
        }
        return r;
      });
    };
  } else {
    const std::array<KernelDim, 2> dims = pooling::kernel_dims(a, spatial);
    const Expr plane_width = spatial.in[1];
    if (a.kind == ir::PoolingKind::Max) {
      const Loader load_indices = value(a.indices.index).loader;
      composed.push_back(value(a.indices.index).composed);
      what = "max gradient";
      term = [load_grad, load_indices, dims, grad_index, masked, acc, plane_width](
                 OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) {
        const size_t n = idx.size();
        std::optional<OpsValue> inside;
        const Expr oh = kernel_output(h, dims[0], idx[n - 2], ridx[0], inside);
        const Expr ow = kernel_output(h, dims[1], idx[n - 1], ridx[1], inside);
        return masked(h, inside, [&] {
          const std::vector<Expr> at = grad_index(idx, oh, ow);
          const OpsValue here = h.index_value(idx[n - 2] * plane_width + idx[n - 1], DType::Int64);
          const OpsValue chosen = apply(h, PointwiseOp::Eq, {load_indices(h, at), here});
          return select_where(h, chosen, convert(h, load_grad(h, at), acc),
                              h.constant(ir::Scalar(int64_t{0}), acc));
        });
      };
    } else {
      const std::optional<int64_t> divisor_override = a.divisor_override;
      const bool count_include_pad = a.count_include_pad;
      const PointwiseOp divide = is_floating(acc) ? PointwiseOp::Div : PointwiseOp::TruncDiv;
      what = "average gradient";
      term = [load_grad, dims, grad_index, masked, acc, result, divisor_override, count_include_pad,
              divide](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) {
        const size_t n = idx.size();
        std::optional<OpsValue> inside;
        const std::array<Expr, 2> o = {kernel_output(h, dims[0], idx[n - 2], ridx[0], inside),
                                       kernel_output(h, dims[1], idx[n - 1], ridx[1], inside)};
        OpsValue divisor;
        if (divisor_override) {
          divisor = int64_constant(h, *divisor_override);
        } else {
          int64_t constant = 1;
          std::optional<OpsValue> counts[2];
          for (size_t d = 0; d < 2; ++d) {
            counts[d] = avg_count(h, dims[d], count_include_pad, o[d]);
            if (!counts[d]) constant *= dims[d].kernel;
          }
          divisor = int64_constant(h, constant);
          for (const std::optional<OpsValue>& c : counts) {
            if (c) divisor = apply(h, PointwiseOp::Mul, {divisor, *c});
          }
          // Outside the outputs the count means nothing (0 or below): divide by 1 there.
          if (inside && (counts[0] || counts[1])) {
            divisor = apply(h, PointwiseOp::Where, {*inside, divisor, int64_constant(h, 1)});
          }
        }
        return masked(h, inside, [&] {
          const OpsValue g = convert(h, load_grad(h, grad_index(idx, o[0], o[1])), acc);
          const OpsValue q = apply(h, divide, {g, convert(h, divisor, acc)});
          return is_floating(acc) ? convert(h, convert(h, q, result), acc) : q;
        });
      };
    }
  }

  // A backward window's extents are constants (the kernel, or a bound of the outputs an input
  // position meets: pooling::window_extents).
  const std::array<Expr, 2> extents = pooling::window_extents(a, spatial);
  const std::array<int64_t, 2> window = {
      index::static_value(extents[0], "lowering " + node.op, "a window"),
      index::static_value(extents[1], "lowering " + node.op, "a window")};
  const std::string window_text = std::to_string(window[0]) + "x" + std::to_string(window[1]);
  std::vector<std::string> origin = grad.origin;
  origin.push_back(what);
  auto output_index = [loop_strides](const std::vector<Expr>& idx) {
    return strided_offset(idx, loop_strides);
  };

  if (window[0] * window[1] <= kMaxUnrolledTerms) {
    // Eager's sum exactly: the terms added one by one in its order, each partial sum rounded
    // to the dtype (a no-op for float32 and float64, whose acc is themselves).
    ComputedBuffer buf;
    buf.name = next_buffer_name();
    buf.dtype = result;
    buf.sizes = sizes;
    buf.strides = strides;
    buf.ranges = loop_sizes;
    buf.output_index = output_index;
    buf.value = [term = std::move(term), logical, window, acc, result](
                    OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      const std::vector<Expr> at = logical(idx);
      OpsValue sum = h.constant(ir::Scalar(int64_t{0}), acc);
      for (int64_t rh = 0; rh < window[0]; ++rh) {
        for (int64_t rw = 0; rw < window[1]; ++rw) {
          sum = apply(h, PointwiseOp::Add, {sum, term(h, at, {Expr(rh), Expr(rw)})});
          if (acc != result) sum = convert(h, convert(h, sum, result), acc);
        }
      }
      return convert(h, sum, result);
    };
    buf.origin = join(origin, "+");
    result_.log.push_back(buf.name + " (" + node.op + "): a loop nest, the " + what +
                          " added over " + window_text + " window offsets in eager's order, in " +
                          std::string(dtype_name(result)) +
                          (channels_last ? ", channels last as grad_output" : ""));
    LoweredValue stored = add_buffer(std::move(buf), ComposedNodes(self, std::move(composed)));
    stored.origin.clear();
    return stored;
  }

  // A larger window: a Sum reduction over the offsets (in order), in acc, rounded once.
  ComputedBuffer buf;
  buf.name = next_buffer_name();
  buf.dtype = reduction_result_dtype(ReductionType::Sum, acc);
  buf.sizes = sizes;
  buf.strides = strides;
  buf.ranges = loop_sizes;
  buf.reduction_ranges = {window[0], window[1]};
  buf.reduction = ReductionType::Sum;
  buf.output_index = output_index;
  buf.value = [term = std::move(term), logical](OpsHandler& h, const std::vector<Expr>& idx,
                                                const std::vector<Expr>& ridx) {
    return term(h, logical(idx), ridx);
  };
  buf.origin = join(origin, "+");
  result_.log.push_back(buf.name + " (" + node.op + "): a loop nest, a sum of the " + what +
                        " over " + window_text + " window offsets in " +
                        std::string(dtype_name(buf.dtype)) +
                        (channels_last ? ", channels last as grad_output" : ""));
  LoweredValue sum = add_buffer(std::move(buf), ComposedNodes(self, std::move(composed)));
  sum.origin.clear();
  if (sum.dtype == result) return sum;

  // Rounded once to the dtype: a pointwise value (stored channels last where the sum is, so
  // that whatever stores it writes the dims in the loops' order).
  LoweredValue v;
  v.dtype = result;
  v.sizes = sizes;
  v.origin = {node.op};
  v.composed = ComposedNodes(self, {});
  v.stats = sum.stats;
  const Loader load_sum = sum.loader;
  v.loader = [load_sum, result](OpsHandler& h, const std::vector<Expr>& idx) {
    return convert(h, load_sum(h, idx), result);
  };
  if (!channels_last) return v;
  ComputedBuffer rounded;
  rounded.name = next_buffer_name();
  rounded.dtype = result;
  rounded.sizes = sizes;
  rounded.strides = strides;
  rounded.ranges = loop_sizes;
  rounded.output_index = output_index;
  const Loader load_v = v.loader;
  rounded.value = [load_v, logical](OpsHandler& h, const std::vector<Expr>& idx,
                                    const std::vector<Expr>&) { return load_v(h, logical(idx)); };
  rounded.origin = node.op;
  result_.log.push_back(rounded.name + " (" + node.op + "): rounded to " +
                        std::string(dtype_name(result)) + ", channels last as grad_output");
  return add_buffer(std::move(rounded), v.composed);
}

// grad_input viewed as [leading..., H * W] starts as zeros; each grad_output element at
// [leading..., oh, ow], in row-major order, is added at [leading..., indices[leading..., oh, ow]]
// (rounded to the dtype after each addition, as eager's kernel adds in the dtype). The runtime
// splits the leading dims (whole planes) over threads, so every sum is eager's whatever the
// thread count. An index of -1 is skipped, as eager skips it; one elsewhere outside the plane
// is refused (eager writes out of bounds there).
LoweredValue Lowerer::lower_max_pool_backward_scatter(const ir::Node& node,
                                                      const ir::PoolingArgs& a,
                                                      const ir::Value& out) {
  const std::vector<Expr> sizes = sizes_of(out.type);
  const size_t leading = a.leading_dims();
  const Expr plane = sizes[leading] * sizes[leading + 1];
  std::vector<Expr> flat(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(leading));
  flat.push_back(plane);
  const std::string role =
      " of " + ir::describe_node(graph_, node) + ": the scatter reads stored tensors only";

  ScatterCall s;
  s.space = sizes_of(graph_.value(a.grad_output).type);  // [leading..., OH, OW]
  std::vector<int64_t> every_dim(s.space.size());
  for (size_t d = 0; d < every_dim.size(); ++d) every_dim[d] = static_cast<int64_t>(d);
  for (size_t d = 0; d < leading; ++d) s.dest_dims.push_back(static_cast<int64_t>(d));
  s.dest_dims.push_back(-1);  // the plane position: the index's value (term 0)
  s.values_dims = every_dim;
  s.combine = ir::ScatterCombine::Add;
  s.float_sum = false;  // eager rounds each 16-bit addition
  ir::IndexRule rule;
  std::optional<Expr> rule_size;
  if (plane.is_constant()) {
    rule.size = *plane.constant_value();
    rule.message = node.op + ": index {} is outside the input plane of " + std::to_string(a.in[0]) +
                   "x" + std::to_string(a.in[1]) + " (eager writes out of bounds there)";
  } else {
    rule_size = plane;  // bound per call
    rule.message = node.op + ": index {} is outside the input plane of " +
                   index::to_string(sizes[leading]) + "x" + index::to_string(sizes[leading + 1]) +
                   " (eager writes out of bounds there)";
  }
  s.indices.push_back(ScatterIndex{stored_operand(a.indices, "the indices" + role), every_dim,
                                   std::move(rule), -1, rule_size});
  s.values = stored_operand(a.grad_output, "grad_output" + role);

  ExternalCall call;
  call.op = node.op;
  call.scatter = std::move(s);
  call.library = "Stax runtime scatter";
  call.reason =
      "max pooling's gradient added at its indices in eager's order (the gather's "
      "loads along W divide by the stride " +
      std::to_string(a.stride[1]) + ": no vector loop)";
  // The contiguous [leading..., H * W] buffer read as the contiguous [leading..., H, W] it is.
  LoweredValue v = add_external_buffer(node, std::move(call), out.type.dtype, flat,
                                       index::contiguous_strides(flat));
  const std::vector<Expr> strides = index::contiguous_strides(sizes);
  v.sizes = sizes;
  v.layout->strides = strides;
  v.loader = make_load(v.layout->buffer, v.dtype, strides, 0);
  return v;
}

}  // namespace stax::lowering
