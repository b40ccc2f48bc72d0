// The recipes of pointwise_decompositions.h: one per ATen pointwise op, composite ops
// (activations, clamp, lerp, nan_to_num, round with decimals, ...) written out in primitives in
// the same order of operations as the eager interpreter.
#include "lowering/pointwise_decompositions.h"

#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <string>

#include "ir/op_schema.h"

namespace stax::lowering {

namespace {

using P = PointwiseOp;
using Args = std::span<const OpsValue>;

bool is_16bit(DType d) {
  return d == DType::Float16 || d == DType::BFloat16;
}

// Shorthands over one handler in one opmath dtype.
struct Prims {
  OpsHandler& h;
  DType m;
  OpsValue k(double v) const { return h.constant(v, m); }
  OpsValue operator()(P op, OpsValue a) const { return apply(h, op, {a}); }
  OpsValue operator()(P op, OpsValue a, OpsValue b) const { return apply(h, op, {a, b}); }
  OpsValue where(OpsValue c, OpsValue a, OpsValue b) const { return apply(h, P::Where, {c, a, b}); }
};

using Compose = std::function<OpsValue(const Prims&, Args)>;

PointwiseRecipe make(std::vector<OperandSpec> operands, DType compute, Compose compose) {
  const DType m = opmath_dtype(compute);
  return PointwiseRecipe{std::move(operands),
                         [compose, m](OpsHandler& h, Args args) {
                           return compose(Prims{h, m}, args);
                         },
                         true};
}

std::vector<OperandSpec> computed(std::initializer_list<size_t> positions) {
  std::vector<OperandSpec> out;
  for (size_t p : positions) out.push_back({p, OperandRead::Compute});
  return out;
}

// mul/div/floor_divide read a scalar second operand in the opmath type when computing in a
// 16-bit dtype (ir::other_read_in_opmath).
std::vector<OperandSpec> binary_operands(const ir::Graph& g, const ir::Node& n) {
  std::vector<OperandSpec> ops = computed({0, 1});
  if (ir::other_read_in_opmath(g, n)) ops[1].read = OperandRead::ComputeOpmath;
  return ops;
}

// The value rounded to the 16-bit computation dtype and read back as float32 (a no-op for
// other dtypes): the roundings PyTorch's 16-bit kernels make between steps.
OpsValue round16(const Prims& p, OpsValue x, DType compute) {
  if (!is_16bit(compute)) return x;
  return convert(p.h, convert(p.h, x, compute), p.m);
}

// Python floor division of floats in the steps of scalar_ops.h, each rounded by round16
// (float16/bfloat16 tensors divided by tensors; a no-op rounding otherwise).
OpsValue floor_divide_floats(const Prims& p, OpsValue a, OpsValue b, DType compute) {
  auto r = [&](OpsValue x) { return round16(p, x, compute); };
  const OpsValue zero = p.k(0);
  const OpsValue mod = p(P::Fmod, a, b);
  OpsValue div = r(p(P::Div, r(p(P::Sub, a, mod)), b));
  const OpsValue signs_differ = p(P::Ne, p(P::Lt, b, zero), p(P::Lt, mod, zero));
  const OpsValue adjust = p(P::LogicalAnd, p(P::Ne, mod, zero), signs_differ);
  div = p.where(adjust, r(p(P::Sub, div, p.k(1))), div);
  OpsValue floored = p(P::Floor, div);
  floored = p.where(p(P::Gt, r(p(P::Sub, div, floored)), p.k(0.5)), r(p(P::Add, floored, p.k(1))),
                    floored);
  const OpsValue quotient = p(P::Div, a, b);
  const OpsValue signed_zero = p(P::Copysign, zero, quotient);
  return p.where(p(P::Eq, b, zero), quotient, p.where(p(P::Eq, div, zero), signed_zero, floored));
}

PointwiseRecipe rounded_division(const ir::Graph& g, const ir::Node& n, DType c, bool trunc) {
  const bool stepwise = is_16bit(c) && !ir::other_read_in_opmath(g, n);
  return make(binary_operands(g, n), c, [trunc, stepwise, c](const Prims& p, Args a) {
    if (!is_floating(c)) return p(trunc ? P::TruncDiv : P::FloorDiv, a[0], a[1]);
    if (trunc) {
      const OpsValue q = p(P::Div, a[0], a[1]);
      return p(P::Trunc, stepwise ? round16(p, q, c) : q);
    }
    if (!stepwise) return p(P::FloorDiv, a[0], a[1]);
    return floor_divide_floats(p, a[0], a[1], c);
  });
}

// pow, the one place its special exponents live (the kernel IR builder computes the Pow
// primitive as it is). pow.Tensor_Tensor is elementwise pow whatever the exponent's values.
// pow.Tensor_Scalar on f32/f64/bf16 is eager's pow_tensor_scalar kernel: 0.5, -0.5 and -1 go
// to the sqrt, rsqrt and reciprocal ops (so (-inf) ** 0.5 is NaN and (-0) ** 0.5 is -0), 2, 3
// and -2 are products, others the Pow primitive (scalar_ops.h is the eager oracle's copy);
// f16's kernel has no special exponents. Exponents 0 and 1 need none: pow gives 1 and x.
PointwiseRecipe power(const ir::Node& n, DType c) {
  if (!is_floating(c) || ir::is_tensor_arg(n, 1) || c == DType::Float16) {
    return make(computed({0, 1}), c, [](const Prims& p, Args a) { return p(P::Pow, a[0], a[1]); });
  }
  // The exponent as the computation sees it (bf16(1.7) for a bf16 pow).
  const double e = ir::scalar_arg(n, 1).as_double();
  return make(computed({0, 1}), c, [e, c](const Prims& p, Args a) {
    const OpsValue x = a[0];
    // bf16's kernel rounds the square to bf16 for exponents 3 and -2 (f16's does not).
    auto square = [&] {
      const OpsValue sq = p(P::Mul, x, x);
      return c == DType::BFloat16 && (e == 3 || e == -2) ? round16(p, sq, c) : sq;
    };
    if (e == 2) return square();
    if (e == 3) return p(P::Mul, square(), x);
    if (e == 0.5) return p(P::Sqrt, x);
    if (e == -0.5) return p(P::Rsqrt, x);
    if (e == -1) return p(P::Reciprocal, x);
    if (e == -2) return p(P::Div, p.k(1), square());
    return p(P::Pow, x, a[1]);
  });
}

std::optional<ir::Scalar> optional_scalar(const ir::Node& n, size_t p) {
  if (std::holds_alternative<ir::None>(n.args.at(p))) return std::nullopt;
  return ir::scalar_arg(n, p);
}

double largest_finite(DType d) {
  switch (d) {
    case DType::Float64:
      return std::numeric_limits<double>::max();
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.3895313892515355e38;
    default:
      return std::numeric_limits<float>::max();
  }
}

const std::map<std::string, P>& unary_primitives() {
  static const std::map<std::string, P> m = {
      {"exp", P::Exp},
      {"exp2", P::Exp2},
      {"expm1", P::Expm1},
      {"log", P::Log},
      {"log2", P::Log2},
      {"log10", P::Log10},
      {"log1p", P::Log1p},
      {"sqrt", P::Sqrt},
      {"rsqrt", P::Rsqrt},
      {"sin", P::Sin},
      {"cos", P::Cos},
      {"tan", P::Tan},
      {"asin", P::Asin},
      {"acos", P::Acos},
      {"atan", P::Atan},
      {"sinh", P::Sinh},
      {"cosh", P::Cosh},
      {"tanh", P::Tanh},
      {"asinh", P::Asinh},
      {"acosh", P::Acosh},
      {"atanh", P::Atanh},
      {"erf", P::Erf},
      {"erfc", P::Erfc},
      {"erfinv", P::Erfinv},
      {"sigmoid", P::Sigmoid},
      {"reciprocal", P::Reciprocal},
      {"neg", P::Neg},
      {"abs", P::Abs},
      {"relu", P::Relu},
      {"sign", P::Sign},
      {"floor", P::Floor},
      {"ceil", P::Ceil},
      {"trunc", P::Trunc},
      {"isnan", P::IsNan},
      {"isinf", P::IsInf},
      {"logical_not", P::LogicalNot},
      {"bitwise_not", P::BitwiseNot},
  };
  return m;
}

const std::map<std::string, P>& binary_primitives() {
  static const std::map<std::string, P> m = {
      {"remainder", P::Remainder},
      {"fmod", P::Fmod},
      {"maximum", P::Maximum},
      {"minimum", P::Minimum},
      {"fmax", P::Fmax},
      {"fmin", P::Fmin},
      {"atan2", P::Atan2},
      {"hypot", P::Hypot},
      {"copysign", P::Copysign},
      {"eq", P::Eq},
      {"ne", P::Ne},
      {"lt", P::Lt},
      {"le", P::Le},
      {"gt", P::Gt},
      {"ge", P::Ge},
      {"logical_and", P::LogicalAnd},
      {"logical_or", P::LogicalOr},
      {"logical_xor", P::LogicalXor},
      {"bitwise_and", P::BitwiseAnd},
      {"bitwise_or", P::BitwiseOr},
      {"bitwise_xor", P::BitwiseXor},
      {"bitwise_left_shift", P::ShiftLeft},
      {"bitwise_right_shift", P::ShiftRight},
  };
  return m;
}

// max(x, lo) and min(x, hi), NaN-propagating (clamp, hardtanh).
OpsValue clamp_value(const Prims& p, OpsValue x, std::optional<OpsValue> lo,
                     std::optional<OpsValue> hi) {
  if (lo) x = p(P::Maximum, x, *lo);
  if (hi) x = p(P::Minimum, x, *hi);
  return x;
}

PointwiseRecipe activation(const ir::Node& n, DType c) {
  const std::string op = n.op;
  // The Scalar parameters are opmath values (float(0.01) for a bf16 leaky_relu).
  auto param = [&n, c](size_t position) {
    const ir::Scalar s = ir::scalar_arg(n, position);
    return [s, c](OpsHandler& h) { return scalar_value(h, s, c, /*opmath_value=*/true); };
  };
  if (op == "gelu") {
    const bool tanh = ir::string_arg(n, 1).value_or("none") == "tanh";
    return make(computed({0}), c, [tanh](const Prims& p, Args a) {
      const OpsValue x = a[0];
      if (tanh) {
        const OpsValue beta = p.k(std::numbers::sqrt2 * (2 / std::sqrt(std::numbers::pi)) * 0.5);
        const OpsValue cube = p(P::Mul, p(P::Mul, x, x), x);
        const OpsValue inner = p(P::Mul, beta, p(P::Add, x, p(P::Mul, p.k(0.044715), cube)));
        return p(P::Mul, p(P::Mul, p.k(0.5), x), p(P::Add, p.k(1), p(P::Tanh, inner)));
      }
      const OpsValue erf = p(P::Erf, p(P::Mul, x, p.k(1 / std::numbers::sqrt2)));
      return p(P::Mul, p(P::Mul, x, p.k(0.5)), p(P::Add, p.k(1), erf));
    });
  }
  if (op == "silu") {
    return make(computed({0}), c, [](const Prims& p, Args a) {
      return p(P::Div, a[0], p(P::Add, p.k(1), p(P::Exp, p(P::Neg, a[0]))));
    });
  }
  if (op == "mish") {
    return make(computed({0}), c, [](const Prims& p, Args a) {
      return p(P::Mul, a[0], p(P::Tanh, p(P::Log1p, p(P::Exp, a[0]))));
    });
  }
  if (op == "hardsigmoid" || op == "hardswish") {
    const bool swish = op == "hardswish";
    return make(computed({0}), c, [swish](const Prims& p, Args a) {
      const OpsValue x = a[0];
      const OpsValue clamped = clamp_value(p, p(P::Add, x, p.k(3)), p.k(0), p.k(6));
      return p(P::Div, swish ? p(P::Mul, x, clamped) : clamped, p.k(6));
    });
  }
  if (op == "softplus") {
    auto beta = param(1);
    auto threshold = param(2);
    return make(computed({0}), c, [beta, threshold](const Prims& p, Args a) {
      const OpsValue x = a[0];
      const OpsValue b = beta(p.h);
      const OpsValue xb = p(P::Mul, x, b);
      const OpsValue soft = p(P::Div, p(P::Log1p, p(P::Exp, xb)), b);
      return p.where(p(P::Gt, xb, threshold(p.h)), x, soft);
    });
  }
  if (op == "leaky_relu") {
    auto slope = param(1);
    return make(computed({0}), c, [slope](const Prims& p, Args a) {
      const OpsValue x = a[0];
      return p.where(p(P::Gt, x, p.k(0)), x, p(P::Mul, x, slope(p.h)));
    });
  }
  if (op == "elu") {
    auto alpha = param(1);
    auto scale = param(2);
    auto input_scale = param(3);
    return make(computed({0}), c, [alpha, scale, input_scale](const Prims& p, Args a) {
      const OpsValue x = a[0];
      const OpsValue s = scale(p.h);
      const OpsValue negative =
          p(P::Mul, p(P::Expm1, p(P::Mul, x, input_scale(p.h))), p(P::Mul, alpha(p.h), s));
      return p.where(p(P::Gt, x, p.k(0)), p(P::Mul, x, s), negative);
    });
  }
  throw std::invalid_argument("lowering: no lowering for pointwise op " + op);
}

}  // namespace

DType opmath_dtype(DType compute) {
  return is_16bit(compute) ? DType::Float32 : compute;
}

OpsValue convert(OpsHandler& h, OpsValue x, DType to) {
  if (x.dtype == to) return x;
  if (is_16bit(to) && x.dtype != DType::Float32 && !is_16bit(x.dtype) && x.dtype != DType::Bool) {
    x = h.to_dtype(x, DType::Float32);
  }
  if (is_floating(x.dtype) && (to == DType::Int8 || to == DType::Int16)) {
    x = h.to_dtype(x, DType::Int32);
  }
  if (is_floating(x.dtype) && to == DType::UInt8) x = h.to_dtype(x, DType::Int64);
  return x.dtype == to ? x : h.to_dtype(x, to);
}

OpsValue scalar_value(OpsHandler& h, const ir::Scalar& s, DType compute, bool opmath_value) {
  // The constant is converted exactly by ir::convert_scalar: an int64 wraps into a narrower
  // integer dtype and rounds once into float32/float64, never through double.
  const DType m = opmath_dtype(compute);
  const OpsValue v = h.constant(s, m);
  // A 16-bit dtype is reached through float, as c10::BFloat16(double) and (int64) do.
  return opmath_value || !is_16bit(compute) ? v : convert(h, convert(h, v, compute), m);
}

PointwiseRecipe pointwise_recipe(const ir::Graph& g, const ir::Node& n,
                                 const ir::PointwiseTyping& typing) {
  const std::string& op = n.op;
  const DType c = typing.compute;
  if (op == "_to_copy" || op == "convert_element_type") {
    const DType to = typing.result;
    PointwiseRecipe r{{{0, OperandRead::Source}},
                      [to](OpsHandler& h, Args a) { return convert(h, a[0], to); },
                      false};
    return r;
  }
  if (auto it = unary_primitives().find(op); it != unary_primitives().end()) {
    const P prim = it->second;
    const bool identity_on_integers =
        !is_floating(c) && (prim == P::Floor || prim == P::Ceil || prim == P::Trunc ||
                            (prim == P::Sign && c == DType::Bool));
    return make(computed({0}), c, [prim, identity_on_integers](const Prims& p, Args a) {
      return identity_on_integers ? a[0] : p(prim, a[0]);
    });
  }
  if (auto it = binary_primitives().find(op); it != binary_primitives().end()) {
    P prim = it->second;
    // Bools have no NaN: fmax/fmin of bools are maximum/minimum (or/and), as in PyTorch.
    if (c == DType::Bool && prim == P::Fmax) prim = P::Maximum;
    if (c == DType::Bool && prim == P::Fmin) prim = P::Minimum;
    return make(computed({0, 1}), c,
                [prim](const Prims& p, Args a) { return p(prim, a[0], a[1]); });
  }
  if (op == "pow") return power(n, c);
  if (op == "floor_divide") return rounded_division(g, n, c, /*trunc=*/false);
  if (op == "add" || op == "sub") {
    const ir::Scalar alpha = ir::scalar_arg(n, 2);
    const bool negate = op == "sub";
    return make(computed({0, 1}), c, [alpha, negate, c](const Prims& p, Args a) {
      if (!alpha.equals(1.0) && c == DType::Float32) {
        // PyTorch's f32 kernel is a fused multiply-add (-3e38 + 2 * 3e38 is 3e38, not inf);
        // in float64 the product is exact and the sum rounds once more at worst.
        const Prims wide{p.h, DType::Float64};
        const OpsValue scaled =
            wide(P::Mul, convert(p.h, a[1], DType::Float64),
                 convert(p.h, scalar_value(p.h, alpha, c, false), DType::Float64));
        const OpsValue x = convert(p.h, a[0], DType::Float64);
        return convert(p.h, wide(negate ? P::Sub : P::Add, x, scaled), DType::Float32);
      }
      OpsValue b = a[1];
      if (!alpha.equals(1.0)) {
        // Bool "multiplication" by the alpha converted to bool is the logical and.
        b = p(c == DType::Bool ? P::LogicalAnd : P::Mul, b, scalar_value(p.h, alpha, c, false));
      }
      if (c == DType::Bool) return p(P::LogicalOr, a[0], b);
      return p(negate ? P::Sub : P::Add, a[0], b);
    });
  }
  if (op == "mul") {
    return make(binary_operands(g, n), c, [c](const Prims& p, Args a) {
      return p(c == DType::Bool ? P::LogicalAnd : P::Mul, a[0], a[1]);
    });
  }
  if (op == "div") {
    const std::optional<std::string> mode = ir::string_arg(n, 2);
    if (mode) return rounded_division(g, n, c, /*trunc=*/*mode == "trunc");
    return make(binary_operands(g, n), c,
                [](const Prims& p, Args a) { return p(P::Div, a[0], a[1]); });
  }
  if (op == "where") {
    return make({{0, OperandRead::Bool}, {1, OperandRead::Compute}, {2, OperandRead::Compute}}, c,
                [](const Prims& p, Args a) { return p.where(a[0], a[1], a[2]); });
  }
  if (op == "isfinite") {
    return make(computed({0}), c, [](const Prims& p, Args a) {
      return p(P::LogicalNot, p(P::LogicalOr, p(P::IsNan, a[0]), p(P::IsInf, a[0])));
    });
  }
  if (op == "frac") {
    return make(computed({0}), c,
                [](const Prims& p, Args a) { return p(P::Sub, a[0], p(P::Trunc, a[0])); });
  }
  if (op == "round") {
    int64_t decimals = ir::int_arg(n, 1);
    const bool negative = decimals < 0;
    if (negative) decimals = -decimals;
    const double ten_pow = std::pow(10.0, static_cast<double>(decimals));
    return make(computed({0}), c, [decimals, negative, ten_pow, c](const Prims& p, Args a) {
      if (!is_floating(c)) return a[0];
      if (decimals == 0) return p(P::Round, a[0]);
      const OpsValue t = p.k(ten_pow);
      return negative ? p(P::Mul, p(P::Round, p(P::Div, a[0], t)), t)
                      : p(P::Div, p(P::Round, p(P::Mul, a[0], t)), t);
    });
  }
  if (op == "nan_to_num") {
    const std::optional<ir::Scalar> nan = optional_scalar(n, 1);
    const std::optional<ir::Scalar> posinf = optional_scalar(n, 2);
    const std::optional<ir::Scalar> neginf = optional_scalar(n, 3);
    return make(computed({0}), c, [nan, posinf, neginf, c](const Prims& p, Args a) {
      if (!is_floating(c)) return a[0];
      auto replacement = [&](const std::optional<ir::Scalar>& s, double fallback) {
        return s ? scalar_value(p.h, *s, c, false) : p.k(fallback);
      };
      const OpsValue x = a[0];
      const double largest = largest_finite(c);
      const OpsValue inf = p.k(std::numeric_limits<double>::infinity());
      OpsValue r = p.where(p(P::Eq, x, p(P::Neg, inf)), replacement(neginf, -largest), x);
      r = p.where(p(P::Eq, x, inf), replacement(posinf, largest), r);
      return p.where(p(P::IsNan, x), replacement(nan, 0.0), r);
    });
  }
  if (op == "hardtanh") {
    const ir::Scalar lo = ir::scalar_arg(n, 1);
    const ir::Scalar hi = ir::scalar_arg(n, 2);
    return make(computed({0}), c, [lo, hi, c](const Prims& p, Args a) {
      return clamp_value(p, a[0], scalar_value(p.h, lo, c, false), scalar_value(p.h, hi, c, false));
    });
  }
  if (op == "clamp" || op == "clamp_min" || op == "clamp_max") {
    const bool has_min =
        op == "clamp_min" || (op == "clamp" && !std::holds_alternative<ir::None>(n.args[1]));
    const bool has_max =
        op == "clamp_max" || (op == "clamp" && !std::holds_alternative<ir::None>(n.args[2]));
    std::vector<size_t> positions{0};
    if (op != "clamp") {
      positions.push_back(1);
    } else {
      if (has_min) positions.push_back(1);
      if (has_max) positions.push_back(2);
    }
    std::vector<OperandSpec> operands;
    for (size_t pos : positions) operands.push_back({pos, OperandRead::Compute});
    return make(operands, c, [has_min, has_max](const Prims& p, Args a) {
      std::optional<OpsValue> lo;
      std::optional<OpsValue> hi;
      if (has_min) lo = a[1];
      if (has_max) hi = a[has_min ? 2 : 1];
      return clamp_value(p, a[0], lo, hi);
    });
  }
  if (op == "lerp") {
    // A Scalar weight is an opmath value; the two branches keep |weight| < 0.5 accurate.
    const OperandRead weight_read =
        ir::is_tensor_arg(n, 2) ? OperandRead::Compute : OperandRead::ComputeOpmath;
    return make({{0, OperandRead::Compute}, {1, OperandRead::Compute}, {2, weight_read}}, c,
                [](const Prims& p, Args a) {
                  const OpsValue start = a[0];
                  const OpsValue end = a[1];
                  const OpsValue w = a[2];
                  const OpsValue diff = p(P::Sub, end, start);
                  const OpsValue small = p(P::Lt, p(P::Abs, w), p.k(0.5));
                  const OpsValue near_start = p(P::Add, start, p(P::Mul, w, diff));
                  const OpsValue near_end = p(P::Add, end, p(P::Mul, p(P::Sub, w, p.k(1)), diff));
                  return p.where(small, near_start, near_end);
                });
  }
  return activation(n, c);
}

}  // namespace stax::lowering
