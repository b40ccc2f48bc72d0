// Scaled dot-product attention (issue 15, point 1): ATen's
//   _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p=0.,
//       is_causal=False, *, attn_mask=None, scale=None) -> (output, logsumexp)
//   _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out,
//       logsumexp, dropout_p, is_causal, *, attn_mask=None, scale=None)
//       -> (grad_query, grad_key, grad_value)
// and Stax's own
//   softmax_attention(query, key, value, *, attn_mask=None, scale=1.0) -> output
// which is the written-out attention softmax(scale * query @ key^T + attn_mask, -1) @ value
// (graph_passes/fuse_written_attention.h puts it in place of matmul -> scale -> mask ->
// softmax -> matmul): the forward's arguments without dropout or causality, one result,
// contiguous, and a row whose scores are all -inf gives NaN, as softmax gives it.
// read as one description, for type inference, the eager interpreter and lowering alike.
// query [B, Hq, Lq, E], key [B, Hkv, Lk, E], value [B, Hkv, Lk, E] with Hq a multiple of
// Hkv (grouped-query attention: query head h reads key/value head h / (Hq / Hkv)); the
// additive mask has rank 2 or 4 and broadcasts to [B, Hq, Lq, Lk]; is_causal masks keys j > i
// (top-left aligned); scale None is 1 / sqrt(E). The forward's results are the output
// [B, Hq, Lq, E] in the query's dtype and the logsumexp of each row's scores [B, Hq, Lq] in
// float32 (float64 for float64): a row every key is masked from gives output 0 and logsumexp
// 0, as eager's kernel gives (probed, torch 2.13.0).
// Refusals: what eager refuses, with its message (dims other than 4, head sizes that differ, a
// mask of another dtype or rank, dropout); and what eager's kernel reads out of bounds instead
// of refusing (batch sizes or key/value lengths that differ, Hq not a multiple of Hkv).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace stax::ir {

struct AttentionArgs {
  bool backward = false;
  bool written_out = false;  // softmax_attention
  ValueRef query, key, value;
  std::optional<ValueRef> mask;  // its own sizes; broadcast by mask_strides's caller
  bool causal = false;
  double scale = 1.0;  // resolved
  // Backward only.
  ValueRef grad_out, out, logsumexp;
  DType dtype = DType::Float32;
  DType mask_dtype = DType::Float32;
  int64_t batch = 0, query_heads = 0, kv_heads = 0, query_length = 0, key_length = 0, head_size = 0;

  // The logsumexp's dtype: float32, float64 for float64 inputs.
  DType stats_dtype() const { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }
  // The mask's sizes as a rank-4 view broadcast to [B, Hq, Lq, Lk], dim by dim: which of its
  // dims each of the four is (-1: broadcast).
  std::vector<int64_t> mask_dims(const Graph& graph) const;
  // The type of result `k` (forward: output, logsumexp; backward: grad_query, grad_key,
  // grad_value).
  TensorType result_type(const Graph& graph, int k) const;
  // The strides eager gives result `k` (probed, torch 2.13.0): the output is empty_like(query)
  // (the query's layout when dense), the logsumexp is stored [B, Lq, Hq] and each gradient
  // [batch, length, heads, head size], whatever the operands' layouts. `view` observes them.
  std::vector<int64_t> result_strides(const Graph& graph, int k,
                                      const std::vector<int64_t>& query_strides) const;
};

// Whether `op` is one of the two attention ops.
bool is_attention_op(const std::string& op);
AttentionArgs attention_args(const Graph& graph, const Node& node);

}  // namespace stax::ir
