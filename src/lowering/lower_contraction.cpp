// Lowering of contractions (issue 14): mm, bmm, addmm and baddbmm,
//   out[b, i, j] = beta * bias[b, i, j] + alpha * sum_k a[b, i, k] * mat2[b, k, j]
// (one matrix, no batch index, for mm and addmm; no bias for mm and bmm).
//
// Where the target has a library that runs the product (LoweringOptions::library_for), it
// becomes an external buffer: one library call that writes the whole output, its operands
// passed as strided layouts of the buffers they view. An operand whose layout the library
// cannot read (composed arithmetic, or a view with neither of its last two strides 1) is
// stored contiguously first. Otherwise (float64 and integer dtypes, which no library here
// computes, or a target without libraries) it is a loop nest: a sum reduction of products
// in the accumulation dtype (float32 for the half types, int64 for integers, whose wrapping
// sum then converts to the dtype exactly as a wrapping sum in the dtype would), and the
// alpha/beta epilogue as a pointwise value the scheduler can fuse with its consumers.
#include <stdexcept>
#include <utility>

#include "ir/attention_args.h"
#include "ir/scan_args.h"
#include "lowering/lowerer.h"

namespace stax::lowering {

namespace {

struct ContractionShape {
  bool batched = false;  // bmm, baddbmm
  bool has_bias = false;
  size_t a_pos = 0;  // argument positions
  size_t b_pos = 1;
};

ContractionShape contraction_shape(const std::string& op) {
  if (op == "mm") return {false, false, 0, 1};
  if (op == "bmm") return {true, false, 0, 1};
  if (op == "addmm") return {false, true, 1, 2};
  if (op == "baddbmm") return {true, true, 1, 2};
  throw std::logic_error("lowering: " + op + " is not a contraction");
}

// The dtype products are summed in: what eager's kernels accumulate in.
DType accumulation_dtype(DType dtype) {
  if (dtype == DType::Float64) return DType::Float64;
  if (is_floating(dtype)) return DType::Float32;
  return DType::Int64;
}

// Strides of `operand` seen at `out_sizes` (broadcast dims get stride 0), PyTorch's rules. With
// size symbols (issue 33) a dim broadcasts where its size is not the output's at every size:
// the shape rules make it the constant 1 then.
std::vector<Expr> broadcast_strides(const std::vector<Expr>& sizes,
                                    const std::vector<Expr>& strides,
                                    const std::vector<Expr>& out_sizes) {
  std::vector<Expr> out(out_sizes.size(), Expr(0));
  const size_t shift = out_sizes.size() - sizes.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    out[d + shift] = sizes[d] == out_sizes[d + shift] ? strides[d] : Expr(0);
  }
  return out;
}

// Whether a library reads the matrix dims of this layout directly: one of the last two strides
// is 1 (row- or column-major matrices, any leading stride), at every size.
bool library_readable(const std::vector<Expr>& sizes, const std::vector<Expr>& strides) {
  const size_t n = sizes.size();
  auto unit = [&](size_t d) {
    const std::optional<int64_t> size = sizes[d].constant_value();
    return strides[d] == Expr(1) || (size && *size <= 1);
  };
  return unit(n - 1) || unit(n - 2);
}

}  // namespace

LoweredValue Lowerer::sum_of_products(const ir::Node& node, const std::vector<Expr>& out_sizes,
                                      size_t a_pos, size_t b_pos, DType acc) {
  const LoweredValue& va = value(std::get<ir::ValueRef>(node.args[a_pos]).index);
  const LoweredValue& vb = value(std::get<ir::ValueRef>(node.args[b_pos]).index);
  const Loader la = va.loader;
  const Loader lb = vb.loader;
  ComputedBuffer sum;
  sum.name = next_buffer_name();
  sum.dtype = acc;
  sum.sizes = out_sizes;
  sum.strides = index::contiguous_strides(out_sizes);
  sum.ranges = out_sizes;
  sum.reduction_ranges = {va.sizes.back()};
  sum.reduction = ReductionType::Sum;
  const std::vector<Expr> strides = sum.strides;
  sum.output_index = [strides](const std::vector<Expr>& idx) {
    return strided_offset(idx, strides);
  };
  sum.value = [la, lb, acc](OpsHandler& h, const std::vector<Expr>& idx,
                            const std::vector<Expr>& ridx) {
    // idx = (batch..., i, j), ridx = (k): a[..., i, k] * mat2[..., k, j].
    std::vector<Expr> ia(idx.begin(), idx.end() - 1);
    ia.push_back(ridx[0]);
    std::vector<Expr> ib(idx.begin(), idx.end() - 2);
    ib.push_back(ridx[0]);
    ib.push_back(idx.back());
    const OpsValue args[] = {convert(h, la(h, ia), acc), convert(h, lb(h, ib), acc)};
    return h.compute(PointwiseOp::Mul, args, acc);
  };
  sum.origin = "mul+sum";
  result_.log.push_back(sum.name + " (" + node.op + "): a loop nest of products summed in " +
                        std::string(dtype_name(acc)));
  LoweredValue summed = add_buffer(std::move(sum), composed_over_operands(node));
  summed.origin.clear();
  return summed;
}

namespace {

// The scalars of a contraction node and what they imply.
struct ContractionScalars {
  ir::Scalar alpha;
  ir::Scalar beta;
  bool reads_bias = false;
  bool skips_product = false;
};

ContractionScalars contraction_scalars(const ir::Graph& graph, const ir::Node& node,
                                       const ContractionShape& shape) {
  ContractionScalars s;
  s.beta = shape.has_bias ? ir::scalar_arg(node, 3) : ir::Scalar(int64_t{0});
  s.alpha = shape.has_bias ? ir::scalar_arg(node, 4) : ir::Scalar(int64_t{1});
  // beta == 0 ignores the bias, NaN and infinity included, as eager does.
  s.reads_bias = shape.has_bias && !s.beta.is_zero();
  // Eager skips the product when alpha == 0 where it calls a BLAS, so the result is
  // beta * bias even where the product is NaN: float32 and float64 addmm, and baddbmm of 400
  // or more products per matrix (M * N * K; below that its own loop computes 0 * (a @ b)).
  // The 16-bit dtypes always compute it. Probed on torch 2.13.0 with an inf factor, on an AMD
  // Zen 2: NaN at 1x399x1, 19x1x21 and 7x7x7, beta * bias at 1x400x1, 20x1x20 and 8x8x8, for
  // any batch: torch picks its loop or the BLAS by that size, on any CPU.
  const ir::TensorType& out = graph.value(node.output).type;
  const DType dtype = out.dtype;
  bool blas = node.op == "addmm";
  if (node.op == "baddbmm") {
    const int64_t k = graph.value(std::get<ir::ValueRef>(node.args[shape.a_pos])).type.sizes.back();
    const size_t rank = out.sizes.size();
    blas = out.sizes[rank - 2] * out.sizes[rank - 1] * k >= 400;
  }
  s.skips_product =
      blas && s.alpha.is_zero() && (dtype == DType::Float32 || dtype == DType::Float64);
  return s;
}

ExternalOperand contiguous_operand(DType dtype, const std::vector<Expr>& sizes) {
  return ExternalOperand{"", false, dtype, sizes, index::contiguous_strides(sizes), 0};
}

// The call a contraction node makes, over the given operands (the bias only if it is read).
ExternalCall contraction_call(const std::string& op, const ContractionScalars& scalars,
                              ExternalOperand a, ExternalOperand b,
                              std::optional<ExternalOperand> bias) {
  ExternalCall call;
  call.op = op;
  call.a = std::move(a);
  call.b = std::move(b);
  if (scalars.reads_bias) call.bias = std::move(bias);
  call.alpha = scalars.alpha.as_double();
  call.beta = scalars.reads_bias ? scalars.beta.as_double() : 0.0;
  call.alpha_zero_skips_product = scalars.skips_product;
  return call;
}

}  // namespace

std::vector<ir::ValueRef> Lowerer::library_operands(const ir::Node& node) const {
  const ir::OpSchema* schema = ir::find_op_schema(node.op);
  if (schema == nullptr) return {};
  if (schema->category == ir::OpCategory::Contraction) return library_matrix_operands(node);
  if (schema->category == ir::OpCategory::Convolution) return library_convolution_operands(node);
  if (schema->category == ir::OpCategory::Scatter) {
    const ir::ScatterArgs a = ir::scatter_args(graph_, node);
    std::vector<ir::ValueRef> operands = {a.layout.source};
    for (const ir::IndexTerm& t : a.layout.terms) operands.push_back(t.index);
    if (a.values) operands.push_back(*a.values);
    return operands;
  }
  if (schema->category == ir::OpCategory::Attention) {
    const ir::AttentionArgs a = ir::attention_args(graph_, node);
    std::vector<ir::ValueRef> operands = {a.query, a.key, a.value};
    if (a.mask) operands.push_back(*a.mask);
    if (a.backward) operands.insert(operands.end(), {a.grad_out, a.out, a.logsumexp});
    return operands;
  }
  if (schema->category == ir::OpCategory::Scan) {
    // A scan whose input is converted first reads the conversion, which lower_scan stores.
    const ir::ScanArgs a = ir::scan_args(graph_, node);
    if (a.input_dtype == a.dtype) return {a.self};
  }
  return {};
}

std::vector<ir::ValueRef> Lowerer::library_matrix_operands(const ir::Node& node) const {
  if (!options_.library_for) return {};
  const ContractionShape shape = contraction_shape(node.op);
  const ir::Value& out = graph_.value(node.output);
  const ContractionScalars scalars = contraction_scalars(graph_, node, shape);
  auto ref = [&](size_t pos) { return std::get<ir::ValueRef>(node.args[pos]); };
  auto type = [&](size_t pos) -> const ir::TensorType& { return graph_.value(ref(pos)).type; };
  // Layouts aside, the call the node lowers to (the library's choice does not depend on them).
  // At the hints for a symbolic node: the library's choice depends on the dtypes.
  auto sizes = [&](const ir::TensorType& t) { return index::to_exprs(t.sizes); };
  std::optional<ExternalOperand> bias;
  if (scalars.reads_bias) bias = contiguous_operand(type(0).dtype, sizes(out.type));
  const ExternalCall call = contraction_call(
      node.op, scalars, contiguous_operand(type(shape.a_pos).dtype, sizes(type(shape.a_pos))),
      contiguous_operand(type(shape.b_pos).dtype, sizes(type(shape.b_pos))), bias);
  std::string why;
  if (!options_.library_for(call, &why)) return {};
  std::vector<ir::ValueRef> operands = {ref(shape.a_pos), ref(shape.b_pos)};
  if (scalars.reads_bias) operands.push_back(ref(0));
  return operands;
}

LoweredValue Lowerer::lower_contraction(const ir::Node& node, const ir::Value& out) {
  const ContractionShape shape = contraction_shape(node.op);
  const DType dtype = out.type.dtype;
  const std::vector<Expr> out_sizes = ir::symbolic_sizes_of(out.type);
  auto operand_value = [&](size_t pos) -> const LoweredValue& {
    return value(std::get<ir::ValueRef>(node.args[pos]).index);
  };
  const ContractionScalars scalars = contraction_scalars(graph_, node, shape);
  const ir::Scalar& alpha = scalars.alpha;  // the loop nest's epilogue below
  const ir::Scalar& beta = scalars.beta;
  const bool reads_bias = scalars.reads_bias;
  const bool skips_product = scalars.skips_product;

  // The library path.
  if (options_.library_for) {
    auto as_operand = [&](const LoweredValue& v, const std::vector<Expr>& at_sizes,
                          bool broadcast) -> std::optional<ExternalOperand> {
      if (!v.layout) return std::nullopt;
      ExternalOperand op{
          v.layout->buffer,
          v.layout->is_input,
          v.dtype,
          at_sizes,
          broadcast ? broadcast_strides(v.sizes, v.layout->strides, at_sizes) : v.layout->strides,
          v.layout->offset};
      if (!library_readable(op.sizes, op.strides)) return std::nullopt;
      return op;
    };
    const LoweredValue& va = operand_value(shape.a_pos);
    const LoweredValue& vb = operand_value(shape.b_pos);
    // Operands stored contiguously first where the library cannot read them as they are.
    std::optional<ExternalOperand> a = as_operand(va, va.sizes, false);
    std::optional<ExternalOperand> b = as_operand(vb, vb.sizes, false);
    std::optional<ExternalOperand> bias;  // as read in place, if it can be
    std::optional<ExternalOperand> bias_operand;
    if (reads_bias) {
      bias = as_operand(operand_value(0), out_sizes, true);
      bias_operand = bias ? *bias : contiguous_operand(operand_value(0).dtype, out_sizes);
    }
    ExternalCall call =
        contraction_call(node.op, scalars, a ? *a : contiguous_operand(va.dtype, va.sizes),
                         b ? *b : contiguous_operand(vb.dtype, vb.sizes), bias_operand);
    std::string why;
    std::optional<std::string> library = library_for_call(call, &why);
    if (library) {
      call.library = *library;
      call.reason =
          "the target's " + *library + " runs " + node.op + " on " + std::string(dtype_name(dtype));
      if (!why.empty()) call.reason += " " + why;
      auto store_unreadable = [&](const LoweredValue& v, bool readable,
                                  const std::vector<Expr>& at_sizes, bool broadcast,
                                  const char* role, ExternalOperand& into) {
        if (readable) return;
        LoweredValue r = realize(v, std::string("operand ") + role + " of " + node.op +
                                        ": the library reads only strided matrices");
        into.buffer = r.layout->buffer;
        into.strides =
            broadcast ? broadcast_strides(v.sizes, r.layout->strides, at_sizes) : r.layout->strides;
      };
      store_unreadable(va, a.has_value(), va.sizes, false, "a", call.a);
      store_unreadable(vb, b.has_value(), vb.sizes, false, "mat2", call.b);
      if (reads_bias) {
        store_unreadable(operand_value(0), bias.has_value(), out_sizes, true, "bias", *call.bias);
      }
      return add_external_buffer(node, std::move(call), dtype, out_sizes,
                                 index::contiguous_strides(out_sizes));
    }
    result_.log.push_back(ir::describe_node(graph_, node) + ": a loop nest, " + why);
  }

  // The loop nest: a sum of products in the accumulation dtype.
  const DType acc = accumulation_dtype(dtype);
  std::optional<LoweredValue> summed;
  if (!skips_product) summed = sum_of_products(node, out_sizes, shape.a_pos, shape.b_pos, acc);

  // The epilogue: alpha * sum + beta * bias, in the accumulation dtype, then the dtype.
  if (summed && !reads_bias && alpha.equals(1.0) && acc == dtype) return *summed;
  Loader ls = summed ? summed->loader : Loader();
  Loader lc;
  IndexMap c_map;
  if (reads_bias) {
    const LoweredValue& vc = operand_value(0);
    lc = vc.loader;
    c_map = broadcast_index(vc.sizes, out_sizes);
  }
  const bool scale = !alpha.equals(1.0);
  LoweredValue v;
  v.dtype = dtype;
  v.sizes = out_sizes;
  if (summed) v.stats = summed->stats;
  if (scale) v.stats += op_stats(PointwiseOp::Mul);
  if (reads_bias) {
    v.stats += operand_value(0).stats;
    v.stats += op_stats(PointwiseOp::Mul);
    v.stats += op_stats(PointwiseOp::Add);
  }
  v.loader = [ls, lc, c_map, acc, dtype, alpha, beta, scale](OpsHandler& h,
                                                             const std::vector<Expr>& idx) {
    std::optional<OpsValue> r;
    if (ls) {
      r = ls(h, idx);
      if (scale) {
        const OpsValue args[] = {h.constant(alpha, acc), *r};
        r = h.compute(PointwiseOp::Mul, args, acc);
      }
    }
    if (lc) {
      OpsValue c = convert(h, lc(h, c_map(idx)), acc);
      if (!beta.equals(1.0)) {
        const OpsValue args[] = {h.constant(beta, acc), c};
        c = h.compute(PointwiseOp::Mul, args, acc);
      }
      if (r) {
        const OpsValue args[] = {c, *r};
        c = h.compute(PointwiseOp::Add, args, acc);
      }
      r = c;
    }
    if (!r) r = h.constant(ir::Scalar(int64_t{0}), acc);  // alpha == 0 skipped, beta == 0
    return convert(h, *r, dtype);
  };
  v.origin = {node.op};
  std::vector<ComposedNodes> epilogue_operands;
  if (summed) epilogue_operands.push_back(summed->composed);
  if (reads_bias) epilogue_operands.push_back(operand_value(0).composed);
  v.composed = ComposedNodes(node_index(node), std::move(epilogue_operands));
  return v;
}

LoweredValue Lowerer::add_external_buffer(const ir::Node& node, ExternalCall call, DType dtype,
                                          const std::vector<int64_t>& sizes,
                                          std::optional<std::vector<int64_t>> strides) {
  return add_external_buffer(node, std::move(call), dtype, index::to_exprs(sizes),
                             index::to_exprs(strides ? *strides : ir::contiguous_strides(sizes)));
}

LoweredValue Lowerer::add_external_buffer(const ir::Node& node, ExternalCall call, DType dtype,
                                          const std::vector<Expr>& sizes,
                                          const std::vector<Expr>& strides) {
  ComputedBuffer buf;
  buf.name = next_buffer_name();
  buf.dtype = dtype;
  buf.sizes = sizes;
  buf.strides = strides;
  buf.ranges = sizes;
  buf.origin = node.op;
  result_.log.push_back(buf.name + " (" + node.op + "): an external call, " + call.reason);
  buf.external = std::make_shared<const ExternalCall>(std::move(call));
  return add_buffer(std::move(buf), ComposedNodes(node_index(node), {}));
}

void Lowerer::find_values_stored_for_libraries() {
  auto is_view_or_copy = [](const ir::Node& n) {
    const ir::OpSchema* schema = ir::find_op_schema(n.op);
    return schema != nullptr &&
           (schema->category == ir::OpCategory::View || n.op == "clone" || n.op == "contiguous");
  };
  for (const ir::Node& node : graph_.nodes()) {
    for (ir::ValueRef operand : library_operands(node)) {
      // Back through views and copies to the value they read; shared along the way?
      int idx = operand.index;
      bool shared = reads_.count(idx) && reads_.at(idx) > 1;
      while (true) {
        const int producer = graph_.value(ir::ValueRef{idx}).producer;
        if (producer < 0) break;  // a graph input: read in place
        const ir::Node& p = graph_.nodes()[static_cast<size_t>(producer)];
        if (!is_view_or_copy(p)) break;
        idx = std::get<ir::ValueRef>(p.args[0]).index;
        shared = shared || (reads_.count(idx) && reads_.at(idx) > 1);
      }
      if (!shared || graph_.value(ir::ValueRef{idx}).producer < 0) continue;
      stored_for_library_.emplace(
          idx, "read whole by " + ir::describe_node(graph_, node) +
                   " (a library call) and by other users: stored once, all of them load it");
    }
  }
}

}  // namespace stax::lowering
