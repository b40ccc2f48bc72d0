// Lowering of convolutions (issue 15, point 2): ATen's `convolution` (not transposed),
//   out[n, co, o...] = bias[co] + sum_{ci, k...} in[n, g * C_in_g + ci, o * stride - pad + k * dil]
//                                               * weight[co, ci, k...],   g = co / C_out_g,
// with positions outside the input reading zero.
//
// Where the target has a library that runs it (LoweringOptions::library_for: oneDNN's
// convolution for float32 and bfloat16), it is an external buffer: one call that writes the
// whole output, input, weight and bias passed as the strided layouts of the buffers they view
// (the library reorders them into its own formats). A computed operand is stored first. Else
// (float64, float16 and the integer dtypes, which no library here computes, or a target
// without libraries) it is a loop nest: a sum reduction over (C_in_g, kernel...) of masked
// products in the accumulation dtype (float32 for the half types, as eager's kernels
// accumulate; int64 for integers, which wrap), and the bias
// and the rounding to the dtype as a pointwise value the scheduler can fuse with its readers.
//
// Transposed convolutions are refused here with a clear error; the torch.compile bridge
// leaves them to PyTorch.
#include <stdexcept>
#include <utility>

#include "ir/convolution_args.h"
#include "lowering/channels_last.h"
#include "lowering/convolution_lowering.h"
#include "lowering/lowerer.h"
#include "lowering/region_masks.h"

namespace stax::lowering {

DType convolution_accumulation_dtype(DType dtype) {
  if (dtype == DType::Float64) return DType::Float64;
  if (is_floating(dtype)) return DType::Float32;
  return DType::Int64;
}

namespace {

ExternalOperand contiguous_operand(DType dtype, const std::vector<Expr>& sizes) {
  return ExternalOperand{"", false, dtype, sizes, index::contiguous_strides(sizes), 0};
}

}  // namespace

OpsValue masked_load(OpsHandler& h, const Loader& load, const std::vector<Expr>& at,
                     const std::optional<OpsValue>& inside, DType acc) {
  if (!inside) return convert(h, load(h, at), acc);
  h.push_mask(*inside);
  OpsValue x = convert(h, load(h, at), acc);
  h.pop_mask();
  return select_where(h, *inside, x, h.constant(ir::Scalar(int64_t{0}), acc));
}

ConvolutionWindow convolution_window(const ir::ConvolutionArgs& c,
                                     ConvolutionWindow::Direction direction,
                                     std::vector<Expr> result_sizes) {
  return ConvolutionWindow{c.stride, c.padding, c.dilation,
                           c.groups, direction, std::move(result_sizes)};
}

namespace {

// The call with every operand contiguous, over operands of these sizes (the bias last, if any).
ExternalCall contiguous_call(const std::string& op, const ConvolutionWindow& window, DType dtype,
                             const std::vector<std::vector<Expr>>& operand_sizes) {
  ExternalCall call;
  call.op = op;
  call.a = contiguous_operand(dtype, operand_sizes[0]);
  call.b = contiguous_operand(dtype, operand_sizes[1]);
  if (operand_sizes.size() > 2) call.bias = contiguous_operand(dtype, operand_sizes[2]);
  call.convolution = window;
  return call;
}

void refuse_transposed(const ir::Graph& graph, const ir::Node& node, const ir::ConvolutionArgs& c) {
  if (!c.transposed) return;
  throw std::invalid_argument(ir::describe_node(graph, node) +
                              ": a transposed convolution is not lowered by Stax yet (the "
                              "torch.compile bridge leaves it to PyTorch)");
}

// Whether a stored operand is dense in row-major or channels-last order (dims of size 1 aside):
// the layouts the library's kernels and its fast reorders take. Any other strides (a batch of
// [B, 197, 768] tokens seen as [B, 768, 14, 14] images without the first token) it reorders
// element by element with its reference reorder: 23 ms for ViT's patch gradient in float32,
// where a Stax copy takes a fraction of a millisecond.
// Over size symbols the strides are compared as expressions: a layout of symbolic sizes is
// dense in one of these orders at every size only where its strides are those expressions.
bool library_reads_in_place(const std::vector<Expr>& sizes, const std::vector<Expr>& strides) {
  auto same = [&](const std::vector<Expr>& dense) {
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] != Expr(1) && strides[d] != dense[d]) return false;
    }
    return true;
  };
  if (same(index::contiguous_strides(sizes))) return true;
  return sizes.size() >= 3 && same(StoreLoops(sizes, kImageChannelDim).strides);
}

}  // namespace

std::vector<ir::ValueRef> Lowerer::library_convolution_operands(const ir::Node& node) const {
  if (!options_.library_for) return {};
  if (node.op == "convolution_backward") return library_convolution_backward_operands(node);
  const ir::ConvolutionArgs c = ir::convolution_args(graph_, node);
  if (c.transposed) return {};
  std::vector<ir::ValueRef> operands = {c.input, c.weight};
  if (c.bias) operands.push_back(*c.bias);
  std::vector<std::vector<Expr>> sizes;
  for (ir::ValueRef ref : operands) sizes.push_back(sizes_of(graph_.value(ref).type));
  const ConvolutionWindow window = convolution_window(c, ConvolutionWindow::Direction::Forward,
                                                      sizes_of(graph_.value(node.output).type));
  std::string why;
  if (!library_for_call(contiguous_call(node.op, window, c.dtype, sizes), &why)) return {};
  return operands;
}

std::optional<LoweredValue> Lowerer::library_convolution(
    const ir::Node& node, const ConvolutionWindow& window, DType dtype,
    const std::vector<std::pair<const LoweredValue*, const char*>>& operands) {
  if (!options_.library_for) return std::nullopt;
  const std::string op =
      node.op + (window.direction == ConvolutionWindow::Direction::BackwardInput ? " (grad_input)"
                 : window.direction == ConvolutionWindow::Direction::BackwardWeight
                     ? " (grad_weight)"
                     : "");
  // Operands read in place where they are stored, else stored first.
  std::vector<std::optional<ExternalOperand>> in_place;
  std::vector<std::vector<Expr>> sizes;
  for (const auto& [v, role] : operands) {
    sizes.push_back(v->sizes);
    if (!v->layout || !library_reads_in_place(v->sizes, v->layout->strides)) {
      in_place.emplace_back();
      continue;
    }
    in_place.push_back(ExternalOperand{v->layout->buffer, v->layout->is_input, v->dtype, v->sizes,
                                       v->layout->strides, v->layout->offset});
  }
  ExternalCall call = contiguous_call(node.op, window, dtype, sizes);
  auto operand_slot = [&call](size_t k) -> ExternalOperand& {
    return k == 0 ? call.a : k == 1 ? call.b : *call.bias;
  };
  bool any_in_place = false;
  for (size_t k = 0; k < operands.size(); ++k) {
    if (in_place[k]) operand_slot(k) = *in_place[k];
    any_in_place = any_in_place || in_place[k].has_value();
  }
  std::string why;
  std::optional<std::string> library = library_for_call(call, &why);
  if (!library && any_in_place) {
    // A layout the library refuses (a broadcast weight, say): the same call on stored copies
    // may still be one.
    for (auto& p : in_place) p.reset();
    call = contiguous_call(node.op, window, dtype, sizes);
    library = library_for_call(call, &why);
  }
  if (!library) {
    result_.log.push_back(ir::describe_node(graph_, node) + ": a loop nest, " + why);
    return std::nullopt;
  }
  call.library = *library;
  call.reason =
      "the target's " + *library + " runs " + op + " on " + std::string(dtype_name(dtype));
  if (!why.empty()) call.reason += " " + why;
  for (size_t k = 0; k < operands.size(); ++k) {
    if (in_place[k]) continue;
    LoweredValue r = realize_for_readers(
        *operands[k].first, -1,
        std::string(operands[k].second) + " of " + op + ": the library reads stored tensors only");
    ExternalOperand& into = operand_slot(k);
    into.buffer = r.layout->buffer;
    into.is_input = false;
    into.strides = r.layout->strides;
    into.offset = 0;
  }
  // The output channels last where the library runs this convolution in place on that
  // layout (channels_last.h), unless a graph output shows it.
  std::vector<Expr> strides = index::contiguous_strides(window.result_sizes);
  if (options_.channels_last_intermediates && options_.channels_last_output_for &&
      window.direction == ConvolutionWindow::Direction::Forward &&
      is_image_batch(window.result_sizes, graph_.size_symbols()) &&
      layout_is_free(node.output.index)) {
    if (auto why_channels_last = options_.channels_last_output_for(call_at_hints(call))) {
      strides = StoreLoops(window.result_sizes, kImageChannelDim).strides;
      call.reason += "; its output stored channels last: " + *why_channels_last;
    }
  }
  return add_external_buffer(node, std::move(call), dtype, window.result_sizes, strides);
}

LoweredValue Lowerer::lower_convolution(const ir::Node& node, const ir::Value& out) {
  if (node.op == "convolution_backward") return lower_convolution_backward(node, out);
  const ir::ConvolutionArgs c = ir::convolution_args(graph_, node);
  refuse_transposed(graph_, node, c);
  const DType dtype = c.dtype;
  const std::vector<Expr> out_sizes = sizes_of(out.type);
  const LoweredValue& vin = value(c.input.index);
  const LoweredValue& vw = value(c.weight.index);
  const LoweredValue* vbias = c.bias ? &value(c.bias->index) : nullptr;

  std::vector<std::pair<const LoweredValue*, const char*>> operands = {{&vin, "input"},
                                                                       {&vw, "weight"}};
  if (vbias) operands.emplace_back(vbias, "bias");
  if (auto call = library_convolution(
          node, convolution_window(c, ConvolutionWindow::Direction::Forward, out_sizes), dtype,
          operands)) {
    return *call;
  }

  // The loop nest: idx = (n, co, o...), ridx = (ci, k...).
  const DType acc = convolution_accumulation_dtype(dtype);
  const size_t spatial = c.spatial_dims();
  const int64_t in_channels_per_group = c.weight_sizes[1];
  const int64_t out_channels_per_group = c.out_channels() / c.groups;
  const std::vector<Expr> in_spatial(vin.sizes.begin() + 2, vin.sizes.end());
  const Loader load_in = vin.loader;
  const Loader load_w = vw.loader;
  ComputedBuffer sum;
  sum.name = next_buffer_name();
  sum.dtype = acc;
  sum.sizes = out_sizes;
  sum.strides = index::contiguous_strides(out_sizes);
  sum.ranges = out_sizes;
  sum.reduction_ranges = {in_channels_per_group};
  for (size_t d = 0; d < spatial; ++d) sum.reduction_ranges.push_back(c.weight_sizes[2 + d]);
  sum.reduction = ReductionType::Sum;
  const std::vector<Expr> strides = sum.strides;
  sum.output_index = [strides](const std::vector<Expr>& idx) {
    return strided_offset(idx, strides);
  };
  const ConvolutionWindow window =
      convolution_window(c, ConvolutionWindow::Direction::Forward, out_sizes);
  sum.value = [load_in, load_w, acc, window, in_spatial, in_channels_per_group,
               out_channels_per_group](OpsHandler& h, const std::vector<Expr>& idx,
                                       const std::vector<Expr>& ridx) {
    const size_t spatial = in_spatial.size();
    Expr channel = ridx[0];
    if (window.groups > 1) {
      channel = channel + index::floordiv(idx[1], out_channels_per_group) * in_channels_per_group;
    }
    std::vector<Expr> at_in = {idx[0], channel};
    std::vector<Expr> at_w = {idx[1], ridx[0]};
    std::optional<OpsValue> inside;
    for (size_t d = 0; d < spatial; ++d) {
      const Expr pos =
          idx[2 + d] * window.stride[d] - window.padding[d] + ridx[1 + d] * window.dilation[d];
      at_in.push_back(pos);
      at_w.push_back(ridx[1 + d]);
      // Without padding every window lies inside the input (the output size says so).
      if (window.padding[d] > 0) {
        inside = both(h, inside, index_at_least(h, pos, 0));
        inside = both(h, inside, index_below(h, pos, in_spatial[d]));
      }
    }
    const OpsValue args[] = {masked_load(h, load_in, at_in, inside, acc),
                             convert(h, load_w(h, at_w), acc)};
    return h.compute(PointwiseOp::Mul, args, acc);
  };
  sum.origin = "mul+sum";
  result_.log.push_back(sum.name + " (" + node.op + "): a loop nest of window products summed in " +
                        std::string(dtype_name(acc)));
  std::vector<ComposedNodes> sum_operands = {vin.composed, vw.composed};
  LoweredValue summed = add_buffer(std::move(sum), ComposedNodes(node_index(node), sum_operands));
  summed.origin.clear();
  if (!vbias && acc == dtype) return summed;

  // The epilogue: + bias[co] in the accumulation dtype, then the dtype.
  const Loader load_sum = summed.loader;
  const Loader load_bias = vbias ? vbias->loader : Loader();
  LoweredValue v;
  v.dtype = dtype;
  v.sizes = out_sizes;
  v.stats = summed.stats;
  if (vbias) {
    v.stats += vbias->stats;
    v.stats += op_stats(PointwiseOp::Add);
  }
  v.loader = [load_sum, load_bias, acc, dtype](OpsHandler& h, const std::vector<Expr>& idx) {
    OpsValue r = load_sum(h, idx);
    if (load_bias) {
      const OpsValue args[] = {r, convert(h, load_bias(h, {idx[1]}), acc)};
      r = h.compute(PointwiseOp::Add, args, acc);
    }
    return convert(h, r, dtype);
  };
  v.origin = {node.op};
  std::vector<ComposedNodes> epilogue_operands = {summed.composed};
  if (vbias) epilogue_operands.push_back(vbias->composed);
  v.composed = ComposedNodes(node_index(node), std::move(epilogue_operands));
  return v;
}

}  // namespace stax::lowering
