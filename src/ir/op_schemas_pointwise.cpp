// Schemas and type inference of the pointwise ops: binary arithmetic (add, sub, mul, div,
// maximum, minimum), comparisons, unary math, pow and where. Result dtypes follow PyTorch's
// type promotion; shapes follow PyTorch broadcasting.
#include <string>

#include "ir/op_schemas_internal.h"
#include "ir/type_promotion.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

// The dtypes, scalar kinds and broadcast shape of a node's tensor-or-scalar operands.
struct Operands {
  std::vector<DType> tensor_dtypes;
  std::vector<Scalar::Kind> scalar_kinds;
  std::vector<int64_t> sizes;
  bool any_tensor = false;
};

Operands collect(const Graph& g, const Node& n, std::initializer_list<size_t> positions) {
  Operands ops;
  for (size_t p : positions) {
    if (is_tensor_arg(n, p)) {
      const TensorType& t = tensor_arg(g, n, p).type;
      ops.sizes = ops.any_tensor ? broadcast_sizes(ops.sizes, t.sizes, n.op) : t.sizes;
      ops.any_tensor = true;
      ops.tensor_dtypes.push_back(t.dtype);
    } else {
      ops.scalar_kinds.push_back(scalar_arg(n, p).kind);
    }
  }
  return ops;
}

bool is_bool_operand(const Graph& g, const Node& n, size_t p) {
  if (is_tensor_arg(n, p)) return tensor_arg(g, n, p).type.dtype == DType::Bool;
  return scalar_arg(n, p).kind == Scalar::Kind::Bool;
}

enum class Binary { Arith, AddSub, TrueDiv, Compare };

TensorType infer_binary(const Graph& g, const Node& n, Binary kind) {
  Operands ops = collect(g, n, {0, 1});
  if (!ops.any_tensor) {
    throw GraphError(n.op + ": at least one of 'self' and 'other' must be a tensor");
  }
  TensorType out;
  out.sizes = ops.sizes;
  out.dtype = result_type(ops.tensor_dtypes, ops.scalar_kinds);
  switch (kind) {
    case Binary::Arith:
      break;
    case Binary::AddSub: {
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
      if (alpha.kind == Scalar::Kind::Bool && out.dtype != DType::Bool) {
        throw GraphError(arg_prefix(n.op, "alpha") +
                         "a bool alpha is only supported for bool results, the result is " +
                         std::string(dtype_name(out.dtype)));
      }
      if (alpha.kind == Scalar::Kind::Float && !is_floating(out.dtype)) {
        throw GraphError(arg_prefix(n.op, "alpha") + "must not be a floating point number for a " +
                         std::string(dtype_name(out.dtype)) + " result");
      }
      break;
    }
    case Binary::TrueDiv: {
      if (std::optional<std::string> mode = string_arg(n, 2)) {
        if (*mode == "floor" || *mode == "trunc") {
          throw GraphError(n.op + ": rounding_mode='" + *mode + "' is not supported yet");
        }
        throw GraphError(arg_prefix(n.op, "rounding_mode") +
                         "expected None, 'trunc' or 'floor', got '" + *mode + "'");
      }
      if (!is_floating(out.dtype)) out.dtype = DType::Float32;
      break;
    }
    case Binary::Compare:
      out.dtype = DType::Bool;
      break;
  }
  return out;
}

// Unary ops: `to_float` promotes bool/integral inputs to f32; `no_bool` rejects bool inputs.
TensorType infer_unary(const Graph& g, const Node& n, bool to_float, bool no_bool) {
  TensorType out = tensor_arg(g, n, 0).type;
  if (no_bool && out.dtype == DType::Bool) {
    throw GraphError(arg_prefix(n.op, "self") + "bool tensors are not supported");
  }
  if (to_float && !is_floating(out.dtype)) out.dtype = DType::Float32;
  return out;
}

TensorType infer_pow(const Graph& g, const Node& n) {
  Operands ops = collect(g, n, {0, 1});
  TensorType out;
  out.sizes = ops.sizes;
  out.dtype = result_type(ops.tensor_dtypes, ops.scalar_kinds);
  const Scalar& exponent = scalar_arg(n, 1);
  if (type_category(out.dtype) != TypeCategory::Floating && exponent.kind == Scalar::Kind::Int &&
      exponent.value < 0) {
    throw GraphError(arg_prefix(n.op, "exponent") +
                     "integers to negative integer powers are not allowed");
  }
  return out;
}

TensorType infer_where(const Graph& g, const Node& n) {
  const TensorType& cond = tensor_arg(g, n, 0).type;
  if (cond.dtype != DType::Bool) {
    throw GraphError(arg_prefix(n.op, "condition") + "must have dtype bool, got " +
                     std::string(dtype_name(cond.dtype)));
  }
  Operands ops = collect(g, n, {1, 2});
  TensorType out;
  out.sizes = ops.any_tensor ? broadcast_sizes(cond.sizes, ops.sizes, n.op) : cond.sizes;
  out.dtype = result_type(ops.tensor_dtypes, ops.scalar_kinds);
  return out;
}

OpSchema schema(std::string name, std::vector<Param> params,
                std::function<TensorType(const Graph&, const Node&)> infer) {
  return OpSchema{std::move(name), std::move(params), OpCategory::Pointwise, std::move(infer)};
}

}  // namespace

void add_pointwise_schemas(std::vector<OpSchema>& out) {
  const Scalar one{Scalar::Kind::Int, 1.0};
  for (const char* name : {"add", "sub"}) {
    out.push_back(
        schema(name,
               {required("self", K::TensorOrScalar), required("other", K::TensorOrScalar),
                optional("alpha", K::Scalar, one, /*keyword_only=*/true)},
               [](const Graph& g, const Node& n) { return infer_binary(g, n, Binary::AddSub); }));
  }
  out.push_back(
      schema("mul", {required("self", K::TensorOrScalar), required("other", K::TensorOrScalar)},
             [](const Graph& g, const Node& n) { return infer_binary(g, n, Binary::Arith); }));
  out.push_back(
      schema("div",
             {required("self", K::TensorOrScalar), required("other", K::TensorOrScalar),
              optional("rounding_mode", K::OptionalString, None{}, /*keyword_only=*/true)},
             [](const Graph& g, const Node& n) { return infer_binary(g, n, Binary::TrueDiv); }));
  for (const char* name : {"maximum", "minimum"}) {
    out.push_back(
        schema(name, {required("self", K::Tensor), required("other", K::Tensor)},
               [](const Graph& g, const Node& n) { return infer_binary(g, n, Binary::Arith); }));
  }
  for (const char* name : {"gt", "lt", "ge", "le", "eq", "ne"}) {
    out.push_back(
        schema(name, {required("self", K::Tensor), required("other", K::TensorOrScalar)},
               [](const Graph& g, const Node& n) { return infer_binary(g, n, Binary::Compare); }));
  }
  struct Unary {
    const char* name;
    bool to_float;
    bool no_bool;
  };
  for (Unary u :
       {Unary{"neg", false, true}, Unary{"abs", false, true}, Unary{"exp", true, false},
        Unary{"log", true, false}, Unary{"sqrt", true, false}, Unary{"rsqrt", true, false},
        Unary{"tanh", true, false}, Unary{"sigmoid", true, false}, Unary{"relu", false, true}}) {
    out.push_back(schema(u.name, {required("self", K::Tensor)}, [u](const Graph& g, const Node& n) {
      return infer_unary(g, n, u.to_float, u.no_bool);
    }));
  }
  out.push_back(
      schema("pow", {required("self", K::Tensor), required("exponent", K::Scalar)}, infer_pow));
  out.push_back(schema("where",
                       {required("condition", K::Tensor), required("self", K::TensorOrScalar),
                        required("other", K::TensorOrScalar)},
                       infer_where));
}

}  // namespace stax::ir::detail
