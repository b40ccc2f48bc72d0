// Pointwise ops of the eager interpreter: unary math, binary arithmetic (with broadcasting and
// scalar operands), comparisons, pow with a scalar exponent and where. Integral and bool results
// are computed with exact 64-bit integer arithmetic (wrapping like PyTorch's integer kernels);
// floating results follow PyTorch: arithmetic in double rounded once to the result dtype,
// unary math in float for f32/f16/bf16 results and in double for f64.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "eager/ops.h"
#include "ir/op_schema.h"
#include "ir/type_promotion.h"

namespace stax::eager::detail {

namespace {

// One input of a pointwise op: a tensor broadcast to the output sizes, or a scalar literal.
struct Operand {
  bool is_scalar = false;
  ir::Scalar scalar;
  Tensor tensor;              // broadcast view, when not a scalar
  DType dtype = DType::Bool;  // of the original tensor

  double value(const std::vector<int64_t>& index) const {
    return is_scalar ? scalar.value : tensor.get(index);
  }
  int64_t int_value(const std::vector<int64_t>& index) const {
    return is_scalar ? scalar_as_int(scalar) : load_int(tensor, index);
  }
};

Operand operand(const Env& env, const ir::Node& node, size_t position,
                const std::vector<int64_t>& sizes) {
  Operand o;
  if (ir::is_tensor_arg(node, position)) {
    const Tensor& t = env.tensor(node, position);
    o.tensor = broadcast_to(t, sizes);
    o.dtype = t.dtype();
  } else {
    o.is_scalar = true;
    o.scalar = ir::scalar_arg(node, position);
  }
  return o;
}

// Allocates the result of `node` and calls body(out, index) for every output element.
template <typename Body>
Tensor for_each_output(const Env& env, const ir::Node& node, Body body) {
  const ir::TensorType& type = env.result_type(node);
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  const int64_t n = out.numel();
  for (int64_t p = 0; p < n; ++p) body(out, unravel_index(p, type.sizes));
  return out;
}

std::runtime_error zero_division(const std::string& op) {
  return std::runtime_error("eager: " + op + ": ZeroDivisionError (integer division by zero)");
}

uint64_t u(int64_t v) {
  return static_cast<uint64_t>(v);
}
int64_t s(uint64_t v) {
  return static_cast<int64_t>(v);
}  // modular in C++20

// ---- unary ----

template <typename T>
T unary_float(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::Neg:
      return -x;
    case UnaryOp::Abs:
      return std::abs(x);
    case UnaryOp::Exp:
      return std::exp(x);
    case UnaryOp::Log:
      return std::log(x);
    case UnaryOp::Sqrt:
      return std::sqrt(x);
    case UnaryOp::Rsqrt:
      return T(1) / std::sqrt(x);
    case UnaryOp::Tanh:
      return std::tanh(x);
    case UnaryOp::Sigmoid:
      return T(1) / (T(1) + std::exp(-x));
    case UnaryOp::Relu:
      return std::isnan(x) ? x : (x > T(0) ? x : T(0));
  }
  throw std::logic_error("eager: unknown unary op");
}

int64_t unary_int(UnaryOp op, int64_t x, const std::string& name) {
  switch (op) {
    case UnaryOp::Neg:
      return s(0 - u(x));
    case UnaryOp::Abs:
      return x < 0 ? s(0 - u(x)) : x;
    case UnaryOp::Relu:
      return std::max<int64_t>(x, 0);
    default:
      throw std::logic_error("eager: " + name + " with an integral result");
  }
}

// ---- binary ----

// Python's floor division of floats (the result rounds toward -inf; exact cases stay exact).
template <typename T>
T floor_divide(T a, T b) {
  if (b == T(0)) return a / b;
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  if (div == T(0)) return std::copysign(T(0), a / b);
  T floored = std::floor(div);
  if (div - floored > T(0.5)) floored += T(1);
  return floored;
}

template <typename T>
T divide_rounded(T a, T b, const std::string& mode) {
  if (mode == "trunc") return std::trunc(a / b);
  return floor_divide(a, b);
}

double binary_float(BinaryOp op, double a, double b, double alpha) {
  switch (op) {
    case BinaryOp::Add:
      return a + alpha * b;
    case BinaryOp::Sub:
      return a - alpha * b;
    case BinaryOp::Mul:
      return a * b;
    case BinaryOp::Div:
      return a / b;
    case BinaryOp::Maximum:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
      return std::max(a, b);
    case BinaryOp::Minimum:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
      return std::min(a, b);
  }
  throw std::logic_error("eager: unknown binary op");
}

int64_t binary_int(BinaryOp op, int64_t a, int64_t b, int64_t alpha,
                   const std::optional<std::string>& mode, const std::string& name) {
  switch (op) {
    case BinaryOp::Add:
      return s(u(a) + u(alpha) * u(b));
    case BinaryOp::Sub:
      return s(u(a) - u(alpha) * u(b));
    case BinaryOp::Mul:
      return s(u(a) * u(b));
    case BinaryOp::Maximum:
      return std::max(a, b);
    case BinaryOp::Minimum:
      return std::min(a, b);
    case BinaryOp::Div: {
      if (!mode) throw std::logic_error("eager: " + name + " without rounding mode on integers");
      if (b == 0) throw zero_division(name);
      if (a == std::numeric_limits<int64_t>::min() && b == -1) return a;  // wraps
      int64_t q = a / b;
      if (*mode == "floor" && a % b != 0 && ((a < 0) != (b < 0))) q -= 1;
      return q;
    }
  }
  throw std::logic_error("eager: unknown binary op");
}

bool compare_values(CompareOp op, auto a, auto b) {
  switch (op) {
    case CompareOp::Gt:
      return a > b;
    case CompareOp::Lt:
      return a < b;
    case CompareOp::Ge:
      return a >= b;
    case CompareOp::Le:
      return a <= b;
    case CompareOp::Eq:
      return a == b;
    case CompareOp::Ne:
      return a != b;
  }
  throw std::logic_error("eager: unknown comparison");
}

// x ** n for integers by repeated squaring, wrapping on overflow; n >= 0.
int64_t int_power(int64_t x, int64_t n) {
  uint64_t result = 1;
  uint64_t base = u(x);
  while (n > 0) {
    if (n & 1) result *= base;
    base *= base;
    n >>= 1;
  }
  return s(result);
}

template <typename T>
T float_power(T x, T e) {
  if (e == T(2)) return x * x;
  if (e == T(3)) return x * x * x;
  if (e == T(0.5)) return std::sqrt(x);
  if (e == T(-0.5)) return T(1) / std::sqrt(x);
  if (e == T(-1)) return T(1) / x;
  if (e == T(-2)) return T(1) / (x * x);
  if (e == T(1)) return x;
  if (e == T(0)) return T(1);
  return std::pow(x, e);
}

}  // namespace

Tensor eval_unary(const Env& env, const ir::Node& node, UnaryOp op) {
  const Tensor& in = env.tensor(node, 0);
  const DType out_dtype = env.result_type(node).dtype;
  return for_each_output(env, node, [&](const Tensor& out, const std::vector<int64_t>& index) {
    if (is_integer_like(out_dtype)) {
      store_int(out, index, unary_int(op, load_int(in, index), node.op));
    } else if (out_dtype == DType::Float64) {
      out.set(index, unary_float<double>(op, in.get(index)));
    } else {
      out.set(index, unary_float<float>(op, static_cast<float>(in.get(index))));
    }
  });
}

Tensor eval_binary(const Env& env, const ir::Node& node, BinaryOp op) {
  const ir::TensorType& type = env.result_type(node);
  const Operand a = operand(env, node, 0, type.sizes);
  const Operand b = operand(env, node, 1, type.sizes);
  // add/sub: (self, other, alpha); div: (self, other, rounding_mode).
  std::optional<ir::Scalar> alpha;
  std::optional<std::string> mode;
  if (op == BinaryOp::Add || op == BinaryOp::Sub) alpha = ir::scalar_arg(node, 2);
  if (op == BinaryOp::Div) mode = ir::string_arg(node, 2);
  if (mode && *mode != "trunc" && *mode != "floor") {
    throw std::invalid_argument("eager: div: unknown rounding_mode '" + *mode + "'");
  }
  const DType dt = type.dtype;  // the computation dtype of every pointwise op here

  if (is_integer_like(dt)) {
    int64_t alpha_int = 1;
    if (alpha) {
      if (alpha->kind == ir::Scalar::Kind::Float) {
        throw std::invalid_argument("eager: " + node.op +
                                    ": alpha must not be a floating point number for integral "
                                    "inputs");
      }
      alpha_int = scalar_as_int(*alpha);
    }
    return for_each_output(env, node, [&](const Tensor& out, const std::vector<int64_t>& index) {
      store_int(out, index,
                binary_int(op, a.int_value(index), b.int_value(index), alpha_int, mode, node.op));
    });
  }
  const double alpha_value = alpha ? round_to_opmath(dt, alpha->value) : 1.0;
  return for_each_output(env, node, [&](const Tensor& out, const std::vector<int64_t>& index) {
    const double x = round_to(dt, a.value(index));
    const double y = round_to(dt, b.value(index));
    if (op == BinaryOp::Div && mode) {
      // Rounded division is computed in PyTorch's math type, as rounding the quotient first
      // can change the integer it rounds to.
      if (dt == DType::Float64) {
        out.set(index, divide_rounded<double>(x, y, *mode));
      } else {
        out.set(index, divide_rounded<float>(static_cast<float>(x), static_cast<float>(y), *mode));
      }
      return;
    }
    out.set(index, binary_float(op, x, y, alpha_value));
  });
}

Tensor eval_compare(const Env& env, const ir::Node& node, CompareOp op) {
  const ir::TensorType& type = env.result_type(node);
  const Operand a = operand(env, node, 0, type.sizes);
  const Operand b = operand(env, node, 1, type.sizes);
  // Both sides are converted to their common dtype first (so an f32 tensor is compared with
  // the f32 rounding of a float literal, as in PyTorch).
  std::vector<DType> tensor_dtypes;
  std::vector<ir::Scalar::Kind> scalar_kinds;
  for (const Operand* o : {&a, &b}) {
    if (o->is_scalar) {
      scalar_kinds.push_back(o->scalar.kind);
    } else {
      tensor_dtypes.push_back(o->dtype);
    }
  }
  const DType common = ir::result_type(tensor_dtypes, scalar_kinds);
  return for_each_output(env, node, [&](const Tensor& out, const std::vector<int64_t>& index) {
    bool r;
    if (is_integer_like(common)) {
      r = compare_values(op, a.int_value(index), b.int_value(index));
    } else {
      r = compare_values(op, round_to(common, a.value(index)), round_to(common, b.value(index)));
    }
    out.set(index, r ? 1.0 : 0.0);
  });
}

Tensor eval_pow(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const ir::Scalar& exponent = ir::scalar_arg(node, 1);
  const DType dt = env.result_type(node).dtype;
  if (is_integer_like(dt)) {
    const int64_t e = scalar_as_int(exponent);
    if (e < 0) {
      throw std::runtime_error("eager: pow: integers to negative integer powers are not allowed");
    }
    return for_each_output(env, node, [&](const Tensor& out, const std::vector<int64_t>& index) {
      store_int(out, index, int_power(load_int(in, index), e));
    });
  }
  return for_each_output(env, node, [&](const Tensor& out, const std::vector<int64_t>& index) {
    const double x = round_to(dt, in.get(index));
    if (dt == DType::Float64) {
      out.set(index, float_power<double>(x, exponent.value));
    } else {
      out.set(index, float_power<float>(static_cast<float>(x), static_cast<float>(exponent.value)));
    }
  });
}

Tensor eval_where(const Env& env, const ir::Node& node) {
  const ir::TensorType& type = env.result_type(node);
  const Tensor condition = broadcast_to(env.tensor(node, 0), type.sizes);
  const Operand a = operand(env, node, 1, type.sizes);
  const Operand b = operand(env, node, 2, type.sizes);
  return for_each_output(env, node, [&](const Tensor& out, const std::vector<int64_t>& index) {
    const Operand& chosen = condition.get(index) != 0.0 ? a : b;
    if (is_integer_like(type.dtype)) {
      store_int(out, index, chosen.int_value(index));
    } else {
      out.set(index, chosen.value(index));
    }
  });
}

}  // namespace stax::eager::detail
