// Lowering of reductions (issue 6, point 4): each ATen reduction becomes one or two stored
// reduction buffers over the primitive ReductionTypes of ops_handler.h, plus a pointwise
// epilogue composed into the value's loader:
//   sum, prod      Sum / Prod of the input converted to the result dtype (integers and bool
//                  widened to int64 first; f16/bf16 accumulated in float32, rounded once);
//   mean           the sum rounded to the dtype, divided by N (PyTorch's sum(...).div_(N));
//   amax, amin     Max / Min (bool: Any / All, which are the same there);
//   argmax, argmin ArgMax / ArgMin, the row-major index over the reduced dims;
//   any, all       Any / All of to_dtype(bool), u8 results converted back;
//   var, std       WelfordM2 in double / max(0, N - correction), sqrt for std (PyTorch's
//                  accumulation for every floating dtype); a whole f32/f64 tensor's var/std
//                  is PyTorch's two passes instead: mean in the dtype, then the sum of
//                  (x - mean)^2 in double;
//   var_mean       that Welford var and the WelfordMean of the same value (one accumulator);
//   logsumexp      Max, then Sum(exp(x - shift)) with shift = max unless it is +-inf (then 0),
//                  then log(sum) + shift, each step rounded to the dtype as the ATen ops of
//                  PyTorch's composition are.
// f16/bf16 values are computed in float32 (ops never see them) and rounded to the dtype
// where an ATen op would round them.
#include <cmath>

#include "lowering/lowerer.h"

namespace stax::lowering {

namespace {

// The dtype PyTorch computes (and accumulates) a floating dtype in on the CPU.
DType compute_dtype(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 ? DType::Float32 : dtype;
}

// Rounds a value computed in float32 to a 16-bit result dtype and back, as storing an ATen
// op's f16/bf16 result does; identity for other dtypes.
OpsValue round_through(OpsHandler& h, OpsValue x, DType dtype) {
  if (compute_dtype(dtype) == dtype) return x;
  return h.to_dtype(h.to_dtype(x, dtype), x.dtype);
}

// Whether PyTorch's CPU var/std (not var_mean) of this result takes its two-pass path: a
// float32 or float64 result of one element (every dim of size > 1 reduced). Other results,
// and f16/bf16 ones, are Welford's, in double. A result whose element count is a symbol takes
// Welford's at every size: where the symbol is 1 at run time the two differ in rounding only.
bool two_pass_variance(DType result, const std::vector<Expr>& out_sizes) {
  if (result != DType::Float32 && result != DType::Float64) return false;
  return index::product(out_sizes) == Expr(1);
}

// The element count `count` as a value of `dtype`: a constant, or the count computed at run
// time from the size symbols.
OpsValue count_value(OpsHandler& h, const Expr& count, DType dtype) {
  if (const auto c = count.constant_value()) return h.constant(static_cast<double>(*c), dtype);
  return convert(h, h.index_value(count, DType::Int64), dtype);
}

// Which dims a reduction node reduces, and the index maps between the input, the kept loop
// variables of a reduction buffer and the node's output.
struct ReducedDims {
  std::vector<bool> reduced;  // per input dim
  bool keepdim = false;
  Expr count = 1;  // input elements per output element

  ReducedDims(const ir::Node& node, const std::vector<Expr>& in_sizes, size_t keepdim_position)
      : reduced(in_sizes.size(), false), keepdim(ir::bool_arg(node, keepdim_position)) {
    for (int64_t d : ir::reduction_dims(ir::int_list_arg(node, 1), in_sizes.size(), node.op)) {
      reduced[static_cast<size_t>(d)] = true;
      count = count * in_sizes[static_cast<size_t>(d)];
    }
  }

  // The input index of kept loop index `idx` and reduction index `ridx`.
  std::vector<Expr> input_index(const std::vector<Expr>& idx, const std::vector<Expr>& ridx) const {
    std::vector<Expr> full;
    size_t k = 0;
    size_t r = 0;
    for (bool is_reduced : reduced) full.push_back(is_reduced ? ridx[r++] : idx[k++]);
    return full;
  }

  // The output index (keepdim: 0 along reduced dims) of kept loop index `idx`.
  std::vector<Expr> output_index(const std::vector<Expr>& idx) const {
    if (!keepdim) return idx;
    std::vector<Expr> out;
    size_t k = 0;
    for (bool is_reduced : reduced) out.push_back(is_reduced ? Expr(0) : idx[k++]);
    return out;
  }
};

// The element function a reduction buffer reduces: (handler, input index, kept index).
using ReducedValue =
    std::function<OpsValue(OpsHandler&, const std::vector<Expr>&, const std::vector<Expr>&)>;

// Composes `epilogue` onto the loader of `stored` (a pointwise function of the stored
// reduction result), costed by the ops it applies; the epilogue is part of graph node
// `node`.
LoweredValue with_epilogue(const LoweredValue& stored, DType dtype, std::string origin, int node,
                           std::function<OpsValue(OpsHandler&, OpsValue)> epilogue,
                           std::initializer_list<PointwiseOp> ops) {
  LoweredValue v;
  v.dtype = dtype;
  v.sizes = stored.sizes;
  v.origin = {std::move(origin)};
  v.composed = ComposedNodes(node, {});
  Loader load = stored.loader;
  v.loader = [load, epilogue](OpsHandler& h, const std::vector<Expr>& idx) {
    return epilogue(h, load(h, idx));
  };
  v.stats = stored.stats;
  for (PointwiseOp op : ops) v.stats += op_stats(op);
  return v;
}

}  // namespace

LoweredValue Lowerer::lower_reduction(const ir::Node& node, const ir::Value& out) {
  const ir::Value& in = ir::tensor_arg(graph_, node, 0);
  const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
  const bool variance = node.op == "var" || node.op == "std" || node.op == "var_mean";
  const std::vector<Expr> in_sizes = sizes_of(in.type);
  const ReducedDims dims(node, in_sizes, variance ? 3 : 2);
  const DType result = out.type.dtype;
  const Loader x = src.loader;
  const DType from = src.dtype;
  const int self = node_index(node);

  // Stores one reduction of `element` over the node's reduced dims; the buffer has the
  // node's output sizes and the reduction's result dtype.
  auto reduce = [&](ReductionType type, DType value_dtype, ReducedValue element,
                    const std::string& what) {
    ComputedBuffer buf;
    buf.name = next_buffer_name();
    buf.dtype = reduction_result_dtype(type, value_dtype);
    buf.sizes = sizes_of(out.type);
    buf.strides = index::contiguous_strides(buf.sizes);
    buf.reduction = type;
    for (size_t d = 0; d < in_sizes.size(); ++d) {
      (dims.reduced[d] ? buf.reduction_ranges : buf.ranges).push_back(in_sizes[d]);
    }
    const std::vector<Expr> strides = buf.strides;
    const ReducedDims where = dims;
    buf.output_index = [strides, where](const std::vector<Expr>& idx) {
      return strided_offset(where.output_index(idx), strides);
    };
    buf.value = [element, where](OpsHandler& h, const std::vector<Expr>& idx,
                                 const std::vector<Expr>& ridx) {
      return element(h, where.input_index(idx, ridx), idx);
    };
    std::vector<std::string> origin = src.origin;
    origin.push_back(what);
    buf.origin = join(origin, "+");
    LoweredValue stored = add_buffer(std::move(buf), ComposedNodes(self, {src.composed}));
    stored.origin.clear();
    return stored;
  };
  // The input converted to `dtype`.
  auto input_as = [x, from](DType dtype) -> ReducedValue {
    return [x, from, dtype](OpsHandler& h, const std::vector<Expr>& full,
                            const std::vector<Expr>&) { return convert(h, x(h, full), dtype); };
  };
  // The input converted to `dtype` (the result dtype of sum(x, dtype=...)), then to the dtype
  // it is accumulated in.
  auto input_through = [x, from](DType dtype, DType accumulate) -> ReducedValue {
    return [x, from, dtype, accumulate](OpsHandler& h, const std::vector<Expr>& full,
                                        const std::vector<Expr>&) {
      return convert(h, convert(h, x(h, full), dtype), accumulate);
    };
  };
  auto to_result = [result](OpsHandler& h, OpsValue v) { return convert(h, v, result); };

  if (node.op == "sum" || node.op == "prod" || node.op == "mean") {
    const ReductionType type = node.op == "prod" ? ReductionType::Prod : ReductionType::Sum;
    const DType accumulate = is_floating(result) ? compute_dtype(result) : DType::Int64;
    LoweredValue stored = reduce(type, accumulate, input_through(result, accumulate),
                                 node.op == "prod" ? "prod" : "sum");
    if (node.op != "mean") {
      if (accumulate == result) return stored;
      return with_epilogue(stored, result, node.op, self, to_result, {});
    }
    // PyTorch's mean: the sum rounded to the dtype, divided by N in the compute dtype.
    const Expr count = dims.count;
    return with_epilogue(stored, result, "mean", self,
                         [count, result](OpsHandler& h, OpsValue sum) {
                           const OpsValue rounded = round_through(h, sum, result);
                           const OpsValue mean =
                               apply(h, PointwiseOp::Div,
                                     {rounded, count_value(h, count, rounded.dtype)});
                           return convert(h, mean, result);
                         },
                         {PointwiseOp::Div});
  }

  if (node.op == "amax" || node.op == "amin") {
    const bool max = node.op == "amax";
    if (result == DType::Bool) {  // on bool the maximum is any, the minimum all
      return reduce(max ? ReductionType::Any : ReductionType::All, DType::Bool,
                    input_as(DType::Bool), node.op);
    }
    const DType compute = compute_dtype(result);
    LoweredValue stored =
        reduce(max ? ReductionType::Max : ReductionType::Min, compute, input_as(compute), node.op);
    if (compute == result) return stored;
    return with_epilogue(stored, result, node.op, self, to_result, {});  // exact: the max is an f16
  }

  if (node.op == "argmax" || node.op == "argmin") {
    const DType compute = compute_dtype(from);
    return reduce(node.op == "argmax" ? ReductionType::ArgMax : ReductionType::ArgMin, compute,
                  input_as(compute), node.op);
  }

  if (node.op == "any" || node.op == "all") {
    LoweredValue stored = reduce(node.op == "any" ? ReductionType::Any : ReductionType::All,
                                 DType::Bool, input_as(DType::Bool), node.op);
    if (result == DType::Bool) return stored;
    return with_epilogue(stored, result, node.op, self, to_result, {});  // u8 inputs give u8
  }

  if (variance) {
    // PyTorch's CPU var/std/var_mean accumulate in double for every floating dtype (so that
    // values near the float32 range limits, and a large mean with a small spread, keep their
    // variance), and round once at the end.
    const DType accumulate = DType::Float64;
    if (node.op == "var_mean" && node.result_index == 1) {
      // var_mean's mean: WelfordMean of the same value over the same loops as its var (the
      // node of result 0), so the code generator can keep one accumulator for both. PyTorch's
      // mean of nothing is NaN (not the accumulator's 0).
      LoweredValue mean =
          reduce(ReductionType::WelfordMean, accumulate, input_as(accumulate), "mean");
      const Expr count = dims.count;
      return with_epilogue(
          mean, result, "mean", self,
          [count, result](OpsHandler& h, OpsValue m) {
            if (count.is_constant()) {
              return convert(h, count == Expr(0) ? h.constant(NAN, m.dtype) : m, result);
            }
            const OpsValue empty =
                apply(h, PointwiseOp::Eq,
                      {count_value(h, count, DType::Int64), h.constant(0.0, DType::Int64)});
            return convert(h, apply(h, PointwiseOp::Where, {empty, h.constant(NAN, m.dtype), m}),
                           result);
          },
          {});
    }
    // PyTorch's divisor max(0, N - correction): inf (or NaN for M2 = 0) when N <= correction.
    // With N known only at run time it is computed there; the sum of squares of nothing is 0,
    // so 0 / max(0, 0 - correction) gives eager's NaN for an empty reduction.
    const double correction = ir::scalar_arg(node, 2).as_double();
    const Expr count = dims.count;
    const bool take_sqrt = node.op == "std";
    const bool empty = count == Expr(0);  // PyTorch's var of nothing is NaN, any correction
    auto finish = [count, correction, take_sqrt, empty, result](OpsHandler& h,
                                                                OpsValue sum_of_squares) {
      if (empty) return convert(h, h.constant(NAN, sum_of_squares.dtype), result);
      const DType d = sum_of_squares.dtype;
      OpsValue divisor;
      if (const auto n = count.constant_value()) {
        divisor = h.constant(std::max(0.0, static_cast<double>(*n) - correction), d);
      } else {
        divisor = apply(
            h, PointwiseOp::Maximum,
            {apply(h, PointwiseOp::Sub, {count_value(h, count, d), h.constant(correction, d)}),
             h.constant(0.0, d)});
      }
      OpsValue v = apply(h, PointwiseOp::Div, {sum_of_squares, divisor});
      if (take_sqrt) v = apply(h, PointwiseOp::Sqrt, {v});
      return convert(h, v, result);
    };
    if (node.op != "var_mean" && two_pass_variance(result, sizes_of(out.type))) {
      // PyTorch's var/std of a whole float32/float64 tensor: mean() in the dtype first, then
      // the sum of (x - mean)^2 in double. Its mean rounds (and can overflow to inf where the
      // variance would not), so this is eager's answer, not Welford's.
      LoweredValue sum = reduce(ReductionType::Sum, result, input_as(result), "sum");
      const Expr count = dims.count;
      const Loader mean_at =
          with_epilogue(sum, result, "mean", self,
                        [count](OpsHandler& h, OpsValue s) {
                          return apply(h, PointwiseOp::Div, {s, count_value(h, count, s.dtype)});
                        },
                        {PointwiseOp::Div})
              .loader;
      const ReducedDims where = dims;
      LoweredValue squares = reduce(
          ReductionType::Sum, accumulate,
          [x, mean_at, where, accumulate](OpsHandler& h, const std::vector<Expr>& full,
                                          const std::vector<Expr>& idx) {
            const OpsValue mean = convert(h, mean_at(h, where.output_index(idx)), accumulate);
            const OpsValue dx =
                apply(h, PointwiseOp::Sub, {convert(h, x(h, full), accumulate), mean});
            return apply(h, PointwiseOp::Mul, {dx, dx});
          },
          "sub+mul+sum");
      return with_epilogue(squares, result, node.op, self, finish,
                           {PointwiseOp::Div, PointwiseOp::Sqrt});
    }
    LoweredValue m2 = reduce(ReductionType::WelfordM2, accumulate, input_as(accumulate),
                             node.op == "var_mean" ? "var" : node.op);
    return with_epilogue(m2, result, node.op, self, finish, {PointwiseOp::Div, PointwiseOp::Sqrt});
  }

  if (node.op == "logsumexp") {
    const DType compute = compute_dtype(result);
    // The input as PyTorch's composition sees it: converted to the (floating) result dtype.
    auto element = [x, result, compute](OpsHandler& h, const std::vector<Expr>& full) {
      return convert(h, convert(h, x(h, full), result), compute);
    };
    LoweredValue maxima = reduce(
        ReductionType::Max, compute,
        [element](OpsHandler& h, const std::vector<Expr>& full, const std::vector<Expr>&) {
          return element(h, full);
        },
        "amax");
    // shift = m, or 0 where m is +-inf (so inf - inf never happens).
    const Loader max_at = maxima.loader;
    auto shift = [max_at](OpsHandler& h, const std::vector<Expr>& out_idx) {
      const OpsValue m = max_at(h, out_idx);
      return apply(h, PointwiseOp::Where,
                   {apply(h, PointwiseOp::IsInf, {m}), h.constant(0.0, m.dtype), m});
    };
    const ReducedDims where = dims;
    LoweredValue sums = reduce(
        ReductionType::Sum, compute,
        [element, shift, where, result](OpsHandler& h, const std::vector<Expr>& full,
                                        const std::vector<Expr>& idx) {
          const OpsValue shifted = round_through(
              h, apply(h, PointwiseOp::Sub, {element(h, full), shift(h, where.output_index(idx))}),
              result);
          return round_through(h, apply(h, PointwiseOp::Exp, {shifted}), result);
        },
        "sub+exp+sum");
    LoweredValue v;
    v.dtype = result;
    v.sizes = sums.sizes;
    v.origin = {"logsumexp"};
    v.composed = ComposedNodes(self, {});
    const Loader sum_at = sums.loader;
    v.loader = [sum_at, shift, result](OpsHandler& h, const std::vector<Expr>& idx) {
      const OpsValue log_sum = round_through(
          h, apply(h, PointwiseOp::Log, {round_through(h, sum_at(h, idx), result)}), result);
      return convert(h, apply(h, PointwiseOp::Add, {log_sum, shift(h, idx)}), result);
    };
    v.stats = sums.stats;
    v.stats += maxima.stats;
    for (PointwiseOp op :
         {PointwiseOp::IsInf, PointwiseOp::Where, PointwiseOp::Log, PointwiseOp::Add}) {
      v.stats += op_stats(op);
    }
    return v;
  }

  throw std::invalid_argument("lowering: no lowering for reduction " + node.op);
}

}  // namespace stax::lowering
