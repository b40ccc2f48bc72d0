// Lowering of pointwise ops: each composes the loaders of its operands (Section 6.3).
#include "lowering/lowerer.h"

namespace stax::lowering {

LoweredValue Lowerer::lower_pointwise(const ir::Node& node, const ir::Value& out) {
  static const std::map<std::string, PointwiseOp> kUnary = {
      {"neg", PointwiseOp::Neg},   {"abs", PointwiseOp::Abs},         {"exp", PointwiseOp::Exp},
      {"log", PointwiseOp::Log},   {"sqrt", PointwiseOp::Sqrt},       {"rsqrt", PointwiseOp::Rsqrt},
      {"tanh", PointwiseOp::Tanh}, {"sigmoid", PointwiseOp::Sigmoid}, {"relu", PointwiseOp::Relu},
  };
  static const std::map<std::string, PointwiseOp> kBinary = {
      {"add", PointwiseOp::Add},         {"sub", PointwiseOp::Sub},
      {"mul", PointwiseOp::Mul},         {"div", PointwiseOp::Div},
      {"maximum", PointwiseOp::Maximum}, {"minimum", PointwiseOp::Minimum},
      {"gt", PointwiseOp::Gt},           {"lt", PointwiseOp::Lt},
      {"ge", PointwiseOp::Ge},           {"le", PointwiseOp::Le},
      {"eq", PointwiseOp::Eq},           {"ne", PointwiseOp::Ne},
  };
  LoweredValue v;
  v.dtype = out.type.dtype;
  v.sizes = out.type.sizes;
  v.origin = operand_origin(node);
  append_unique(v.origin, node.op);
  const auto& sizes = out.type.sizes;
  v.stats = operand_stats(node);
  if (auto it = kUnary.find(node.op); it != kUnary.end()) {
    Loader x = operand(node, 0, out.type.dtype, sizes);
    const PointwiseOp op = it->second;
    v.loader = [x, op](OpsHandler& h, const std::vector<Expr>& idx) {
      return apply(h, op, {x(h, idx)});
    };
    v.stats += op_stats(op);
  } else if (node.op == "pow") {
    Loader x = operand(node, 0, out.type.dtype, sizes);
    const double exponent = ir::scalar_arg(node, 1).value;
    const DType x_dtype = out.type.dtype;
    v.loader = [x, exponent, x_dtype](OpsHandler& h, const std::vector<Expr>& idx) {
      return apply(h, PointwiseOp::Pow, {x(h, idx), h.constant(exponent, x_dtype)});
    };
    v.stats += op_stats(PointwiseOp::Pow);
  } else if (node.op == "where") {
    Loader cond = operand(node, 0, DType::Bool, sizes);
    Loader a = operand(node, 1, out.type.dtype, sizes);
    Loader b = operand(node, 2, out.type.dtype, sizes);
    v.loader = [cond, a, b](OpsHandler& h, const std::vector<Expr>& idx) {
      return apply(h, PointwiseOp::Where, {cond(h, idx), a(h, idx), b(h, idx)});
    };
    v.stats += op_stats(PointwiseOp::Where);
  } else if (auto bit = kBinary.find(node.op); bit != kBinary.end()) {
    const PointwiseOp op = bit->second;
    const DType compute =
        op_info(op).produces_bool ? promote_operands(graph_, node, {0, 1}) : out.type.dtype;
    Loader a = operand(node, 0, compute, sizes);
    Loader b = operand(node, 1, compute, sizes);
    if ((op == PointwiseOp::Add || op == PointwiseOp::Sub) && node.args.size() > 2) {
      const double alpha = ir::scalar_arg(node, 2).value;
      if (alpha != 1.0) {
        Loader unscaled = b;
        b = [unscaled, alpha, compute](OpsHandler& h, const std::vector<Expr>& idx) {
          return apply(h, PointwiseOp::Mul, {unscaled(h, idx), h.constant(alpha, compute)});
        };
        v.stats += op_stats(PointwiseOp::Mul);
      }
    }
    v.loader = [a, b, op](OpsHandler& h, const std::vector<Expr>& idx) {
      return apply(h, op, {a(h, idx), b(h, idx)});
    };
    v.stats += op_stats(op);
  } else {
    throw std::invalid_argument("lowering: no lowering for pointwise op " + node.op);
  }
  return v;
}

}  // namespace stax::lowering
