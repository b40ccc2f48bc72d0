// Schema and type inference of ATen's convolution, with its parameter names and order
// (torch.ops.aten.convolution.default._schema in torch 2.13.0), so the torch.compile bridge
// maps the node by name:
//   convolution(input, weight, bias=None, stride, padding, dilation, transposed,
//               output_padding, groups)
//   convolution_backward(grad_output, input, weight, bias_sizes=None, stride, padding,
//                        dilation, transposed, output_padding, groups, output_mask)
//     -> (grad_input, grad_weight, grad_bias); bias_sizes defaults to None for the same reason
//     as convolution's bias
// ATen's `Tensor? bias` has no default; here it defaults to None so that a call that leaves a
// None argument out (as the bridge and the printer do) binds. The other parameters are
// required, as in ATen; a single int for a list parameter is wrapped (and then expanded to
// every spatial dim). The result has the operands' dtype and is contiguous; what each
// argument means and what PyTorch refuses is ir/convolution_args.h.
#include "ir/convolution_args.h"
#include "ir/op_schemas_internal.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

TensorType infer_convolution(const Graph& g, const Node& n) {
  const ConvolutionArgs args = convolution_args(g, n);
  TensorType out;
  out.dtype = args.dtype;
  out.sizes = args.result_sizes();
  return out;
}

TensorType infer_convolution_backward(const Graph& g, const Node& n) {
  const ConvolutionBackwardArgs args = convolution_backward_args(g, n);
  TensorType out;
  out.dtype = args.forward.dtype;
  out.sizes = args.result_sizes(n.result_index);
  return out;
}

}  // namespace

void add_convolution_schemas(std::vector<OpSchema>& out) {
  out.push_back(OpSchema{"convolution",
                         {required("input", K::Tensor), required("weight", K::Tensor),
                          optional("bias", K::OptionalTensor, None{}),
                          required("stride", K::IntList), required("padding", K::IntList),
                          required("dilation", K::IntList), required("transposed", K::Bool),
                          required("output_padding", K::IntList), required("groups", K::Int)},
                         OpCategory::Convolution,
                         infer_convolution});
  // (grad_input, grad_weight, grad_bias): one node per result.
  out.push_back(
      OpSchema{"convolution_backward",
               {required("grad_output", K::Tensor), required("input", K::Tensor),
                required("weight", K::Tensor), optional("bias_sizes", K::OptionalIntList, None{}),
                required("stride", K::IntList), required("padding", K::IntList),
                required("dilation", K::IntList), required("transposed", K::Bool),
                required("output_padding", K::IntList), required("groups", K::Int),
                required("output_mask", K::BoolList)},
               OpCategory::Convolution,
               infer_convolution_backward,
               [](const Graph&, const Node&) -> int64_t { return 3; }});
}

}  // namespace stax::ir::detail
