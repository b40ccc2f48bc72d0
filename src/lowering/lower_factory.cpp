// Lowering of the factory ops (issue 7, point 3): each is an index -> element function like any
// pointwise value, so it fuses into its users and is stored only where the usual rules say
// (a graph output, or a value whose recomputation costs more than a buffer). A fill is one
// constant of the dtype, converted from the fill value as a cast converts (scalar_value); a
// range (arange, iota) is start + step * i from the index value, in the arithmetic
// ir::factory_args gives (int64 wrapping, double, or float), then converted to the dtype,
// operation for operation as the eager interpreter computes it (src/eager/factory.cpp).
#include <cmath>

#include "ir/factory_args.h"
#include "lowering/lowerer.h"

namespace stax::lowering {

namespace {

OpsValue fill_value(OpsHandler& h, const ir::Scalar& fill, DType dtype) {
  // scalar_value gives the value converted to `dtype`, in its opmath dtype (float32 for the
  // 16-bit dtypes, from which the rounding back is exact).
  return convert(h, scalar_value(h, fill, dtype, /*opmath_value=*/false), dtype);
}

OpsValue range_element(OpsHandler& h, const ir::FactoryArgs& a, const Expr& position) {
  const bool integral = a.arithmetic == ir::RangeArithmetic::Int64;
  const DType arithmetic = integral                                       ? DType::Int64
                           : a.arithmetic == ir::RangeArithmetic::Float64 ? DType::Float64
                                                                          : DType::Float32;
  // Exact int64 start and step for integral ranges (arange(2**63 - 3, 2**63 - 1)).
  const ir::Scalar start = integral ? ir::Scalar(a.int_start) : ir::Scalar(a.float_start);
  const ir::Scalar step = integral ? ir::Scalar(a.int_step) : ir::Scalar(a.float_step);
  // A unit step and a zero start (with a positive step, so that no product is -0.0) change
  // no bit: masks over arange(n) compute the index value alone.
  const bool unit_step = integral ? a.int_step == 1 : a.float_step == 1.0;
  const bool zero_start =
      integral ? a.int_start == 0
               : a.float_start == 0.0 && !std::signbit(a.float_start) && a.float_step > 0;
  OpsValue value = convert(h, h.index_value(position, DType::Int64), arithmetic);
  if (!unit_step) value = apply(h, PointwiseOp::Mul, {h.constant(step, arithmetic), value});
  if (!zero_start) value = apply(h, PointwiseOp::Add, {h.constant(start, arithmetic), value});
  return convert(h, value, a.dtype);
}

}  // namespace

LoweredValue Lowerer::lower_factory(const ir::Node& node, const ir::Value& out) {
  const ir::FactoryArgs args = ir::factory_args(graph_, node);
  LoweredValue v;
  v.dtype = out.type.dtype;
  v.sizes = sizes_of(out.type);
  v.origin = {node.op};
  if (const auto* start = std::get_if<ir::SymInt>(&node.args[0]); args.is_range && start) {
    // Issue 33: arange(s0, s0 + n) (positions after a cache of s0 tokens): a start known only
    // at run time, with a step of 1 and int bounds (the graph's shape rule requires them).
    const Expr first = start->expr;
    const DType dtype = args.dtype;
    v.loader = [first, dtype](OpsHandler& h, const std::vector<Expr>& idx) {
      return convert(h, h.index_value(first + idx.at(0), DType::Int64), dtype);
    };
    v.stats.cheap_ops += 2;
  } else if (args.is_range) {
    v.loader = [args](OpsHandler& h, const std::vector<Expr>& idx) {
      return range_element(h, args, idx.at(0));
    };
    // The index value's conversion, the multiply and the add, and the conversion to the dtype.
    v.stats += op_stats(PointwiseOp::Mul);
    v.stats += op_stats(PointwiseOp::Add);
    v.stats.cheap_ops += 2;
  } else {
    const ir::Scalar fill = args.fill;
    const DType dtype = args.dtype;
    v.loader = [fill, dtype](OpsHandler& h, const std::vector<Expr>&) {
      return fill_value(h, fill, dtype);
    };
  }
  return v;
}

}  // namespace stax::lowering
