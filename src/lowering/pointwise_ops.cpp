// The table of pointwise ops shared by lowering, the cost model and code generation.
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "lowering/ops_handler.h"

namespace stax::lowering {

namespace {
constexpr std::array<PointwiseOpInfo, 23> kOps = {{
    {PointwiseOp::Add, "add", 2, CostClass::Cheap, false},
    {PointwiseOp::Sub, "sub", 2, CostClass::Cheap, false},
    {PointwiseOp::Mul, "mul", 2, CostClass::Cheap, false},
    {PointwiseOp::Div, "div", 2, CostClass::Moderate, false},
    {PointwiseOp::Neg, "neg", 1, CostClass::Cheap, false},
    {PointwiseOp::Abs, "abs", 1, CostClass::Cheap, false},
    {PointwiseOp::Exp, "exp", 1, CostClass::Transcendental, false},
    {PointwiseOp::Log, "log", 1, CostClass::Transcendental, false},
    {PointwiseOp::Sqrt, "sqrt", 1, CostClass::Moderate, false},
    {PointwiseOp::Rsqrt, "rsqrt", 1, CostClass::Moderate, false},
    {PointwiseOp::Tanh, "tanh", 1, CostClass::Transcendental, false},
    {PointwiseOp::Sigmoid, "sigmoid", 1, CostClass::Transcendental, false},
    {PointwiseOp::Relu, "relu", 1, CostClass::Cheap, false},
    {PointwiseOp::Maximum, "maximum", 2, CostClass::Cheap, false},
    {PointwiseOp::Minimum, "minimum", 2, CostClass::Cheap, false},
    {PointwiseOp::PowScalar, "pow", 1, CostClass::Transcendental, false},
    {PointwiseOp::Where, "where", 3, CostClass::Cheap, false},
    {PointwiseOp::Gt, "gt", 2, CostClass::Cheap, true},
    {PointwiseOp::Lt, "lt", 2, CostClass::Cheap, true},
    {PointwiseOp::Ge, "ge", 2, CostClass::Cheap, true},
    {PointwiseOp::Le, "le", 2, CostClass::Cheap, true},
    {PointwiseOp::Eq, "eq", 2, CostClass::Cheap, true},
    {PointwiseOp::Ne, "ne", 2, CostClass::Cheap, true},
}};
}  // namespace

const PointwiseOpInfo& op_info(PointwiseOp op) {
  const auto& info = kOps.at(static_cast<size_t>(op));
  if (info.op != op) throw std::logic_error("pointwise op table out of order");
  return info;
}

std::string_view reduction_name(ReductionType type) {
  switch (type) {
    case ReductionType::Sum:
      return "sum";
    case ReductionType::Max:
      return "max";
    case ReductionType::Min:
      return "min";
  }
  return "?";
}

double reduction_identity(ReductionType type) {
  switch (type) {
    case ReductionType::Sum:
      return 0.0;
    case ReductionType::Max:
      return -std::numeric_limits<double>::infinity();
    case ReductionType::Min:
      return std::numeric_limits<double>::infinity();
  }
  return 0.0;
}

OpsValue apply(OpsHandler& handler, PointwiseOp op, std::initializer_list<OpsValue> args,
               double attribute) {
  const PointwiseOpInfo& info = op_info(op);
  if (static_cast<int>(args.size()) != info.arity) {
    throw std::logic_error(std::string("wrong number of operands for ") + std::string(info.name));
  }
  DType result = args.begin()->dtype;
  if (info.produces_bool) {
    result = DType::Bool;
  } else if (op == PointwiseOp::Where) {
    result = (args.begin() + 1)->dtype;
  }
  return handler.compute(op, std::span<const OpsValue>(args.begin(), args.size()), attribute,
                         result);
}

}  // namespace stax::lowering
