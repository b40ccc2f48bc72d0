// Schemas and type inference of the factory ops (issue 7, point 3), the ops that make a tensor
// from their arguments alone so that masks and constants built in a graph stay in Stax:
// full, zeros, ones, full_like, zeros_like, ones_like, fill (aten.fill.Scalar), scalar_tensor,
// arange and iota (prims.iota). Parameters are ATen's in order and name, without the
// layout/device/pin_memory/requires_grad/memory_format parameters (Stax is CPU-only and its
// results contiguous; the PyTorch bridge drops them). ATen's three arange overloads are one
// Stax op with arange.start_step's schema (start, end, step=1): arange(end) is
// arange(0, end) and arange.start(s, e) is arange(s, e). The meaning of the arguments (dtype
// defaults, sizes, the checks) is ir/factory_args.h, shared with the interpreter and lowering.
#include <string>

#include "ir/factory_args.h"
#include "ir/op_schemas_internal.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

TensorType infer_factory(const Graph& g, const Node& n) {
  FactoryArgs args = factory_args(g, n);
  TensorType out;
  out.dtype = args.dtype;
  out.sizes = std::move(args.sizes);
  return out;
}

Param keyword(std::string name, ParamKind kind) {
  return Param{std::move(name), kind, std::nullopt, /*keyword_only=*/true};
}

Param dtype_param() {
  return optional("dtype", K::OptionalDType, None{}, /*keyword_only=*/true);
}

void add(std::vector<OpSchema>& out, std::string name, std::vector<Param> params) {
  out.push_back(OpSchema{std::move(name), std::move(params), OpCategory::Factory, infer_factory});
}

}  // namespace

void add_factory_schemas(std::vector<OpSchema>& out) {
  add(out, "full",
      {required("size", K::IntList), required("fill_value", K::Scalar), dtype_param()});
  add(out, "zeros", {required("size", K::IntList), dtype_param()});
  add(out, "ones", {required("size", K::IntList), dtype_param()});
  add(out, "full_like",
      {required("self", K::Tensor), required("fill_value", K::Scalar), dtype_param()});
  add(out, "zeros_like", {required("self", K::Tensor), dtype_param()});
  add(out, "ones_like", {required("self", K::Tensor), dtype_param()});
  add(out, "fill", {required("self", K::Tensor), required("value", K::Scalar)});
  add(out, "scalar_tensor", {required("s", K::Scalar), dtype_param()});
  add(out, "arange",
      {required("start", K::Scalar), required("end", K::Scalar),
       optional("step", K::Scalar, Scalar(int64_t{1})), dtype_param()});
  add(out, "iota",
      {required("length", K::Int), keyword("start", K::Int), keyword("step", K::Int),
       keyword("dtype", K::OptionalDType)});
}

}  // namespace stax::ir::detail
