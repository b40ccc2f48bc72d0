// The table of pointwise ops shared by lowering, the cost model and code generation, and the
// typing rule of apply(). Keep this table in the order of the PointwiseOp enum.
#include <array>
#include <stdexcept>
#include <string>

#include "lowering/ops_handler.h"

namespace stax::lowering {

namespace {

using C = CostClass;
using K = OperandKinds;
using P = PointwiseOp;

constexpr std::array<PointwiseOpInfo, kPointwiseOpCount> kOps = {{
    {P::Add, "add", 2, C::Cheap, false, K::Numeric},
    {P::Sub, "sub", 2, C::Cheap, false, K::Numeric},
    {P::Mul, "mul", 2, C::Cheap, false, K::Numeric},
    {P::Div, "div", 2, C::Moderate, false, K::Floating},
    {P::TruncDiv, "truncdiv", 2, C::Moderate, false, K::Numeric},
    {P::FloorDiv, "floordiv", 2, C::Moderate, false, K::Numeric},
    {P::Remainder, "remainder", 2, C::Moderate, false, K::Numeric},
    {P::Fmod, "fmod", 2, C::Moderate, false, K::Numeric},
    {P::Pow, "pow", 2, C::Transcendental, false, K::Numeric},
    {P::Neg, "neg", 1, C::Cheap, false, K::Numeric},
    {P::Abs, "abs", 1, C::Cheap, false, K::Numeric},
    {P::Sign, "sign", 1, C::Cheap, false, K::Numeric},
    {P::Reciprocal, "reciprocal", 1, C::Moderate, false, K::Floating},
    {P::Maximum, "maximum", 2, C::Cheap, false, K::Any},
    {P::Minimum, "minimum", 2, C::Cheap, false, K::Any},
    {P::Fmax, "fmax", 2, C::Cheap, false, K::Numeric},
    {P::Fmin, "fmin", 2, C::Cheap, false, K::Numeric},
    {P::Atan2, "atan2", 2, C::Transcendental, false, K::Floating},
    {P::Hypot, "hypot", 2, C::Moderate, false, K::Floating},
    {P::Copysign, "copysign", 2, C::Cheap, false, K::Floating},
    {P::BitwiseAnd, "bitwise_and", 2, C::Cheap, false, K::IntegerBool},
    {P::BitwiseOr, "bitwise_or", 2, C::Cheap, false, K::IntegerBool},
    {P::BitwiseXor, "bitwise_xor", 2, C::Cheap, false, K::IntegerBool},
    {P::BitwiseNot, "bitwise_not", 1, C::Cheap, false, K::IntegerBool},
    {P::ShiftLeft, "shift_left", 2, C::Cheap, false, K::Integer},
    {P::ShiftRight, "shift_right", 2, C::Cheap, false, K::Integer},
    {P::LogicalAnd, "logical_and", 2, C::Cheap, true, K::Any},
    {P::LogicalOr, "logical_or", 2, C::Cheap, true, K::Any},
    {P::LogicalXor, "logical_xor", 2, C::Cheap, true, K::Any},
    {P::LogicalNot, "logical_not", 1, C::Cheap, true, K::Any},
    {P::Eq, "eq", 2, C::Cheap, true, K::Any},
    {P::Ne, "ne", 2, C::Cheap, true, K::Any},
    {P::Lt, "lt", 2, C::Cheap, true, K::Any},
    {P::Le, "le", 2, C::Cheap, true, K::Any},
    {P::Gt, "gt", 2, C::Cheap, true, K::Any},
    {P::Ge, "ge", 2, C::Cheap, true, K::Any},
    {P::Exp, "exp", 1, C::Transcendental, false, K::Floating},
    {P::Exp2, "exp2", 1, C::Transcendental, false, K::Floating},
    {P::Expm1, "expm1", 1, C::Transcendental, false, K::Floating},
    {P::Log, "log", 1, C::Transcendental, false, K::Floating},
    {P::Log2, "log2", 1, C::Transcendental, false, K::Floating},
    {P::Log10, "log10", 1, C::Transcendental, false, K::Floating},
    {P::Log1p, "log1p", 1, C::Transcendental, false, K::Floating},
    {P::Sqrt, "sqrt", 1, C::Moderate, false, K::Floating},
    {P::Rsqrt, "rsqrt", 1, C::Moderate, false, K::Floating},
    {P::Sin, "sin", 1, C::Transcendental, false, K::Floating},
    {P::Cos, "cos", 1, C::Transcendental, false, K::Floating},
    {P::Tan, "tan", 1, C::Transcendental, false, K::Floating},
    {P::Asin, "asin", 1, C::Transcendental, false, K::Floating},
    {P::Acos, "acos", 1, C::Transcendental, false, K::Floating},
    {P::Atan, "atan", 1, C::Transcendental, false, K::Floating},
    {P::Sinh, "sinh", 1, C::Transcendental, false, K::Floating},
    {P::Cosh, "cosh", 1, C::Transcendental, false, K::Floating},
    {P::Tanh, "tanh", 1, C::Transcendental, false, K::Floating},
    {P::Asinh, "asinh", 1, C::Transcendental, false, K::Floating},
    {P::Acosh, "acosh", 1, C::Transcendental, false, K::Floating},
    {P::Atanh, "atanh", 1, C::Transcendental, false, K::Floating},
    {P::Erf, "erf", 1, C::Transcendental, false, K::Floating},
    {P::Erfc, "erfc", 1, C::Transcendental, false, K::Floating},
    {P::Erfinv, "erfinv", 1, C::Transcendental, false, K::Floating},
    {P::Sigmoid, "sigmoid", 1, C::Transcendental, false, K::Floating},
    {P::Relu, "relu", 1, C::Cheap, false, K::Numeric},
    {P::Floor, "floor", 1, C::Cheap, false, K::Numeric},
    {P::Ceil, "ceil", 1, C::Cheap, false, K::Numeric},
    {P::Round, "round", 1, C::Cheap, false, K::Numeric},
    {P::Trunc, "trunc", 1, C::Cheap, false, K::Numeric},
    {P::IsNan, "isnan", 1, C::Cheap, true, K::Any},
    {P::IsInf, "isinf", 1, C::Cheap, true, K::Any},
    {P::Where, "where", 3, C::Cheap, false, K::Any},
}};

bool kind_accepts(OperandKinds kinds, DType dtype) {
  if (dtype == DType::Float16 || dtype == DType::BFloat16) return false;
  switch (kinds) {
    case K::Any:
      return true;
    case K::Numeric:
      return dtype != DType::Bool;
    case K::Floating:
      return is_floating(dtype);
    case K::IntegerBool:
      return dtype == DType::Bool || is_integral(dtype);
    case K::Integer:
      return is_integral(dtype);
  }
  return false;
}

}  // namespace

const PointwiseOpInfo& op_info(PointwiseOp op) {
  const auto& info = kOps.at(static_cast<size_t>(op));
  if (info.op != op) throw std::logic_error("pointwise op table out of order");
  return info;
}

bool op_accepts(PointwiseOp op, DType dtype) {
  return kind_accepts(op_info(op).operands, dtype);
}

std::string_view reduction_name(ReductionType type) {
  switch (type) {
    case ReductionType::Sum:
      return "sum";
    case ReductionType::Prod:
      return "prod";
    case ReductionType::Max:
      return "max";
    case ReductionType::Min:
      return "min";
    case ReductionType::ArgMax:
      return "argmax";
    case ReductionType::ArgMin:
      return "argmin";
    case ReductionType::Any:
      return "any";
    case ReductionType::All:
      return "all";
    case ReductionType::WelfordMean:
      return "welford_mean";
    case ReductionType::WelfordM2:
      return "welford_m2";
  }
  return "?";
}

DType reduction_result_dtype(ReductionType type, DType value) {
  switch (type) {
    case ReductionType::ArgMax:
    case ReductionType::ArgMin:
      return DType::Int64;
    case ReductionType::Any:
    case ReductionType::All:
      return DType::Bool;
    default:
      return value;
  }
}

OpsValue apply(OpsHandler& handler, PointwiseOp op, std::initializer_list<OpsValue> args) {
  const PointwiseOpInfo& info = op_info(op);
  const std::string name(info.name);
  if (static_cast<int>(args.size()) != info.arity) {
    throw std::logic_error("wrong number of operands for " + name);
  }
  const OpsValue* first = args.begin();
  if (op == PointwiseOp::Where) {
    if (first[0].dtype != DType::Bool) throw std::logic_error("where: condition is not bool");
    if (first[1].dtype != first[2].dtype) {
      throw std::logic_error("where: branches of different dtypes " +
                             std::string(dtype_name(first[1].dtype)) + " and " +
                             std::string(dtype_name(first[2].dtype)));
    }
    if (first[1].dtype == DType::Float16 || first[1].dtype == DType::BFloat16) {
      throw std::logic_error("where: 16-bit float branches must be computed in float32");
    }
    return handler.compute(op, std::span<const OpsValue>(first, args.size()), first[1].dtype);
  }
  for (const OpsValue& a : args) {
    if (a.dtype != first->dtype) {
      throw std::logic_error(name + ": operands of different dtypes " +
                             std::string(dtype_name(first->dtype)) + " and " +
                             std::string(dtype_name(a.dtype)));
    }
  }
  if (!op_accepts(op, first->dtype)) {
    throw std::logic_error(name + ": not defined on " + std::string(dtype_name(first->dtype)) +
                           " operands");
  }
  const DType result = info.produces_bool ? DType::Bool : first->dtype;
  return handler.compute(op, std::span<const OpsValue>(first, args.size()), result);
}

}  // namespace stax::lowering
