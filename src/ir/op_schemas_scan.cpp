// Schemas of the scans (issue 16, point 7), with ATen's parameter names, order and defaults
// (torch 2.13.0's _schema), so the torch.compile bridge maps them by name:
//   cumsum(self, dim, *, dtype=None)   cumprod(self, dim, *, dtype=None)
//   logcumsumexp(self, dim)            cummax(self, dim) -> (values, indices)
//                                      cummin(self, dim) -> (values, indices)
// Every result has the input's sizes; ir/scan_args.h says what each computes in which dtype.
#include "ir/op_schemas_internal.h"
#include "ir/scan_args.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

TensorType infer_scan(const Graph& g, const Node& n) {
  const ScanArgs a = scan_args(g, n);
  TensorType out;
  out.sizes = g.value(a.self).type.sizes;
  out.dtype = a.result_dtype(n.result_index);
  return out;
}

}  // namespace

void add_scan_schemas(std::vector<OpSchema>& out) {
  for (const char* name : {"cumsum", "cumprod"}) {
    out.push_back(OpSchema{name,
                           {required("self", K::Tensor), required("dim", K::Int),
                            optional("dtype", K::OptionalDType, None{}, /*keyword_only=*/true)},
                           OpCategory::Scan,
                           infer_scan});
  }
  out.push_back(OpSchema{"logcumsumexp",
                         {required("self", K::Tensor), required("dim", K::Int)},
                         OpCategory::Scan,
                         infer_scan});
  for (const char* name : {"cummax", "cummin"}) {
    out.push_back(OpSchema{name,
                           {required("self", K::Tensor), required("dim", K::Int)},
                           OpCategory::Scan,
                           infer_scan});
    out.back().result_count = [](const Graph&, const Node&) { return 2; };  // values, indices
  }
}

}  // namespace stax::ir::detail
