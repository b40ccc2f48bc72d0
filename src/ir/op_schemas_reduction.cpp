// Schemas and type inference of the reductions: sum, prod, mean, amax, amin, argmax, argmin,
// any, all, var, std, var_mean and logsumexp. Which dims are reduced (None or [] = all, except
// for logsumexp, whose dim is required), keepdim, and the result dtype as PyTorch gives it:
// sum and prod widen bool/integral inputs to i64, mean, var and std need a floating input (or
// dtype=), arg-reductions give i64, any/all give bool (u8 for a u8 input), logsumexp gives
// f32 for integral and bool inputs; an explicit dtype= wins. Reductions without an identity
// (amax, amin, argmax, argmin) refuse a reduced dim of size 0.
#include <string>

#include "ir/op_schemas_internal.h"
#include "ir/text_format.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

// Where a reduction keeps its dim and keepdim arguments (var/std put correction between them).
struct DimArgs {
  size_t dim = 1;
  size_t keepdim = 2;
};

// Output sizes of reducing `self` over its dim argument with its keepdim argument; with
// require_nonempty a reduced dim of size 0 is an error (no identity element).
std::vector<int64_t> reduced_sizes(const Graph& g, const Node& n, bool require_nonempty,
                                   DimArgs where = {}) {
  const TensorType& self = tensor_arg(g, n, 0).type;
  const std::optional<std::vector<int64_t>> dim = int_list_arg(n, where.dim);
  if (dim) wrap_dim_list(*dim, self.sizes.size(), n.op, "dim", /*scalar_ok=*/true);
  const std::vector<int64_t> dims = reduction_dims(dim, self.sizes.size(), n.op);
  const bool keepdim = bool_arg(n, where.keepdim);
  std::vector<int64_t> out;
  size_t next = 0;
  for (size_t i = 0; i < self.sizes.size(); ++i) {
    const bool reduced = next < dims.size() && dims[next] == static_cast<int64_t>(i);
    if (!reduced) {
      out.push_back(self.sizes[i]);
      continue;
    }
    ++next;
    if (require_nonempty && self.sizes[i] == 0) {
      throw GraphError(arg_prefix(n.op, "self") + "cannot reduce over dim " + std::to_string(i) +
                       " of size 0 (sizes " + format_sizes(self.sizes) +
                       "): the reduction has no identity");
    }
    if (keepdim) out.push_back(1);
  }
  return out;
}

// prod, argmax and argmin take one dim or None (ATen's `int? dim`); the IR stores it as an
// int list of at most one entry, so `dim=1` and `dim=[1]` mean the same.
void check_single_dim(const Node& n) {
  const std::optional<std::vector<int64_t>> dim = int_list_arg(n, 1);
  if (dim && dim->size() > 1) {
    throw GraphError(arg_prefix(n.op, "dim") + "expected one dim or None, got " +
                     format_sizes(*dim));
  }
}

std::optional<DType> dtype_arg(const Node& n, size_t position) {
  std::optional<std::string> name = string_arg(n, position);
  if (!name) return std::nullopt;
  std::optional<DType> dtype = parse_dtype(*name);
  if (!dtype) throw GraphError(arg_prefix(n.op, "dtype") + "unknown dtype '" + *name + "'");
  return dtype;
}

// sum and prod: floating inputs keep their dtype, bool and integers accumulate in i64.
TensorType infer_sum_or_prod(const Graph& g, const Node& n) {
  if (n.op == "prod") check_single_dim(n);
  TensorType out;
  out.sizes = reduced_sizes(g, n, false);
  const DType in = tensor_arg(g, n, 0).type.dtype;
  out.dtype = dtype_arg(n, 3).value_or(is_floating(in) ? in : DType::Int64);
  return out;
}

TensorType infer_mean(const Graph& g, const Node& n) {
  TensorType out;
  out.sizes = reduced_sizes(g, n, false);
  const DType in = tensor_arg(g, n, 0).type.dtype;
  std::optional<DType> dtype = dtype_arg(n, 3);
  out.dtype = dtype.value_or(in);
  if (!is_floating(out.dtype)) {
    if (dtype) {
      throw GraphError(arg_prefix(n.op, "dtype") + "must be a floating point dtype, got " +
                       std::string(dtype_name(*dtype)));
    }
    throw GraphError(arg_prefix(n.op, "self") + "input dtype must be floating point, got " +
                     std::string(dtype_name(in)) + " (pass a floating dtype= to convert)");
  }
  return out;
}

TensorType infer_extremum(const Graph& g, const Node& n) {
  TensorType out;
  out.sizes = reduced_sizes(g, n, true);
  out.dtype = tensor_arg(g, n, 0).type.dtype;
  return out;
}

TensorType infer_arg_extremum(const Graph& g, const Node& n) {
  check_single_dim(n);
  const DType in = tensor_arg(g, n, 0).type.dtype;
  if (in == DType::Bool) {
    throw GraphError(arg_prefix(n.op, "self") + "bool input is not supported (as in PyTorch)");
  }
  TensorType out;
  out.sizes = reduced_sizes(g, n, true);
  out.dtype = DType::Int64;
  return out;
}

// any/all: PyTorch keeps u8 for u8 inputs (a legacy of masks), every other dtype gives bool.
TensorType infer_any_all(const Graph& g, const Node& n) {
  TensorType out;
  out.sizes = reduced_sizes(g, n, false);
  out.dtype = tensor_arg(g, n, 0).type.dtype == DType::UInt8 ? DType::UInt8 : DType::Bool;
  return out;
}

// var, std, var_mean: (self, dim?, *, correction, keepdim); floating inputs only.
TensorType infer_variance(const Graph& g, const Node& n) {
  const DType in = tensor_arg(g, n, 0).type.dtype;
  if (!is_floating(in)) {
    throw GraphError(arg_prefix(n.op, "self") +
                     "only floating point inputs are supported (as in PyTorch), got " +
                     std::string(dtype_name(in)));
  }
  if (scalar_arg(n, 2).is_bool()) {
    throw GraphError(arg_prefix(n.op, "correction") + "expects a number, got a bool");
  }
  TensorType out;
  out.sizes = reduced_sizes(g, n, false, DimArgs{1, 3});
  out.dtype = in;
  return out;
}

// logsumexp: dim is required and not empty (PyTorch refuses dim=() for a tensor of rank > 0);
// integral and bool inputs compute in f32.
TensorType infer_logsumexp(const Graph& g, const Node& n) {
  const TensorType& self = tensor_arg(g, n, 0).type;
  const std::optional<std::vector<int64_t>> dim = int_list_arg(n, 1);
  if (!dim || (dim->empty() && !self.sizes.empty())) {
    throw GraphError(arg_prefix(n.op, "dim") + "expected at least one dim to reduce over");
  }
  TensorType out;
  out.sizes = reduced_sizes(g, n, false);
  out.dtype = is_floating(self.dtype) ? self.dtype : DType::Float32;
  return out;
}

}  // namespace

void add_reduction_schemas(std::vector<OpSchema>& out) {
  for (const char* name : {"sum", "mean", "prod"}) {
    const std::string op = name;
    out.push_back(
        OpSchema{name,
                 {required("self", K::Tensor), optional("dim", K::OptionalIntList, None{}),
                  optional("keepdim", K::Bool, false),
                  optional("dtype", K::OptionalDType, None{}, /*keyword_only=*/true)},
                 OpCategory::Reduction,
                 op == "mean" ? infer_mean : infer_sum_or_prod});
  }
  for (const char* name : {"amax", "amin"}) {
    out.push_back(
        OpSchema{name,
                 {required("self", K::Tensor), optional("dim", K::IntList, std::vector<int64_t>{}),
                  optional("keepdim", K::Bool, false)},
                 OpCategory::Reduction,
                 infer_extremum});
  }
  for (const char* name : {"argmax", "argmin"}) {
    out.push_back(
        OpSchema{name,
                 {required("self", K::Tensor), optional("dim", K::OptionalIntList, None{}),
                  optional("keepdim", K::Bool, false)},
                 OpCategory::Reduction,
                 infer_arg_extremum});
  }
  for (const char* name : {"any", "all"}) {
    out.push_back(
        OpSchema{name,
                 {required("self", K::Tensor), optional("dim", K::OptionalIntList, None{}),
                  optional("keepdim", K::Bool, false)},
                 OpCategory::Reduction,
                 infer_any_all});
  }
  // ATen's var.correction, std.correction and var_mean.correction (which returns the var and
  // the mean); correction=None means 1.
  const Scalar one(int64_t{1});
  for (const char* name : {"var", "std", "var_mean"}) {
    const std::string op = name;
    out.push_back(
        OpSchema{name,
                 {required("self", K::Tensor), optional("dim", K::OptionalIntList, None{}),
                  optional("correction", K::Scalar, one, /*keyword_only=*/true),
                  optional("keepdim", K::Bool, false, /*keyword_only=*/true)},
                 OpCategory::Reduction,
                 infer_variance});
    // var_mean gives (var, mean), both of the inferred type: one node per result.
    if (op == "var_mean") out.back().result_count = [](const Graph&, const Node&) { return 2; };
  }
  out.push_back(OpSchema{"logsumexp",
                         {required("self", K::Tensor), required("dim", K::IntList),
                          optional("keepdim", K::Bool, false)},
                         OpCategory::Reduction,
                         infer_logsumexp});
}

}  // namespace stax::ir::detail
