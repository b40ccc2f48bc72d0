// Schemas of the attention ops (issue 15, point 1), with ATen's parameter names, order and
// defaults (torch 2.13.0); what the arguments mean and what is refused is ir/attention_args.h.
// Each result is its own node (Node::result_index): the forward's output and logsumexp, the
// backward's gradients of query, key and value.
#include "ir/attention_args.h"
#include "ir/op_schemas_internal.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

TensorType infer_attention(const Graph& g, const Node& n) {
  return attention_args(g, n).result_type(g, n.result_index);
}

}  // namespace

void add_attention_schemas(std::vector<OpSchema>& out) {
  const auto attention = OpCategory::Attention;
  out.push_back(OpSchema{
      "_scaled_dot_product_flash_attention_for_cpu",
      {required("query", K::Tensor), required("key", K::Tensor), required("value", K::Tensor),
       optional("dropout_p", K::Scalar, Scalar(0.0)), optional("is_causal", K::Bool, false),
       optional("attn_mask", K::OptionalTensor, None{}, /*keyword_only=*/true),
       optional("scale", K::OptionalTensorOrScalar, None{},
                /*keyword_only=*/true)},
      attention,
      infer_attention});
  out.back().result_count = [](const Graph&, const Node&) { return 2; };
  out.push_back(OpSchema{
      "_scaled_dot_product_flash_attention_for_cpu_backward",
      {required("grad_out", K::Tensor), required("query", K::Tensor), required("key", K::Tensor),
       required("value", K::Tensor), required("out", K::Tensor), required("logsumexp", K::Tensor),
       required("dropout_p", K::Scalar), required("is_causal", K::Bool),
       optional("attn_mask", K::OptionalTensor, None{}, /*keyword_only=*/true),
       optional("scale", K::OptionalTensorOrScalar, None{},
                /*keyword_only=*/true)},
      attention,
      infer_attention});
  out.back().result_count = [](const Graph&, const Node&) { return 3; };
  // Stax's own: the written-out attention (ir/attention_args.h).
  out.push_back(OpSchema{
      "softmax_attention",
      {required("query", K::Tensor), required("key", K::Tensor), required("value", K::Tensor),
       optional("attn_mask", K::OptionalTensor, None{}, /*keyword_only=*/true),
       optional("scale", K::Scalar, Scalar(1.0), /*keyword_only=*/true)},
      attention,
      infer_attention});
}

}  // namespace stax::ir::detail
