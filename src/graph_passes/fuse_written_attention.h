// Issue 15, point 1: the written-out attention of transformers' eager attention, as ATen
// decomposes it,
//   S = reshape(bmm(reshape(Q), reshape(K^T)), [B, H, Lq, Lk])
//   X = S * c (or S / c, or S), then + mask (optional, broadcast to [B, H, Lq, Lk])
//   P = exp(X - amax(X, -1)) / sum(exp(X - amax(X, -1)), -1)  (softmax; in float32 between
//       two conversions when the model upcasts it)
//   out = reshape(bmm(reshape(P), reshape(V)), [B, H, Lq, Ev])
// becomes softmax_attention(Q, K, V, attn_mask=mask, scale=c) (ir/attention_args.h): the
// target's blocked attention, whose scores stay in cache and whose operands are read through
// their strides. Only where nothing else reads S, X, P or the products (a training graph
// saves P for the backward: its attention stays written out), for float32 and bfloat16, and
// where the cost model finds the blocked form moves fewer bytes (fuse_written_attention.cpp).
#pragma once

#include <string>
#include <vector>

#include "graph_passes/graph_passes.h"

namespace stax::graph_passes {

// The rewritten graph; one line per written-out attention found, with the decision and why.
ir::Graph fuse_written_attention(const ir::Graph& graph, const GraphPassOptions& options,
                                 std::vector<std::string>& log);

}  // namespace stax::graph_passes
