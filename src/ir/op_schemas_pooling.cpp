// Schemas and type inference of the 2-D pooling ops, with ATen's parameter names, order and
// defaults (torch.ops.aten.X.default._schema in torch 2.13.0), so the torch.compile bridge
// maps the nodes by name:
//   max_pool2d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1,
//                           ceil_mode=False) -> (values, indices)
//   avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode=False,
//              count_include_pad=True, divisor_override=None)
//   _adaptive_avg_pool2d(self, output_size)
// and their backward ops (every parameter required, as in ATen, but divisor_override):
//   max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
//                                    ceil_mode, indices)
//   avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
//                       count_include_pad, divisor_override=None)
//   _adaptive_avg_pool2d_backward(grad_output, self)
// whose result is the gradient of self (its sizes and dtype). ATen's `int? divisor_override`
// has no default; here it defaults to None so that a call that leaves a None argument out (as
// the bridge and the printer do) binds, as convolution's bias (op_schemas_convolution.cpp).
// max_pool2d_with_indices has two results (one node each, Node::result_index): the maxima in
// the input's dtype and their int64 indices into the input plane. The results are
// contiguous; what each argument means and what PyTorch refuses is ir/pooling_args.h.
#include "ir/op_schemas_internal.h"
#include "ir/pooling_args.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

TensorType infer_pooling(const Graph& g, const Node& n) {
  const PoolingArgs args = pooling_args(g, n);
  TensorType out;
  out.dtype = args.kind == PoolingKind::Max && n.result_index == 1 ? DType::Int64 : args.dtype;
  out.sizes = args.backward ? args.input_sizes : args.result_sizes();
  return out;
}

}  // namespace

void add_pooling_schemas(std::vector<OpSchema>& out) {
  const std::vector<int64_t> none = {}, zero = {0}, one = {1};
  out.push_back(
      OpSchema{"max_pool2d_with_indices",
               {required("self", K::Tensor), required("kernel_size", K::IntList),
                optional("stride", K::IntList, none), optional("padding", K::IntList, zero),
                optional("dilation", K::IntList, one), optional("ceil_mode", K::Bool, false)},
               OpCategory::Pooling,
               infer_pooling});
  out.back().result_count = [](const Graph&, const Node&) { return 2; };  // values, indices
  out.push_back(
      OpSchema{"avg_pool2d",
               {required("self", K::Tensor), required("kernel_size", K::IntList),
                optional("stride", K::IntList, none), optional("padding", K::IntList, zero),
                optional("ceil_mode", K::Bool, false), optional("count_include_pad", K::Bool, true),
                optional("divisor_override", K::OptionalInt, None{})},
               OpCategory::Pooling,
               infer_pooling});
  out.push_back(OpSchema{"_adaptive_avg_pool2d",
                         {required("self", K::Tensor), required("output_size", K::IntList)},
                         OpCategory::Pooling,
                         infer_pooling});
  out.push_back(OpSchema{"max_pool2d_with_indices_backward",
                         {required("grad_output", K::Tensor), required("self", K::Tensor),
                          required("kernel_size", K::IntList), required("stride", K::IntList),
                          required("padding", K::IntList), required("dilation", K::IntList),
                          required("ceil_mode", K::Bool), required("indices", K::Tensor)},
                         OpCategory::Pooling,
                         infer_pooling});
  out.push_back(OpSchema{"avg_pool2d_backward",
                         {required("grad_output", K::Tensor), required("self", K::Tensor),
                          required("kernel_size", K::IntList), required("stride", K::IntList),
                          required("padding", K::IntList), required("ceil_mode", K::Bool),
                          required("count_include_pad", K::Bool),
                          optional("divisor_override", K::OptionalInt, None{})},
                         OpCategory::Pooling,
                         infer_pooling});
  out.push_back(OpSchema{"_adaptive_avg_pool2d_backward",
                         {required("grad_output", K::Tensor), required("self", K::Tensor)},
                         OpCategory::Pooling,
                         infer_pooling});
}

}  // namespace stax::ir::detail
