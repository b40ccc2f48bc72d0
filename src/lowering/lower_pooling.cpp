// Lowering of the 2-D pooling ops (ir/pooling_args.h) to Stax loop nests: each output element
// is a reduction over its window, idx = (leading dims..., oh, ow), ridx = (rh, rw), reading
// the input at (leading dims..., h, w) with loads masked where the window leaves the input:
//   max_pool2d_with_indices, values    Max of the window, positions outside the input -inf
//                                      (integers: the dtype's lowest), so never chosen over
//                                      an element, as in eager's running maximum;
//   max_pool2d_with_indices, indices   ArgMax of the same window (the first maximum: eager's
//                                      tie rule), turned into h * W + w by a pointwise
//                                      epilogue. Eager's NaN rule differs from ArgMax's (the
//                                      last NaN of the window wins in eager, the first in
//                                      ArgMax), so floating inputs add a Max reduction of
//                                      rh * KW + rw over the NaN positions, which replaces
//                                      ArgMax's answer where it finds one. Where every element
//                                      of a window equals the fill (all -inf), ArgMax gives
//                                      the window's first position, possibly padding; eager
//                                      gives the first position inside the input, so the
//                                      epilogue moves h and w up to it (eager/pooling.cpp);
//   avg_pool2d                         Sum of the window (fill 0) in eager's opmath dtype
//                                      (float32 for the half types, int64 wrapping), divided
//                                      by eager's divisor, a function of (oh, ow) where
//                                      padding or ceil_mode clip windows, and rounded once;
//   _adaptive_avg_pool2d               Sum over the largest window, positions past a
//                                      window's end masked out, divided by the window's
//                                      height and then by its width (as eager divides), both
//                                      index expressions of (oh, ow).
// The epilogues are pointwise values the scheduler fuses into the readers. An input stored
// channels last (or computed from operands stored so) is pooled by loops with the channels
// innermost, so that the kernels vectorize across outputs along contiguous channels; its
// results are stored channels last, as eager's are (epilogues included).
#include <cmath>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/pooling_args.h"
#include "lowering/load_recorder.h"
#include "lowering/lowerer.h"
#include "lowering/pooling_lowering.h"
#include "lowering/region_masks.h"

namespace stax::lowering {

// What pooling_lowering.h declares.
namespace pooling {

LoweredValue empty_result(const std::string& op, int node, DType dtype, std::vector<Expr> sizes) {
  LoweredValue v;
  v.dtype = dtype;
  v.sizes = std::move(sizes);
  v.loader = [dtype](OpsHandler& h, const std::vector<Expr>&) {
    return h.constant(ir::Scalar(int64_t{0}), dtype);
  };
  v.origin = {op};
  v.composed = ComposedNodes(node, {});
  return v;
}

OpsValue int64_constant(OpsHandler& h, int64_t v) {
  return h.constant(ir::Scalar(v), DType::Int64);
}

bool PoolingSizes::proved_at_least(const Expr& a, const Expr& b) const {
  return index::is_nonnegative(a - b, index::Domain({}, symbols)) == index::Truth::kProved;
}

PoolingSizes pooling_sizes(const ir::PoolingArgs& a, const std::vector<Expr>& input_sizes,
                           const std::vector<Expr>& pooled_sizes,
                           const index::SymbolTable& symbols) {
  PoolingSizes s;
  const size_t leading = a.leading_dims();
  for (size_t d = 0; d < 2; ++d) {
    s.in[d] = input_sizes.at(leading + d);
    s.out[d] = pooled_sizes.at(leading + d);
  }
  s.symbols = symbols;
  return s;
}

std::array<KernelDim, 2> kernel_dims(const ir::PoolingArgs& a, const PoolingSizes& sizes) {
  std::array<KernelDim, 2> dims{};
  for (size_t d = 0; d < 2; ++d) {
    KernelDim& k = dims[d];
    k.in = sizes.in[d];
    k.out = sizes.out[d];
    k.kernel = a.kernel[d];
    k.stride = a.stride[d];
    k.padding = a.padding[d];
    k.dilation = a.dilation[d];
    // The last window, of output out - 1 (none where out is 0).
    const Expr last_start = (k.out - 1) * k.stride - k.padding;
    const bool some_output = !sizes.proved_at_least(Expr(0), k.out);
    k.may_end_after_input =
        some_output && !sizes.proved_at_least(k.in - 1, last_start + (k.kernel - 1) * k.dilation);
    k.may_end_after_padded_input =
        some_output && !sizes.proved_at_least(k.in + k.padding, last_start + k.kernel);
    k.may_pass_last_output = !sizes.proved_at_least(
        k.out - 1,
        k.stride > 1 ? index::floordiv(k.in - 1 + k.padding, k.stride) : k.in - 1 + k.padding);
  }
  return dims;
}

AdaptiveDim::AdaptiveDim(Expr in_size, Expr out_size, const PoolingSizes& sizes)
    : in(std::move(in_size)), out(std::move(out_size)) {
  if (out.is_constant() && *out.constant_value() <= 0) return;  // no window
  if (in == Expr(1)) {
    uniform = true;
    return;
  }
  if (!out.is_constant() && !index::is_divisor(out)) {
    throw index::SymbolicSizesRefused("lowering an adaptive pooling's windows over " +
                                      index::to_string(out) +
                                      " positions: a division by that size is not taken yet");
  }
  uniform = index::simplify(index::mod(in, out), index::Domain({}, sizes.symbols)) == Expr(0);
}

std::array<Expr, 2> window_extents(const ir::PoolingArgs& a, const PoolingSizes& sizes) {
  const std::array<int64_t, 2> at_hints = a.window();
  std::array<Expr, 2> w = {Expr(at_hints[0]), Expr(at_hints[1])};
  if (a.kind != ir::PoolingKind::AdaptiveAverage) return w;
  const index::Domain domain({}, sizes.symbols);
  for (size_t d = 0; d < 2; ++d) {
    // Forward: `from` windows over `to` positions; backward: the same windows with in and out
    // swapped, each input position met by a run of outputs.
    const Expr& from = a.backward ? sizes.in[d] : sizes.out[d];
    const Expr& to = a.backward ? sizes.out[d] : sizes.in[d];
    if (from.is_constant() && to.is_constant()) continue;  // the static rule's, exact
    if (to == Expr(1)) {
      w[d] = Expr(1);  // one position (or output) meets every window
    } else if (AdaptiveDim(to, from, sizes).uniform) {
      w[d] = index::simplify(index::floordiv(to, from), domain);
    } else if (from.is_constant()) {
      // No window is longer than to / from rounded up, plus the one position two neighbouring
      // windows share.
      const int64_t n = std::max<int64_t>(*from.constant_value(), 1);
      w[d] = index::floordiv(to + (n - 1), n) + 1;
    } else {
      // A constant `to` over at least `lo` windows: at most ceil(to / lo) + 1 of them, and
      // never more than `to`.
      if (!to.is_constant()) {
        throw index::SymbolicSizesRefused(
            "lowering an adaptive pooling whose input and output sizes are both size symbols");
      }
      const std::optional<index::Interval> range = index::bounds(from, domain);
      const int64_t lo = std::max<int64_t>(range ? range->lo : 1, 1);
      const int64_t n = *to.constant_value();
      w[d] = Expr(std::max<int64_t>(std::min<int64_t>((n + lo - 1) / lo + 1, n), 1));
    }
  }
  return w;
}

// avg_pool2d's count along one dim (eager/pooling.cpp): with count_include_pad the window
// clipped to the padded input, min(kernel, in + padding - start); without, clipped to the
// input, min(start + kernel, in) - max(start, 0). nullopt where it is the kernel for every o.
std::optional<OpsValue> avg_count(OpsHandler& h, const KernelDim& dim, bool count_include_pad,
                                  const Expr& o) {
  // Windows end after the input only where some do past in - 1 - (kernel - 1): the same
  // condition a window of dilation 1 meets past the input (avg_pool2d has no dilation).
  const bool clipped_after =
      count_include_pad ? dim.may_end_after_padded_input : dim.may_end_after_input;
  const bool clipped_before = !count_include_pad && dim.padding > 0;
  if (!clipped_after && !clipped_before) return std::nullopt;
  const OpsValue start = h.index_value(dim.start(o), DType::Int64);
  if (count_include_pad) {
    return apply(
        h, PointwiseOp::Minimum,
        {int64_constant(h, dim.kernel),
         apply(h, PointwiseOp::Sub, {h.index_value(dim.in + dim.padding, DType::Int64), start})});
  }
  const OpsValue end = apply(h, PointwiseOp::Minimum,
                             {apply(h, PointwiseOp::Add, {start, int64_constant(h, dim.kernel)}),
                              h.index_value(dim.in, DType::Int64)});
  return apply(h, PointwiseOp::Sub,
               {end, apply(h, PointwiseOp::Maximum, {start, int64_constant(h, 0)})});
}

bool reads_channels_last(const Loader& load, const std::vector<Expr>& sizes,
                         const index::SymbolTable& symbols) {
  return sizes.size() >= 3 && lowering::reads_channels_last(load, sizes, sizes.size() - 3, symbols);
}

}  // namespace pooling

namespace {

using pooling::AdaptiveDim;
using pooling::avg_count;
using pooling::int64_constant;
using pooling::kernel_dims;
using pooling::KernelDim;
using pooling::reads_channels_last;

// The input index of output index `idx` (leading dims, oh, ow) at spatial positions (h, w).
std::vector<Expr> input_index(const std::vector<Expr>& idx, Expr h, Expr w) {
  std::vector<Expr> at(idx.begin(), idx.end() - 2);
  at.push_back(std::move(h));
  at.push_back(std::move(w));
  return at;
}

// Where a kernel window's position lies inside the input; nullopt where it always does.
std::optional<OpsValue> inside_mask(OpsHandler& h, const std::array<KernelDim, 2>& dims,
                                    const std::array<Expr, 2>& positions) {
  std::optional<OpsValue> inside;
  for (size_t d = 0; d < 2; ++d) {
    if (dims[d].starts_before()) inside = both(h, inside, index_at_least(h, positions[d], 0));
    if (dims[d].ends_after()) inside = both(h, inside, index_below(h, positions[d], dims[d].in));
  }
  return inside;
}

// `load` converted to `dtype` where `inside` holds (loaded under it), `fill` elsewhere.
OpsValue masked_load(OpsHandler& h, const std::optional<OpsValue>& inside, const Loader& load,
                     const std::vector<Expr>& at, DType dtype, const ir::Scalar& fill) {
  if (!inside) return convert(h, load(h, at), dtype);
  h.push_mask(*inside);
  const OpsValue x = convert(h, load(h, at), dtype);
  h.pop_mask();
  return select_where(h, *inside, x, h.constant(fill, dtype));
}

// The first position of a dilated window along one dim that is not in the left padding:
// start, moved up by whole dilations while below 0 (as int64 ops).
OpsValue first_inside(OpsHandler& h, const KernelDim& dim, const Expr& o) {
  const OpsValue start = h.index_value(dim.start(o), DType::Int64);
  const OpsValue zero = int64_constant(h, 0);
  if (dim.dilation == 1) return apply(h, PointwiseOp::Maximum, {start, zero});
  const OpsValue before =
      apply(h, PointwiseOp::Maximum, {apply(h, PointwiseOp::Sub, {zero, start}), zero});
  const OpsValue steps =
      apply(h, PointwiseOp::TruncDiv,
            {apply(h, PointwiseOp::Add, {before, int64_constant(h, dim.dilation - 1)}),
             int64_constant(h, dim.dilation)});
  return apply(h, PointwiseOp::Add,
               {start, apply(h, PointwiseOp::Mul, {steps, int64_constant(h, dim.dilation)})});
}

}  // namespace

LoweredValue Lowerer::lower_pooling(const ir::Node& node, const ir::Value& out) {
  const ir::PoolingArgs a = ir::pooling_args(graph_, node);
  if (a.backward) return lower_pooling_backward(node, out);
  const LoweredValue& src = value(a.input.index);
  const Loader load = src.loader;
  const DType result = out.type.dtype;
  const std::vector<Expr> out_sizes = sizes_of(out.type);
  const int self = node_index(node);
  const bool indices = a.kind == ir::PoolingKind::Max && node.result_index == 1;
  const index::SymbolTable& symbols = graph_.size_symbols();
  const pooling::PoolingSizes spatial = pooling::pooling_sizes(a, src.sizes, out_sizes, symbols);

  // An empty result: nothing to read (and no window to divide by). Over size symbols the
  // windows are proved to fit (ir::infer_symbolic_sizes), and an empty batch runs no loop.
  if (!out.type.is_symbolic() && out.type.numel() == 0) {
    return pooling::empty_result(node.op, self, result, out_sizes);
  }

  // The order of the output dims in the loops (and in the stored results): row-major, or
  // channels last where the input is stored channels last (or computed from such operands),
  // so that the innermost loop walks the channels of both contiguously and the kernels
  // vectorize across outputs (as eager's channels-last kernel does, whose results are
  // channels last too).
  const bool channels_last = reads_channels_last(load, src.sizes, symbols);
  const pooling::ResultLoops loops(out_sizes, channels_last);
  const std::vector<Expr>& loop_sizes = loops.loop_sizes;
  const std::vector<Expr>& loop_strides = loops.loop_strides;
  const std::vector<Expr>& strides = loops.strides;
  auto logical = [loops](const std::vector<Expr>& idx) { return loops.logical(idx); };
  // Channels last, an epilogue is stored in that layout too, by loops in that order: else
  // whatever stores it (a graph output) would write the output's dims in another order than
  // the loops computing its reductions.
  auto store = [&](const LoweredValue& v, const std::string& why) {
    return channels_last ? realize_in_loops(v, loops, why) : v;
  };

  // Stores one reduction of `element` over the windows (ridx = (rh, rw) over window()).
  const std::array<Expr, 2> window = pooling::window_extents(a, spatial);
  using Element =
      std::function<OpsValue(OpsHandler&, const std::vector<Expr>&, const std::vector<Expr>&)>;
  auto reduce = [&](ReductionType type, DType value_dtype, Element element,
                    const std::string& what) {
    ComputedBuffer buf;
    buf.name = next_buffer_name();
    buf.dtype = reduction_result_dtype(type, value_dtype);
    buf.sizes = out_sizes;
    buf.strides = strides;
    buf.ranges = loop_sizes;
    buf.reduction_ranges = {window[0], window[1]};
    buf.reduction = type;
    buf.output_index = [loop_strides](const std::vector<Expr>& idx) {
      return strided_offset(idx, loop_strides);
    };
    buf.value = [element = std::move(element), logical](OpsHandler& h, const std::vector<Expr>& idx,
                                                        const std::vector<Expr>& ridx) {
      return element(h, logical(idx), ridx);
    };
    std::vector<std::string> origin = src.origin;
    origin.push_back(what);
    buf.origin = join(origin, "+");
    result_.log.push_back(buf.name + " (" + node.op + "): a loop nest, " + what + " over " +
                          index::to_string(window[0]) + "x" + index::to_string(window[1]) +
                          " windows in " + std::string(dtype_name(buf.dtype)));
    LoweredValue stored = add_buffer(std::move(buf), ComposedNodes(self, {src.composed}));
    stored.origin.clear();
    return stored;
  };
  // A pointwise value of the stored reductions `parts` (at the output index), part of this
  // node.
  auto epilogue = [&](DType dtype, std::vector<Loader> parts, BodyStats stats,
                      std::function<OpsValue(OpsHandler&, const std::vector<Expr>&,
                                             const std::vector<OpsValue>&)>
                          finish) {
    LoweredValue v;
    v.dtype = dtype;
    v.sizes = out_sizes;
    v.origin = {node.op};
    v.composed = ComposedNodes(self, {});
    v.stats = stats;
    v.loader = [parts, finish](OpsHandler& h, const std::vector<Expr>& idx) {
      std::vector<OpsValue> values;
      for (const Loader& part : parts) values.push_back(part(h, idx));
      return finish(h, idx, values);
    };
    return store(v, "pooled channels last, as its input (and eager's result) is");
  };

  if (a.kind == ir::PoolingKind::AdaptiveAverage) {
    const DType acc = opmath_dtype(result);
    const std::array<AdaptiveDim, 2> dims = {AdaptiveDim(spatial.in[0], spatial.out[0], spatial),
                                             AdaptiveDim(spatial.in[1], spatial.out[1], spatial)};
    LoweredValue sum = reduce(
        ReductionType::Sum, acc,
        [load, dims, acc](OpsHandler& h, const std::vector<Expr>& idx,
                          const std::vector<Expr>& ridx) {
          const size_t n = idx.size();
          const std::array<Expr, 2> o = {idx[n - 2], idx[n - 1]};
          std::optional<OpsValue> inside;
          for (size_t d = 0; d < 2; ++d) {
            // ridx < end - start: the window's own length.
            if (dims[d].uniform) continue;
            inside = both(h, inside,
                          index_at_least(h, dims[d].end(o[d]) - dims[d].start(o[d]) - ridx[d], 1));
          }
          const std::vector<Expr> at =
              input_index(idx, dims[0].start(o[0]) + ridx[0], dims[1].start(o[1]) + ridx[1]);
          return masked_load(h, inside, load, at, acc, ir::Scalar(int64_t{0}));
        },
        "sum");
    BodyStats stats = sum.stats;
    stats += op_stats(PointwiseOp::Div);
    stats += op_stats(PointwiseOp::Div);
    return epilogue(result, {sum.loader}, stats,
                    [dims, acc, result](OpsHandler& h, const std::vector<Expr>& idx,
                                        const std::vector<OpsValue>& parts) {
                      const size_t n = idx.size();
                      OpsValue r = parts[0];
                      for (size_t d = 0; d < 2; ++d) {
                        const Expr o = idx[n - 2 + d];
                        const OpsValue length = convert(
                            h, h.index_value(dims[d].end(o) - dims[d].start(o), DType::Int64), acc);
                        r = apply(h, PointwiseOp::Div, {r, length});
                      }
                      return convert(h, r, result);
                    });
  }

  const std::array<KernelDim, 2> dims = kernel_dims(a, spatial);
  // The positions of window offset ridx for output index idx, and where they are inside.
  auto positions = [dims](const std::vector<Expr>& idx, const std::vector<Expr>& ridx) {
    const size_t n = idx.size();
    return std::array<Expr, 2>{dims[0].position(idx[n - 2], ridx[0]),
                               dims[1].position(idx[n - 1], ridx[1])};
  };

  if (a.kind == ir::PoolingKind::Average) {
    const DType acc = is_floating(result) ? opmath_dtype(result) : DType::Int64;
    LoweredValue sum = reduce(
        ReductionType::Sum, acc,
        [load, dims, positions, acc](OpsHandler& h, const std::vector<Expr>& idx,
                                     const std::vector<Expr>& ridx) {
          const std::array<Expr, 2> at = positions(idx, ridx);
          return masked_load(h, inside_mask(h, dims, at), load, input_index(idx, at[0], at[1]), acc,
                             ir::Scalar(int64_t{0}));
        },
        "sum");
    const std::optional<int64_t> divisor_override = a.divisor_override;
    const bool count_include_pad = a.count_include_pad;
    const PointwiseOp divide = is_floating(acc) ? PointwiseOp::Div : PointwiseOp::TruncDiv;
    BodyStats stats = sum.stats;
    stats += op_stats(divide);
    return epilogue(
        result, {sum.loader}, stats,
        [dims, divisor_override, count_include_pad, acc, result, divide](
            OpsHandler& h, const std::vector<Expr>& idx, const std::vector<OpsValue>& parts) {
          const size_t n = idx.size();
          OpsValue divisor;
          if (divisor_override) {
            divisor = int64_constant(h, *divisor_override);
          } else {
            std::optional<OpsValue> counts[2];
            int64_t constant = 1;
            for (size_t d = 0; d < 2; ++d) {
              counts[d] = avg_count(h, dims[d], count_include_pad, idx[n - 2 + d]);
              if (!counts[d]) constant *= dims[d].kernel;
            }
            divisor = int64_constant(h, constant);
            for (const std::optional<OpsValue>& c : counts) {
              if (c) divisor = apply(h, PointwiseOp::Mul, {divisor, *c});
            }
          }
          const OpsValue r = apply(h, divide, {parts[0], convert(h, divisor, acc)});
          return convert(h, r, result);
        });
  }

  // max_pool2d_with_indices: the maxima, computed in the opmath dtype (exactly).
  const DType compute = opmath_dtype(a.dtype);
  const ir::Scalar fill =
      is_floating(compute) ? ir::Scalar(-INFINITY) : ir::Scalar(integer_range(compute).lowest);
  auto window_value = [load, dims, positions, compute, fill](OpsHandler& h,
                                                             const std::vector<Expr>& idx,
                                                             const std::vector<Expr>& ridx) {
    const std::array<Expr, 2> at = positions(idx, ridx);
    return masked_load(h, inside_mask(h, dims, at), load, input_index(idx, at[0], at[1]), compute,
                       fill);
  };
  if (!indices) {
    LoweredValue maxima = reduce(ReductionType::Max, compute, window_value, "max");
    if (compute == result) return maxima;
    BodyStats stats = maxima.stats;
    return epilogue(
        result, {maxima.loader}, stats,
        [result](OpsHandler& h, const std::vector<Expr>&, const std::vector<OpsValue>& parts) {
          return convert(h, parts[0], result);  // exact: a value of the dtype
        });
  }

  const int64_t kw = a.kernel[1];
  std::vector<Loader> parts = {
      reduce(ReductionType::ArgMax, compute, window_value, "argmax").loader};
  const bool nans = is_floating(compute);
  if (nans) {
    // The last NaN position of the window (rh * KW + rw), -1 where there is none.
    parts.push_back(reduce(
                        ReductionType::Max, DType::Int64,
                        [window_value, kw](OpsHandler& h, const std::vector<Expr>& idx,
                                           const std::vector<Expr>& ridx) {
                          const OpsValue x = window_value(h, idx, ridx);
                          return apply(h, PointwiseOp::Where,
                                       {apply(h, PointwiseOp::IsNan, {x}),
                                        h.index_value(ridx[0] * kw + ridx[1], DType::Int64),
                                        int64_constant(h, -1)});
                        },
                        "last NaN")
                        .loader);
  }
  BodyStats stats;
  for (PointwiseOp op :
       {PointwiseOp::TruncDiv, PointwiseOp::Sub, PointwiseOp::Mul, PointwiseOp::Add,
        PointwiseOp::Mul, PointwiseOp::Add, PointwiseOp::Mul, PointwiseOp::Add}) {
    stats += op_stats(op);
  }
  const Expr plane_width = spatial.in[1];
  return epilogue(
      DType::Int64, std::move(parts), stats,
      [dims, kw, nans, plane_width](OpsHandler& h, const std::vector<Expr>& idx,
                                    const std::vector<OpsValue>& found) {
        OpsValue r = found[0];
        if (nans) {
          r = apply(h, PointwiseOp::Where,
                    {apply(h, PointwiseOp::Ge, {found[1], int64_constant(h, 0)}), found[1], r});
        }
        const OpsValue rh = apply(h, PointwiseOp::TruncDiv, {r, int64_constant(h, kw)});
        const OpsValue rw = apply(h, PointwiseOp::Sub,
                                  {r, apply(h, PointwiseOp::Mul, {rh, int64_constant(h, kw)})});
        const size_t n = idx.size();
        OpsValue at[2];
        const OpsValue offsets[2] = {rh, rw};
        for (size_t d = 0; d < 2; ++d) {
          const Expr o = idx[n - 2 + d];
          at[d] = apply(
              h, PointwiseOp::Add,
              {h.index_value(dims[d].start(o), DType::Int64),
               apply(h, PointwiseOp::Mul, {offsets[d], int64_constant(h, dims[d].dilation)})});
          // Only a window of nothing but the fill can give a position in the left padding: it
          // is its first offset, and eager's answer the first position inside the input.
          if (dims[d].starts_before()) {
            at[d] = apply(h, PointwiseOp::Maximum, {at[d], first_inside(h, dims[d], o)});
          }
        }
        return apply(
            h, PointwiseOp::Add,
            {apply(h, PointwiseOp::Mul, {at[0], h.index_value(plane_width, DType::Int64)}), at[1]});
      });
}

}  // namespace stax::lowering
