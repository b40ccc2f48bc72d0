// Lowering of convolution_backward (issue 15, point 2): the gradients of a forward convolution
// (ir::ConvolutionBackwardArgs), one result per node:
//   grad_input[n, ci, x...]  = sum_{j, k...} grad[n, g * C_out_g + j, (x + pad - k * dil) / stride]
//                                             * weight[g * C_out_g + j, ci - g * C_in_g, k...]
//                              over the (j, k) whose position divides by the stride and lies in
//                              the output, g = ci / C_in_g;
//   grad_weight[co, c, k...] = sum_{n, o...} grad[n, co, o...] * input[n, g * C_in_g + c,
//                                             o * stride - pad + k * dil], g = co / C_out_g,
//                              positions outside the input contributing nothing;
//   grad_bias[co]            = sum_{n, o...} grad[n, co, o...].
// grad_input and grad_weight are oneDNN's backward-data and backward-weights calls where the
// target's library computes the dtype (as the forward convolution, lower_convolution.cpp),
// else loop nests: masked window sums in the accumulation dtype, rounded once to the dtype.
// grad_bias is always a Stax reduction (a sum over the batch and the positions, memory-bound,
// which the scheduler can place with the other readers of grad_output). A result the output
// mask leaves out is the empty tensor of its type.
#include <stdexcept>
#include <utility>

#include "lowering/convolution_lowering.h"
#include "lowering/lowerer.h"
#include "lowering/region_masks.h"

namespace stax::lowering {

namespace {

using Direction = ConvolutionWindow::Direction;

}  // namespace

std::vector<ir::ValueRef> Lowerer::library_convolution_backward_operands(
    const ir::Node& node) const {
  const ir::ConvolutionBackwardArgs b = ir::convolution_backward_args(graph_, node);
  const ir::ConvolutionArgs& f = b.forward;
  const int r = node.result_index;
  if (r == 2 || !b.output_mask[static_cast<size_t>(r)]) return {};
  const ir::ValueRef other = r == 0 ? f.weight : f.input;
  const Direction direction = r == 0 ? Direction::BackwardInput : Direction::BackwardWeight;
  ExternalCall call;
  call.op = node.op;
  const std::vector<Expr> grad_sizes = sizes_of(graph_.value(b.grad_output).type);
  const std::vector<Expr> other_sizes = sizes_of(graph_.value(other).type);
  call.a =
      ExternalOperand{"", false, f.dtype, grad_sizes, index::contiguous_strides(grad_sizes), 0};
  call.b =
      ExternalOperand{"", false, f.dtype, other_sizes, index::contiguous_strides(other_sizes), 0};
  call.convolution = convolution_window(f, direction, sizes_of(graph_.value(node.output).type));
  std::string why;
  if (!library_for_call(call, &why)) return {};
  return {b.grad_output, other};
}

LoweredValue Lowerer::lower_convolution_backward(const ir::Node& node, const ir::Value& out) {
  const ir::ConvolutionBackwardArgs b = ir::convolution_backward_args(graph_, node);
  const ir::ConvolutionArgs& f = b.forward;
  const DType dtype = f.dtype;
  const int r = node.result_index;
  const std::vector<Expr> sizes = sizes_of(out.type);
  if (!b.output_mask[static_cast<size_t>(r)]) {
    // Not computed (eager returns None): the empty tensor of its type, read by no one.
    LoweredValue v;
    v.dtype = dtype;
    v.sizes = sizes;
    v.loader = [dtype](OpsHandler& h, const std::vector<Expr>&) {
      return h.constant(ir::Scalar(int64_t{0}), dtype);
    };
    v.origin = {node.op};
    v.composed = ComposedNodes(node_index(node), {});
    return v;
  }
  const LoweredValue& vg = value(b.grad_output.index);
  if (r < 2) {
    const LoweredValue& other = value(r == 0 ? f.weight.index : f.input.index);
    const Direction direction = r == 0 ? Direction::BackwardInput : Direction::BackwardWeight;
    if (auto call =
            library_convolution(node, convolution_window(f, direction, sizes), dtype,
                                {{&vg, "grad_output"}, {&other, r == 0 ? "weight" : "input"}})) {
      return *call;
    }
  }

  // The loop nest: a sum over `reduction_ranges` in the accumulation dtype, then the dtype.
  const DType acc = convolution_accumulation_dtype(dtype);
  const size_t spatial = f.spatial_dims();
  const int64_t in_per_group = f.input_sizes[1] / f.groups;
  const int64_t out_per_group = f.out_channels() / f.groups;
  const std::vector<Expr> grad_sizes = vg.sizes;
  const ConvolutionWindow w = convolution_window(f, Direction::Forward, grad_sizes);
  const Loader load_grad = vg.loader;
  ComputedBuffer sum;
  sum.name = next_buffer_name();
  sum.dtype = acc;
  sum.sizes = sizes;
  sum.strides = index::contiguous_strides(sizes);
  sum.ranges = sizes;
  sum.reduction = ReductionType::Sum;
  const std::vector<Expr> strides = sum.strides;
  sum.output_index = [strides](const std::vector<Expr>& idx) {
    return strided_offset(idx, strides);
  };
  std::vector<ComposedNodes> composed = {vg.composed};
  if (r == 0) {
    // idx = (n, ci, x...), ridx = (j, k...).
    sum.reduction_ranges = {out_per_group};
    for (size_t d = 0; d < spatial; ++d) sum.reduction_ranges.push_back(f.weight_sizes[2 + d]);
    const Loader load_w = value(f.weight.index).loader;
    composed.push_back(value(f.weight.index).composed);
    sum.value = [load_grad, load_w, acc, w, grad_sizes, in_per_group, out_per_group](
                    OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) {
      Expr out_channel = ridx[0];
      Expr channel_in_group = idx[1];
      if (w.groups > 1) {
        out_channel = out_channel + index::floordiv(idx[1], in_per_group) * out_per_group;
        channel_in_group = index::mod(idx[1], in_per_group);
      }
      std::vector<Expr> at_grad = {idx[0], out_channel};
      std::vector<Expr> at_w = {out_channel, channel_in_group};
      std::optional<OpsValue> inside;
      for (size_t d = 0; d < w.stride.size(); ++d) {
        // The output position y with y * stride - pad + k * dil = x, where one exists.
        const Expr t = idx[2 + d] + w.padding[d] - ridx[1 + d] * w.dilation[d];
        const int64_t s = w.stride[d];
        inside = both(h, inside, index_at_least(h, t, 0));
        if (s > 1) {
          inside = both(h, inside,
                        apply(h, PointwiseOp::Eq,
                              {h.index_value(index::mod(t, s), DType::Int64),
                               h.constant(int64_t{0}, DType::Int64)}));
        }
        const Expr y = s > 1 ? index::floordiv(t, s) : t;
        inside = both(h, inside, index_below(h, y, grad_sizes[2 + d]));
        at_grad.push_back(y);
        at_w.push_back(ridx[1 + d]);
      }
      const OpsValue args[] = {masked_load(h, load_grad, at_grad, inside, acc),
                               convert(h, load_w(h, at_w), acc)};
      return h.compute(PointwiseOp::Mul, args, acc);
    };
  } else {
    // grad_weight: idx = (co, c, k...); grad_bias: idx = (co); ridx = (n, o...).
    sum.reduction_ranges = {grad_sizes[0]};
    for (size_t d = 0; d < spatial; ++d) sum.reduction_ranges.push_back(grad_sizes[2 + d]);
    Loader load_in;
    if (r == 1) {
      load_in = value(f.input.index).loader;
      composed.push_back(value(f.input.index).composed);
    }
    const std::vector<Expr> in_sizes = value(f.input.index).sizes;
    sum.value = [load_grad, load_in, acc, w, in_sizes, in_per_group, out_per_group](
                    OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& ridx) {
      std::vector<Expr> at_grad = {ridx[0], idx[0]};
      for (size_t d = 0; d < w.stride.size(); ++d) at_grad.push_back(ridx[1 + d]);
      const OpsValue dy = convert(h, load_grad(h, at_grad), acc);
      if (!load_in) return dy;  // grad_bias
      Expr channel = idx[1];
      if (w.groups > 1) {
        channel = channel + index::floordiv(idx[0], out_per_group) * in_per_group;
      }
      std::vector<Expr> at_in = {ridx[0], channel};
      std::optional<OpsValue> inside;
      for (size_t d = 0; d < w.stride.size(); ++d) {
        const Expr pos = ridx[1 + d] * w.stride[d] - w.padding[d] + idx[2 + d] * w.dilation[d];
        at_in.push_back(pos);
        if (w.padding[d] > 0) {
          inside = both(h, inside, index_at_least(h, pos, 0));
          inside = both(h, inside, index_below(h, pos, in_sizes[2 + d]));
        }
      }
      const OpsValue args[] = {dy, masked_load(h, load_in, at_in, inside, acc)};
      return h.compute(PointwiseOp::Mul, args, acc);
    };
  }
  static const char* const kNames[] = {"grad_input", "grad_weight", "grad_bias"};
  sum.origin = r == 2 ? "sum" : "mul+sum";
  result_.log.push_back(sum.name + " (" + node.op + ", " + kNames[r] + "): a loop nest summed in " +
                        std::string(dtype_name(acc)));
  LoweredValue summed = add_buffer(std::move(sum), ComposedNodes(node_index(node), composed));
  summed.origin.clear();
  if (acc == dtype) return summed;
  LoweredValue v;
  v.dtype = dtype;
  v.sizes = sizes;
  v.stats = summed.stats;
  const Loader load_sum = summed.loader;
  v.loader = [load_sum, dtype](OpsHandler& h, const std::vector<Expr>& idx) {
    return convert(h, load_sum(h, idx), dtype);
  };
  v.origin = {node.op};
  v.composed = ComposedNodes(node_index(node), {summed.composed});
  return v;
}

}  // namespace stax::lowering
