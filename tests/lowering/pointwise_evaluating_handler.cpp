// The primitives of the test-only EvaluatingHandler (see evaluating_handler.h).
#include "pointwise_evaluating_handler.h"

#include <algorithm>
#include <limits>

namespace stax::lowering::testing {

namespace s = eager::scalar;
using P = PointwiseOp;

template <typename T>
OpsValue PointwiseEvaluatingHandler::float_op(PointwiseOp op, const std::vector<T>& x,
                                              DType dtype) {
  const T a = x[0];
  const T b = x.size() > 1 ? x[1] : T(0);
  auto result = [&](T v) { return make_float(dtype, static_cast<double>(v)); };
  auto boolean = [&](bool v) { return make_int(DType::Bool, v ? 1 : 0); };
  const T nan = std::numeric_limits<T>::quiet_NaN();
  switch (op) {
    case P::Add:
      return result(a + b);
    case P::Sub:
      return result(a - b);
    case P::Mul:
      return result(a * b);
    case P::Div:
      return result(a / b);
    case P::TruncDiv:
      return result(std::trunc(a / b));
    case P::FloorDiv:
      return result(s::floor_divide(a, b));
    case P::Remainder:
      return result(s::remainder(a, b));
    case P::Fmod:
      return result(std::fmod(a, b));
    case P::Pow:
      return result(std::pow(a, b));
    case P::Neg:
      return result(-a);
    case P::Abs:
      return result(std::abs(a));
    case P::Sign:
      return result(s::sign(a));
    case P::Reciprocal:
      return result(T(1) / a);
    case P::Maximum:
      return result(std::isnan(a) || std::isnan(b) ? nan : (a < b ? b : a));
    case P::Minimum:
      return result(std::isnan(a) || std::isnan(b) ? nan : (b < a ? b : a));
    case P::Fmax:
      return result(std::fmax(a, b));
    case P::Fmin:
      return result(std::fmin(a, b));
    case P::Atan2:
      return result(std::atan2(a, b));
    case P::Hypot:
      return result(std::hypot(a, b));
    case P::Copysign:
      return result(std::copysign(a, b));
    case P::LogicalAnd:
      return boolean(a != T(0) && b != T(0));
    case P::LogicalOr:
      return boolean(a != T(0) || b != T(0));
    case P::LogicalXor:
      return boolean((a != T(0)) != (b != T(0)));
    case P::LogicalNot:
      return boolean(a == T(0));
    case P::Eq:
      return boolean(a == b);
    case P::Ne:
      return boolean(a != b);
    case P::Lt:
      return boolean(a < b);
    case P::Le:
      return boolean(a <= b);
    case P::Gt:
      return boolean(a > b);
    case P::Ge:
      return boolean(a >= b);
    case P::Exp:
      return result(std::exp(a));
    case P::Exp2:
      return result(std::exp2(a));
    case P::Expm1:
      return result(std::expm1(a));
    case P::Log:
      return result(std::log(a));
    case P::Log2:
      return result(std::log2(a));
    case P::Log10:
      return result(std::log10(a));
    case P::Log1p:
      return result(std::log1p(a));
    case P::Sqrt:
      return result(std::sqrt(a));
    case P::Rsqrt:
      return result(T(1) / std::sqrt(a));
    case P::Sin:
      return result(std::sin(a));
    case P::Cos:
      return result(std::cos(a));
    case P::Tan:
      return result(std::tan(a));
    case P::Asin:
      return result(std::asin(a));
    case P::Acos:
      return result(std::acos(a));
    case P::Atan:
      return result(std::atan(a));
    case P::Sinh:
      return result(std::sinh(a));
    case P::Cosh:
      return result(std::cosh(a));
    case P::Tanh:
      return result(std::tanh(a));
    case P::Asinh:
      return result(std::asinh(a));
    case P::Acosh:
      return result(std::acosh(a));
    case P::Atanh:
      return result(std::atanh(a));
    case P::Erf:
      return result(std::erf(a));
    case P::Erfc:
      return result(std::erfc(a));
    case P::Erfinv:
      return result(static_cast<T>(s::erfinv(static_cast<double>(a))));
    case P::Sigmoid:
      return result(T(1) / (T(1) + std::exp(-a)));
    case P::Relu:
      return result(a < T(0) ? T(0) : a);
    case P::Floor:
      return result(std::floor(a));
    case P::Ceil:
      return result(std::ceil(a));
    case P::Round:
      return result(std::nearbyint(a));
    case P::Trunc:
      return result(std::trunc(a));
    case P::IsNan:
      return boolean(std::isnan(a));
    case P::IsInf:
      return boolean(std::isinf(a));
    default:
      throw std::logic_error(std::string(op_info(op).name) + " on floats");
  }
}

OpsValue PointwiseEvaluatingHandler::int_op(PointwiseOp op, const std::vector<int64_t>& x,
                                            DType dtype) {
  const int64_t a = x[0];
  const int64_t b = x.size() > 1 ? x[1] : 0;
  auto result = [&](int64_t v) { return make_int(dtype, v); };
  auto boolean = [&](bool v) { return make_int(DType::Bool, v ? 1 : 0); };
  const auto ua = static_cast<uint64_t>(a);
  const auto ub = static_cast<uint64_t>(b);
  const std::string name(op_info(op).name);
  switch (op) {
    case P::Add:
      return result(static_cast<int64_t>(ua + ub));
    case P::Sub:
      return result(static_cast<int64_t>(ua - ub));
    case P::Mul:
      return result(static_cast<int64_t>(ua * ub));
    case P::TruncDiv:
      return result(s::trunc_divide(a, b, name));
    case P::FloorDiv:
      return result(s::floor_divide(a, b, name));
    case P::Remainder:
      return result(s::remainder(a, b, name));
    case P::Fmod:
      return result(s::fmod(a, b, name));
    case P::Pow:
      return result(s::power(a, b));
    case P::Neg:
      return result(s::wrapping_neg(a));
    case P::Abs:
      return result(a < 0 ? s::wrapping_neg(a) : a);
    case P::Sign:
      return result(s::sign(a));
    case P::Maximum:
    case P::Fmax:
      return result(std::max(a, b));
    case P::Minimum:
    case P::Fmin:
      return result(std::min(a, b));
    case P::BitwiseAnd:
      return result(a & b);
    case P::BitwiseOr:
      return result(a | b);
    case P::BitwiseXor:
      return result(a ^ b);
    case P::BitwiseNot:
      return result(dtype == DType::Bool ? !a : ~a);
    case P::ShiftLeft:
      return result(s::shift_left(a, b));
    case P::ShiftRight:
      return result(s::shift_right(a, b));
    case P::LogicalAnd:
      return boolean(a != 0 && b != 0);
    case P::LogicalOr:
      return boolean(a != 0 || b != 0);
    case P::LogicalXor:
      return boolean((a != 0) != (b != 0));
    case P::LogicalNot:
      return boolean(a == 0);
    case P::Eq:
      return boolean(a == b);
    case P::Ne:
      return boolean(a != b);
    case P::Lt:
      return boolean(a < b);
    case P::Le:
      return boolean(a <= b);
    case P::Gt:
      return boolean(a > b);
    case P::Ge:
      return boolean(a >= b);
    case P::Relu:
      return result(std::max<int64_t>(a, 0));
    case P::Floor:
    case P::Ceil:
    case P::Round:
    case P::Trunc:
      return result(a);
    case P::IsNan:
    case P::IsInf:
      return boolean(false);
    default:
      throw std::logic_error(name + " on integers");
  }
}

OpsValue PointwiseEvaluatingHandler::compute(PointwiseOp op, std::span<const OpsValue> args,
                                             DType result) {
  OpsValue out;
  if (op == P::Where) {
    const Elem c = elems_.at(static_cast<size_t>(args[0].id));
    const Elem chosen = elems_.at(static_cast<size_t>(args[c.i != 0 ? 1 : 2].id));
    elems_.push_back(chosen);
    out = {static_cast<int>(elems_.size() - 1), chosen.dtype};
  } else {
    const DType dtype = args[0].dtype;
    if (dtype == DType::Float64) {
      std::vector<double> x;
      for (const OpsValue& a : args) x.push_back(elems_.at(static_cast<size_t>(a.id)).f);
      out = float_op<double>(op, x, dtype);
    } else if (dtype == DType::Float32) {
      std::vector<float> x;
      for (const OpsValue& a : args) {
        x.push_back(static_cast<float>(elems_.at(static_cast<size_t>(a.id)).f));
      }
      out = float_op<float>(op, x, dtype);
    } else {
      std::vector<int64_t> x;
      for (const OpsValue& a : args) x.push_back(elems_.at(static_cast<size_t>(a.id)).i);
      out = int_op(op, x, dtype);
    }
  }
  if (out.dtype != result) {
    throw std::logic_error(std::string(op_info(op).name) + ": evaluated to " +
                           std::string(dtype_name(out.dtype)) + ", apply() said " +
                           std::string(dtype_name(result)));
  }
  return out;
}

}  // namespace stax::lowering::testing
