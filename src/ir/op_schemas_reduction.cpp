// Schemas and type inference of the reductions sum, mean, amax and amin: which dims are
// reduced (None or [] = all), keepdim, and the result dtype (sum widens bool/integral inputs
// to i64, mean needs a floating result, an explicit dtype= wins).
#include <string>

#include "ir/op_schemas_internal.h"
#include "ir/text_format.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

// Output sizes of reducing `self` over arg 1 (dim) with arg 2 (keepdim); with
// require_nonempty a reduced dim of size 0 is an error (no identity element).
std::vector<int64_t> reduced_sizes(const Graph& g, const Node& n, bool require_nonempty) {
  const TensorType& self = tensor_arg(g, n, 0).type;
  const std::optional<std::vector<int64_t>> dim = int_list_arg(n, 1);
  if (dim) wrap_dim_list(*dim, self.sizes.size(), n.op, "dim", /*scalar_ok=*/true);
  const std::vector<int64_t> dims = reduction_dims(dim, self.sizes.size(), n.op);
  const bool keepdim = bool_arg(n, 2);
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

std::optional<DType> dtype_arg(const Node& n, size_t position) {
  std::optional<std::string> name = string_arg(n, position);
  if (!name) return std::nullopt;
  std::optional<DType> dtype = parse_dtype(*name);
  if (!dtype) throw GraphError(arg_prefix(n.op, "dtype") + "unknown dtype '" + *name + "'");
  return dtype;
}

TensorType infer_sum(const Graph& g, const Node& n) {
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

}  // namespace

void add_reduction_schemas(std::vector<OpSchema>& out) {
  for (const char* name : {"sum", "mean"}) {
    out.push_back(
        OpSchema{name,
                 {required("self", K::Tensor), optional("dim", K::OptionalIntList, None{}),
                  optional("keepdim", K::Bool, false),
                  optional("dtype", K::OptionalDType, None{}, /*keyword_only=*/true)},
                 OpCategory::Reduction,
                 std::string(name) == "sum" ? infer_sum : infer_mean});
  }
  for (const char* name : {"amax", "amin"}) {
    out.push_back(
        OpSchema{name,
                 {required("self", K::Tensor), optional("dim", K::IntList, std::vector<int64_t>{}),
                  optional("keepdim", K::Bool, false)},
                 OpCategory::Reduction,
                 infer_extremum});
  }
}

}  // namespace stax::ir::detail
