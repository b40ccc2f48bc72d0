// Schemas and type inference of the contractions (issue 14, point 3): mm, bmm, addmm and
// baddbmm with ATen's parameter names and order (torch.ops.aten.X.default._schema in torch
// 2.13.0), so the torch.compile bridge maps each ATen node by name:
//   mm(self, mat2), bmm(self, mat2),
//   addmm(self, mat1, mat2, *, beta=1, alpha=1), baddbmm(self, batch1, batch2, *, beta=1, alpha=1).
// The result has the operands' dtype and is contiguous; what each argument means and what
// PyTorch refuses is ir/contraction_args.h.
#include "ir/contraction_args.h"
#include "ir/op_schemas_internal.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

TensorType infer_contraction(const Graph& g, const Node& n) {
  const ContractionArgs args = contraction_args(g, n);
  TensorType out;
  out.dtype = args.dtype;
  out.sizes = args.result_sizes();
  return out;
}

void add(std::vector<OpSchema>& out, std::string name, std::vector<Param> params) {
  out.push_back(
      OpSchema{std::move(name), std::move(params), OpCategory::Contraction, infer_contraction});
}

}  // namespace

void add_contraction_schemas(std::vector<OpSchema>& out) {
  const Scalar one(int64_t{1});
  add(out, "mm", {required("self", K::Tensor), required("mat2", K::Tensor)});
  add(out, "bmm", {required("self", K::Tensor), required("mat2", K::Tensor)});
  add(out, "addmm",
      {required("self", K::Tensor), required("mat1", K::Tensor), required("mat2", K::Tensor),
       optional("beta", K::Scalar, one, /*keyword_only=*/true),
       optional("alpha", K::Scalar, one, /*keyword_only=*/true)});
  add(out, "baddbmm",
      {required("self", K::Tensor), required("batch1", K::Tensor), required("batch2", K::Tensor),
       optional("beta", K::Scalar, one, /*keyword_only=*/true),
       optional("alpha", K::Scalar, one, /*keyword_only=*/true)});
}

}  // namespace stax::ir::detail
