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
#include "lowering/lowerer.h"
#include "lowering/region_masks.h"

namespace stax::lowering {

namespace {

// What eager's kernels accumulate in: float32 for the half types; integers wrap, and a
// wrapping int64 sum converts to the dtype exactly as a wrapping sum in the dtype would.
DType accumulation_dtype(DType dtype) {
  if (dtype == DType::Float64) return DType::Float64;
  if (is_floating(dtype)) return DType::Float32;
  return DType::Int64;
}

ExternalOperand contiguous_operand(DType dtype, const std::vector<int64_t>& sizes) {
  return ExternalOperand{"", false, dtype, sizes, ir::contiguous_strides(sizes), 0};
}

ConvolutionWindow window_of(const ir::ConvolutionArgs& c) {
  return ConvolutionWindow{c.stride, c.padding, c.dilation, c.groups};
}

ExternalCall convolution_call(const ir::ConvolutionArgs& c, ExternalOperand input,
                              ExternalOperand weight, std::optional<ExternalOperand> bias) {
  ExternalCall call;
  call.op = "convolution";
  call.a = std::move(input);
  call.b = std::move(weight);
  call.bias = std::move(bias);
  call.convolution = window_of(c);
  return call;
}

// The call with every operand contiguous: what the library is asked about before layouts are
// known (its choice of implementation does not depend on them).
ExternalCall contiguous_call(const ir::ConvolutionArgs& c, const ir::Graph& graph) {
  std::optional<ExternalOperand> bias;
  if (c.bias) bias = contiguous_operand(c.dtype, graph.value(*c.bias).type.sizes);
  return convolution_call(c, contiguous_operand(c.dtype, c.input_sizes),
                          contiguous_operand(c.dtype, c.weight_sizes), std::move(bias));
}

void refuse_transposed(const ir::Graph& graph, const ir::Node& node, const ir::ConvolutionArgs& c) {
  if (!c.transposed) return;
  throw std::invalid_argument(ir::describe_node(graph, node) +
                              ": a transposed convolution is not lowered by Stax yet (the "
                              "torch.compile bridge leaves it to PyTorch)");
}

}  // namespace

std::vector<ir::ValueRef> Lowerer::library_convolution_operands(const ir::Node& node) const {
  if (!options_.library_for) return {};
  const ir::ConvolutionArgs c = ir::convolution_args(graph_, node);
  if (c.transposed) return {};
  std::string why;
  if (!options_.library_for(contiguous_call(c, graph_), &why)) return {};
  std::vector<ir::ValueRef> operands = {c.input, c.weight};
  if (c.bias) operands.push_back(*c.bias);
  return operands;
}

LoweredValue Lowerer::lower_convolution(const ir::Node& node, const ir::Value& out) {
  const ir::ConvolutionArgs c = ir::convolution_args(graph_, node);
  refuse_transposed(graph_, node, c);
  const DType dtype = c.dtype;
  const std::vector<int64_t>& out_sizes = out.type.sizes;
  const LoweredValue& vin = value(c.input.index);
  const LoweredValue& vw = value(c.weight.index);
  const LoweredValue* vbias = c.bias ? &value(c.bias->index) : nullptr;

  // The library path: operands read in place where they are stored, else stored first.
  if (options_.library_for) {
    auto in_place = [](const LoweredValue& v) -> std::optional<ExternalOperand> {
      if (!v.layout) return std::nullopt;
      return ExternalOperand{v.layout->buffer, v.layout->is_input, v.dtype,
                             v.sizes,          v.layout->strides,  v.layout->offset};
    };
    std::optional<ExternalOperand> in = in_place(vin);
    std::optional<ExternalOperand> w = in_place(vw);
    std::optional<ExternalOperand> b = vbias ? in_place(*vbias) : std::nullopt;
    ExternalCall call = convolution_call(
        c, in ? *in : contiguous_operand(dtype, vin.sizes),
        w ? *w : contiguous_operand(dtype, vw.sizes),
        vbias ? std::optional(b ? *b : contiguous_operand(dtype, vbias->sizes)) : std::nullopt);
    std::string why;
    std::optional<std::string> library = options_.library_for(call, &why);
    if (!library && (in || w || b)) {
      // A layout the library refuses (a broadcast weight, say): the same call on stored
      // copies may still be one.
      in.reset();
      w.reset();
      b.reset();
      call = contiguous_call(c, graph_);
      library = options_.library_for(call, &why);
    }
    if (library) {
      call.library = *library;
      call.reason =
          "the target's " + *library + " runs convolution on " + std::string(dtype_name(dtype));
      auto store = [&](const LoweredValue& v, bool in_place_ok, const char* role,
                       ExternalOperand& into) {
        if (in_place_ok) return;
        LoweredValue r = realize(v, std::string(role) +
                                        " of convolution: the library reads "
                                        "stored tensors only");
        into.buffer = r.layout->buffer;
        into.is_input = false;
        into.strides = r.layout->strides;
        into.offset = 0;
      };
      store(vin, in.has_value(), "input", call.a);
      store(vw, w.has_value(), "weight", call.b);
      if (vbias) store(*vbias, b.has_value(), "bias", *call.bias);
      return add_external_buffer(node, std::move(call), dtype, out_sizes);
    }
    result_.log.push_back(ir::describe_node(graph_, node) + ": a loop nest, " + why);
  }

  // The loop nest: idx = (n, co, o...), ridx = (ci, k...).
  const DType acc = accumulation_dtype(dtype);
  const size_t spatial = c.spatial_dims();
  const int64_t in_channels_per_group = c.weight_sizes[1];
  const int64_t out_channels_per_group = c.out_channels() / c.groups;
  const std::vector<int64_t> in_spatial(c.input_sizes.begin() + 2, c.input_sizes.end());
  const Loader load_in = vin.loader;
  const Loader load_w = vw.loader;
  ComputedBuffer sum;
  sum.name = next_buffer_name();
  sum.dtype = acc;
  sum.sizes = out_sizes;
  sum.strides = ir::contiguous_strides(out_sizes);
  sum.ranges = out_sizes;
  sum.reduction_ranges = {in_channels_per_group};
  for (size_t d = 0; d < spatial; ++d) sum.reduction_ranges.push_back(c.weight_sizes[2 + d]);
  sum.reduction = ReductionType::Sum;
  const std::vector<int64_t> strides = sum.strides;
  sum.output_index = [strides](const std::vector<Expr>& idx) {
    return strided_offset(idx, strides);
  };
  const ConvolutionWindow window = window_of(c);
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
    OpsValue x;
    if (inside) {
      h.push_mask(*inside);
      x = convert(h, load_in(h, at_in), acc);
      h.pop_mask();
      x = select_where(h, *inside, x, h.constant(ir::Scalar(int64_t{0}), acc));
    } else {
      x = convert(h, load_in(h, at_in), acc);
    }
    const OpsValue args[] = {x, convert(h, load_w(h, at_w), acc)};
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
