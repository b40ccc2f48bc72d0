// Schemas and typing of the unary-style pointwise ops: floating math (exp ... erfinv, sigmoid,
// reciprocal), neg/abs/sign/relu, rounding (floor, ceil, round with decimals, trunc, frac),
// classification (isnan, isinf, isfinite), nan_to_num, the activations with their ATen
// parameters (gelu, silu, softplus, mish, hardtanh, hardsigmoid, hardswish, leaky_relu, elu),
// clamp/clamp_min/clamp_max and lerp. Which dtypes each accepts was checked against torch 2.13.0.
#include <string>

#include "ir/op_schemas_pointwise_internal.h"
#include "ir/type_promotion.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;
using Typing = std::function<PointwiseTyping(const Graph&, const Node&)>;

DType self_dtype(const Graph& g, const Node& n) {
  return tensor_arg(g, n, 0).type.dtype;
}

// Integral and bool inputs compute in the default float dtype (exp, sin, sigmoid, ...).
PointwiseTyping float_unary(const Graph& g, const Node& n) {
  const DType d = self_dtype(g, n);
  const DType c = is_floating(d) ? d : DType::Float32;
  return {c, c};
}

Typing same_dtype(bool allow_bool, bool allow_int) {
  return [allow_bool, allow_int](const Graph& g, const Node& n) {
    const DType d = self_dtype(g, n);
    if ((d == DType::Bool && !allow_bool) || (is_integral(d) && !allow_int)) {
      unsupported_dtype(n, "self", d,
                        allow_int ? "integers and floating dtypes" : "floating dtypes");
    }
    return PointwiseTyping{d, d};
  };
}

PointwiseTyping to_bool(const Graph& g, const Node& n) {
  return {self_dtype(g, n), DType::Bool};
}

PointwiseTyping round_typing(const Graph& g, const Node& n) {
  const PointwiseTyping t = same_dtype(false, true)(g, n);
  if (int_arg(n, 1) != 0 && !is_floating(t.compute)) {
    unsupported_dtype(n, "self", t.compute, "floating dtypes when decimals != 0");
  }
  return t;
}

PointwiseTyping hardtanh_typing(const Graph& g, const Node& n) {
  const PointwiseTyping t = same_dtype(false, true)(g, n);
  if (t.compute == DType::UInt8 &&
      (scalar_arg(n, 1).as_double() < 0 || scalar_arg(n, 2).as_double() < 0)) {
    throw GraphError(n.op + ": cannot do hardtanh on an unsigned type with negative limits");
  }
  return t;
}

void require_float_or_none(const Node& n, size_t p, const char* name) {
  if (std::holds_alternative<None>(n.args.at(p))) return;
  if (is_tensor_arg(n, p)) throw GraphError(arg_prefix(n.op, name) + "expects a float or None");
}

PointwiseTyping nan_to_num_typing(const Graph& g, const Node& n) {
  require_float_or_none(n, 1, "nan");
  require_float_or_none(n, 2, "posinf");
  require_float_or_none(n, 3, "neginf");
  const DType d = self_dtype(g, n);
  return {d, d};
}

// clamp's bounds take part in type promotion (clamp(i64, min=0.5) is f32).
PointwiseTyping clamp_typing(const Graph& g, const Node& n) {
  std::vector<PromotionOperand> operands{promotion_operand(g, n, 0)};
  bool any_bound = false;
  for (size_t p = 1; p < n.args.size(); ++p) {
    if (std::holds_alternative<None>(n.args[p])) continue;
    any_bound = true;
    operands.push_back(promotion_operand(g, n, p));
  }
  if (!any_bound) throw GraphError(n.op + ": at least one of 'min' or 'max' must not be None");
  const DType c = result_type(operands);
  for (size_t p = 1; p < n.args.size(); ++p) {
    check_scalar_fits(n, p, n.op == "clamp" ? (p == 1 ? "min" : "max") : n.op.substr(6), c);
  }
  return {c, c};
}

// lerp does not promote: end and a tensor weight must have self's (floating) dtype.
PointwiseTyping lerp_typing(const Graph& g, const Node& n) {
  const DType d = self_dtype(g, n);
  if (!is_floating(d)) unsupported_dtype(n, "self", d, "floating dtypes");
  for (size_t p : {size_t{1}, size_t{2}}) {
    if (!is_tensor_arg(n, p)) continue;
    const DType other = tensor_arg(g, n, p).type.dtype;
    if (other != d) {
      throw GraphError(arg_prefix(n.op, p == 1 ? "end" : "weight") + "expected dtype " +
                       dtype_text(d) + " (the dtype of 'self'), got " + dtype_text(other));
    }
  }
  return {d, d};
}

}  // namespace

void add_unary_pointwise_defs(std::vector<PointwiseDef>& out) {
  const auto self = [] { return std::vector<Param>{required("self", K::Tensor)}; };
  const Scalar one(int64_t{1});
  for (const char* name :
       {"exp",   "exp2",  "expm1", "log",  "log2", "log10",  "log1p",   "sqrt",      "rsqrt",
        "sin",   "cos",   "tan",   "asin", "acos", "atan",   "sinh",    "cosh",      "tanh",
        "asinh", "acosh", "atanh", "erf",  "erfc", "erfinv", "sigmoid", "reciprocal"}) {
    out.push_back({name, self(), float_unary});
  }
  for (const char* name : {"neg", "abs", "relu", "floor", "ceil", "trunc"}) {
    out.push_back({name, self(), same_dtype(/*allow_bool=*/false, /*allow_int=*/true)});
  }
  out.push_back({"sign", self(), same_dtype(true, true)});
  out.push_back({"round",
                 {required("self", K::Tensor), optional("decimals", K::Int, int64_t{0}, true)},
                 round_typing});
  out.push_back({"frac", self(), same_dtype(false, false)});
  for (const char* name : {"isnan", "isinf", "isfinite"}) out.push_back({name, self(), to_bool});
  out.push_back({"nan_to_num",
                 {required("self", K::Tensor), optional("nan", K::OptionalTensorOrScalar, None{}),
                  optional("posinf", K::OptionalTensorOrScalar, None{}),
                  optional("neginf", K::OptionalTensorOrScalar, None{})},
                 nan_to_num_typing});
  for (const char* name : {"silu", "mish", "hardsigmoid", "hardswish"}) {
    out.push_back({name, self(), same_dtype(false, false)});
  }
  out.push_back({"gelu",
                 {required("self", K::Tensor),
                  optional("approximate", K::OptionalString, std::string("none"), true)},
                 [](const Graph& g, const Node& n) {
                   const std::optional<std::string> a = string_arg(n, 1);
                   if (!a || (*a != "none" && *a != "tanh")) {
                     throw GraphError(arg_prefix(n.op, "approximate") +
                                      "expected 'none' or 'tanh', got " +
                                      (a ? "'" + *a + "'" : std::string("None")));
                   }
                   return same_dtype(false, false)(g, n);
                 }});
  out.push_back({"softplus",
                 {required("self", K::Tensor), optional("beta", K::Scalar, one),
                  optional("threshold", K::Scalar, Scalar(int64_t{20}))},
                 same_dtype(false, false)});
  out.push_back({"leaky_relu",
                 {required("self", K::Tensor), optional("negative_slope", K::Scalar, Scalar(0.01))},
                 same_dtype(false, false)});
  out.push_back({"elu",
                 {required("self", K::Tensor), optional("alpha", K::Scalar, one),
                  optional("scale", K::Scalar, one), optional("input_scale", K::Scalar, one)},
                 same_dtype(false, false)});
  out.push_back({"hardtanh",
                 {required("self", K::Tensor), optional("min_val", K::Scalar, Scalar(int64_t{-1})),
                  optional("max_val", K::Scalar, one)},
                 hardtanh_typing});
  out.push_back({"clamp",
                 {required("self", K::Tensor), optional("min", K::OptionalTensorOrScalar, None{}),
                  optional("max", K::OptionalTensorOrScalar, None{})},
                 clamp_typing});
  out.push_back({"clamp_min",
                 {required("self", K::Tensor), required("min", K::TensorOrScalar)},
                 clamp_typing});
  out.push_back({"clamp_max",
                 {required("self", K::Tensor), required("max", K::TensorOrScalar)},
                 clamp_typing});
  out.push_back({"lerp",
                 {required("self", K::Tensor), required("end", K::Tensor),
                  required("weight", K::TensorOrScalar)},
                 lerp_typing});
}

}  // namespace stax::ir::detail
