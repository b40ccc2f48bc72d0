// Schemas and typing of the binary pointwise ops: arithmetic (add, sub with alpha, mul, div
// with rounding_mode, remainder, fmod, floor_divide, pow), maximum/minimum/fmax/fmin, atan2,
// hypot, copysign, comparisons, logical and bitwise ops, shifts, where, and the dtype casts
// (_to_copy, convert_element_type). Also the registration of every pointwise schema: shapes
// broadcast, dtypes from the op's typing (pointwise_typing.h).
#include <map>
#include <string>

#include "ir/op_schemas_pointwise_internal.h"
#include "ir/type_promotion.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;
using Typing = std::function<PointwiseTyping(const Graph&, const Node&)>;

bool is_bool_operand(const Graph& g, const Node& n, size_t p) {
  if (is_tensor_arg(n, p)) return tensor_arg(g, n, p).type.dtype == DType::Bool;
  return scalar_arg(n, p).is_bool();
}

void require_a_tensor(const Node& n, std::initializer_list<size_t> positions,
                      const std::string& names) {
  for (size_t p : positions) {
    if (is_tensor_arg(n, p)) return;
  }
  throw GraphError(n.op + ": at least one of " + names + " must be a tensor");
}

PointwiseTyping same(DType d) {
  return {d, d};
}

// self/other promoted; `no_bool` refuses a bool common dtype (PyTorch has no bool kernel).
Typing promoted(bool no_bool) {
  return [no_bool](const Graph& g, const Node& n) {
    require_a_tensor(n, {0, 1}, "'self' and 'other'");
    const DType c = result_type(g, n, {0, 1});
    if (no_bool && c == DType::Bool) unsupported_dtype(n, "self", c, "numbers");
    return same(c);
  };
}

// Integral and bool inputs are converted to the default float dtype first (true division,
// atan2, copysign).
Typing promoted_to_float() {
  return [](const Graph& g, const Node& n) {
    require_a_tensor(n, {0, 1}, "'self' and 'other'");
    const DType c = result_type(g, n, {0, 1});
    return same(is_floating(c) ? c : DType::Float32);
  };
}

PointwiseTyping add_sub_typing(const Graph& g, const Node& n) {
  require_a_tensor(n, {0, 1}, "'self' and 'other'");
  const DType c = result_type(g, n, {0, 1});
  if (n.op == "sub") {
    for (size_t p : {size_t{0}, size_t{1}}) {
      if (is_bool_operand(g, n, p)) {
        throw GraphError(arg_prefix(n.op, p == 0 ? "self" : "other") +
                         "subtraction with a bool operand is not supported (use logical_xor "
                         "or logical_not instead)");
      }
    }
  }
  const Scalar& alpha = scalar_arg(n, 2);
  if (alpha.is_bool() && c != DType::Bool) {
    throw GraphError(arg_prefix(n.op, "alpha") +
                     "a bool alpha is only supported for bool results, the result is " +
                     dtype_text(c));
  }
  if (alpha.is_float() && !is_floating(c)) {
    throw GraphError(arg_prefix(n.op, "alpha") + "must not be a floating point number for a " +
                     dtype_text(c) + " result");
  }
  check_scalar_fits(n, 2, "alpha", c);
  return same(c);
}

PointwiseTyping div_typing(const Graph& g, const Node& n) {
  const std::optional<std::string> mode = string_arg(n, 2);
  if (!mode) return promoted_to_float()(g, n);
  if (*mode != "floor" && *mode != "trunc") {
    throw GraphError(arg_prefix(n.op, "rounding_mode") +
                     "expected None, 'trunc' or 'floor', got '" + *mode + "'");
  }
  return promoted(/*no_bool=*/true)(g, n);
}

PointwiseTyping pow_typing(const Graph& g, const Node& n) {
  require_a_tensor(n, {0, 1}, "'self' and 'exponent'");
  const DType c = result_type(g, n, {0, 1});
  if (c == DType::Bool) unsupported_dtype(n, "self", c, "numbers");
  if (!is_floating(c) && !is_tensor_arg(n, 1)) {
    const Scalar& e = scalar_arg(n, 1);
    if (e.as_double() < 0) {
      throw GraphError(arg_prefix(n.op, "exponent") +
                       "integers to negative integer powers are not allowed");
    }
  }
  return same(c);
}

PointwiseTyping hypot_typing(const Graph& g, const Node& n) {
  const DType c = result_type(g, n, {0, 1});
  if (!is_floating(c)) unsupported_dtype(n, "self", c, "floating dtypes");
  return same(c);
}

Typing comparison() {
  return [](const Graph& g, const Node& n) {
    return PointwiseTyping{result_type(g, n, {0, 1}), DType::Bool};
  };
}

Typing bitwise(std::initializer_list<size_t> positions, bool allow_bool) {
  std::vector<size_t> ps(positions);
  return [ps, allow_bool](const Graph& g, const Node& n) {
    std::vector<PromotionOperand> operands;
    for (size_t p : ps) operands.push_back(promotion_operand(g, n, p));
    if (ps.size() == 2) require_a_tensor(n, {ps[0], ps[1]}, "'self' and 'other'");
    const DType c = result_type(operands);
    if (is_floating(c) || (!allow_bool && c == DType::Bool)) {
      unsupported_dtype(n, "self", c, allow_bool ? "integers and bool" : "integers");
    }
    return same(c);
  };
}

PointwiseTyping where_typing(const Graph& g, const Node& n) {
  const DType cond = tensor_arg(g, n, 0).type.dtype;
  if (cond != DType::Bool) {
    throw GraphError(arg_prefix(n.op, "condition") + "must have dtype bool, got " +
                     dtype_text(cond));
  }
  const DType c = result_type(g, n, {1, 2});
  // A float16/bfloat16 where converts its scalars unchecked (1e6 gives inf in torch 2.13.0).
  if (c != DType::Float16 && c != DType::BFloat16) {
    check_scalar_fits(n, 1, "self", c);
    check_scalar_fits(n, 2, "other", c);
  }
  return same(c);
}

PointwiseTyping cast_typing(const Graph& g, const Node& n) {
  const DType from = tensor_arg(g, n, 0).type.dtype;
  const std::optional<std::string> to = string_arg(n, 1);
  if (!to) {
    if (n.op == "_to_copy") return same(from);
    throw GraphError(arg_prefix(n.op, "dtype") + "a dtype is required, got None");
  }
  return {from, parse_dtype(*to).value()};
}

std::vector<PointwiseDef>& defs_storage() {
  static std::vector<PointwiseDef> defs = [] {
    std::vector<PointwiseDef> d;
    add_binary_pointwise_defs(d);
    add_unary_pointwise_defs(d);
    return d;
  }();
  return defs;
}

const std::map<std::string, const PointwiseDef*, std::less<>>& defs_by_name() {
  static const auto by_name = [] {
    std::map<std::string, const PointwiseDef*, std::less<>> m;
    for (const PointwiseDef& d : defs_storage()) m.emplace(d.name, &d);
    return m;
  }();
  return by_name;
}

std::vector<int64_t> broadcast_tensor_args(const Graph& g, const Node& n) {
  std::optional<std::vector<int64_t>> sizes;
  for (size_t p = 0; p < n.args.size(); ++p) {
    if (!is_tensor_arg(n, p)) continue;
    const std::vector<int64_t>& s = tensor_arg(g, n, p).type.sizes;
    sizes = sizes ? broadcast_sizes(*sizes, s, n.op) : s;
  }
  return sizes.value_or(std::vector<int64_t>{});
}

}  // namespace

std::string dtype_text(DType dtype) {
  return std::string(dtype_name(dtype));
}

void unsupported_dtype(const Node& node, const std::string& arg, DType dtype,
                       const std::string& supported) {
  throw GraphError(arg_prefix(node.op, arg) + dtype_text(dtype) +
                   " is not supported (PyTorch implements " + node.op + " for " + supported +
                   " only)");
}

void add_binary_pointwise_defs(std::vector<PointwiseDef>& out) {
  const Scalar one(int64_t{1});
  const auto self_other = [] {
    return std::vector<Param>{required("self", K::TensorOrScalar),
                              required("other", K::TensorOrScalar)};
  };
  for (const char* name : {"add", "sub"}) {
    out.push_back({name,
                   {required("self", K::TensorOrScalar), required("other", K::TensorOrScalar),
                    optional("alpha", K::Scalar, one, /*keyword_only=*/true)},
                   add_sub_typing});
  }
  out.push_back({"mul", self_other(), promoted(false)});
  out.push_back({"div",
                 {required("self", K::TensorOrScalar), required("other", K::TensorOrScalar),
                  optional("rounding_mode", K::OptionalString, None{}, /*keyword_only=*/true)},
                 div_typing});
  for (const char* name : {"remainder", "fmod", "floor_divide"}) {
    out.push_back({name, self_other(), promoted(/*no_bool=*/true)});
  }
  out.push_back({"pow",
                 {required("self", K::TensorOrScalar), required("exponent", K::TensorOrScalar)},
                 pow_typing});
  for (const char* name : {"maximum", "minimum", "fmax", "fmin"}) {
    out.push_back(
        {name, {required("self", K::Tensor), required("other", K::Tensor)}, promoted(false)});
  }
  out.push_back(
      {"atan2", {required("self", K::Tensor), required("other", K::Tensor)}, promoted_to_float()});
  out.push_back({"copysign",
                 {required("self", K::Tensor), required("other", K::TensorOrScalar)},
                 promoted_to_float()});
  out.push_back(
      {"hypot", {required("self", K::Tensor), required("other", K::Tensor)}, hypot_typing});
  for (const char* name : {"gt", "lt", "ge", "le", "eq", "ne"}) {
    out.push_back(
        {name, {required("self", K::Tensor), required("other", K::TensorOrScalar)}, comparison()});
  }
  for (const char* name : {"logical_and", "logical_or", "logical_xor"}) {
    out.push_back(
        {name, {required("self", K::Tensor), required("other", K::Tensor)}, comparison()});
  }
  out.push_back({"logical_not", {required("self", K::Tensor)}, [](const Graph& g, const Node& n) {
                   return PointwiseTyping{tensor_arg(g, n, 0).type.dtype, DType::Bool};
                 }});
  for (const char* name : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    out.push_back({name, self_other(), bitwise({0, 1}, /*allow_bool=*/true)});
  }
  out.push_back({"bitwise_not", {required("self", K::Tensor)}, bitwise({0}, true)});
  for (const char* name : {"bitwise_left_shift", "bitwise_right_shift"}) {
    out.push_back({name, self_other(), bitwise({0, 1}, /*allow_bool=*/false)});
  }
  out.push_back({"where",
                 {required("condition", K::Tensor), required("self", K::TensorOrScalar),
                  required("other", K::TensorOrScalar)},
                 where_typing});
  out.push_back({"_to_copy",
                 {required("self", K::Tensor), optional("dtype", K::OptionalDType, None{}, true)},
                 cast_typing});
  out.push_back({"convert_element_type",
                 {required("self", K::Tensor), required("dtype", K::OptionalDType)},
                 cast_typing});
}

void add_pointwise_schemas(std::vector<OpSchema>& out) {
  for (const PointwiseDef& def : defs_storage()) {
    const Typing typing = def.typing;
    out.push_back(OpSchema{def.name, def.params, OpCategory::Pointwise,
                           [typing](const Graph& g, const Node& n) {
                             TensorType t;
                             t.sizes = broadcast_tensor_args(g, n);
                             t.dtype = typing(g, n).result;
                             return t;
                           }});
  }
}

}  // namespace stax::ir::detail

namespace stax::ir {

PointwiseTyping pointwise_typing(const Graph& graph, const Node& node) {
  const auto& by_name = detail::defs_by_name();
  auto it = by_name.find(node.op);
  if (it == by_name.end()) throw GraphError(node.op + ": not a pointwise op");
  return it->second->typing(graph, node);
}

bool other_read_in_opmath(const Graph& graph, const Node& node) {
  if (node.op != "mul" && node.op != "div" && node.op != "floor_divide") return false;
  const DType compute = pointwise_typing(graph, node).compute;
  if (compute != DType::Float16 && compute != DType::BFloat16) return false;
  if (!is_tensor_arg(node, 1)) return true;
  const TensorType& t = tensor_arg(graph, node, 1).type;
  return t.numel() == 1 && t.dtype != compute;
}

}  // namespace stax::ir
