// Schemas of the scatters (issue 15, point 4): ATen's parameters; the result has self's type
// once scatter_args accepts the arguments.
#include "ir/op_schemas_internal.h"
#include "ir/scatter_args.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

TensorType infer_scatter(const Graph& g, const Node& n) {
  scatter_args(g, n);  // throws for what eager refuses
  return tensor_arg(g, n, 0).type;
}

}  // namespace

void add_scatter_schemas(std::vector<OpSchema>& out) {
  const auto scatter = OpCategory::Scatter;
  out.push_back(OpSchema{"index_put",
                         {required("self", K::Tensor), required("indices", K::OptionalTensorList),
                          required("values", K::Tensor), optional("accumulate", K::Bool, false)},
                         scatter,
                         infer_scatter});
  out.push_back(OpSchema{"index_add",
                         {required("self", K::Tensor), required("dim", K::Int),
                          required("index", K::Tensor), required("source", K::Tensor),
                          optional("alpha", K::Scalar, Scalar(int64_t{1}),
                                   /*keyword_only=*/true)},
                         scatter,
                         infer_scatter});
  // scatter.src and scatter.value: a tensor or a scalar `src`.
  out.push_back(OpSchema{"scatter",
                         {required("self", K::Tensor), required("dim", K::Int),
                          required("index", K::Tensor), required("src", K::TensorOrScalar)},
                         scatter,
                         infer_scatter});
  out.push_back(OpSchema{"scatter_add",
                         {required("self", K::Tensor), required("dim", K::Int),
                          required("index", K::Tensor), required("src", K::Tensor)},
                         scatter,
                         infer_scatter});
  out.push_back(
      OpSchema{"scatter_reduce",
               {required("self", K::Tensor), required("dim", K::Int), required("index", K::Tensor),
                required("src", K::Tensor), required("reduce", K::OptionalString),
                optional("include_self", K::Bool, true, /*keyword_only=*/true)},
               scatter,
               infer_scatter});
}

}  // namespace stax::ir::detail
