// Issue 15, point 1: attention and its backward as one external node each, run by Stax's
// runtime (external/attention.h; lowering/loop_ir.h: AttentionCall). The call depends on the
// whole of each operand and writes its first result; every further result (the forward's
// logsumexp, the key's and value's gradients) is a buffer of its own whose node is a ResultOf
// the call: it reads the call's buffer, so it is scheduled after it, and the call writes it.
// The nodes of an op's results are consecutive (ir::Graph), so the call is lowered with the
// first result and every later result finds it in first_result_calls_ (lower_further_result).
#include <algorithm>

#include "ir/attention_args.h"
#include "lowering/lowerer.h"

namespace stax::lowering {

namespace {

// The strides of a dense layout of `sizes` whose dims are ordered as `hint_strides` orders
// them at the hints (issue 33: eager's layout of a result over size symbols, [B, L, H, E]
// for a [B, H, L, E] gradient). Constants for a static result.
std::vector<Expr> dense_in_order_of(const std::vector<Expr>& sizes,
                                    const std::vector<int64_t>& hint_strides,
                                    const index::SymbolTable& symbols) {
  if (index::all_constant(sizes)) return index::to_exprs(hint_strides);
  std::vector<size_t> order(sizes.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  // Outermost first: the larger stride, then (a tie of size-1 dims) the earlier dim.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return hint_strides[x] > hint_strides[y]; });
  std::vector<Expr> strides(sizes.size(), Expr(1));
  Expr step(1);
  for (size_t i = order.size(); i-- > 0;) {
    strides[order[i]] = step;
    step = step * sizes[order[i]];
  }
  // The layout must be the hints' where it matters (dims of more than one element).
  const std::vector<int64_t> at_hints = index::values_at_hints(strides, symbols);
  const std::vector<int64_t> size_hints = index::values_at_hints(sizes, symbols);
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (size_hints[d] > 1 && at_hints[d] != hint_strides[d]) {
      throw index::SymbolicSizesRefused(
          "lowering: a result's layout over size symbols is not dense at its hints");
    }
  }
  return strides;
}

}  // namespace

LoweredValue Lowerer::lower_attention(const ir::Node& node, const ir::Value& out) {
  const ir::AttentionArgs a = ir::attention_args(graph_, node);
  const int first = node_index(node) - node.result_index;
  // Each result is written in eager's layout (the gradients [B, L, H, E], the logsumexp
  // [B, L, H]), so a graph output needs no copy into the layout PyTorch expects.
  const std::vector<int64_t> strides =
      a.result_strides(graph_, node.result_index, eager_layout(a.query.index).strides);
  if (node.result_index > 0) {
    return lower_further_result(node, out, "Stax runtime attention", strides);
  }
  const std::string role =
      " of " + ir::describe_node(graph_, node) + ": attention reads stored tensors only";
  AttentionCall c;
  c.backward = a.backward;
  c.query = stored_operand(a.query, "the query" + role);
  c.key = stored_operand(a.key, "the key" + role);
  c.value = stored_operand(a.value, "the value" + role);
  if (a.mask) {
    c.mask = stored_operand(*a.mask, "the mask" + role);
    c.mask_dims = a.mask_dims(graph_);
  }
  c.causal = a.causal;
  c.masked_rows_nan = a.written_out;
  c.scale = a.scale;
  if (a.backward) {
    c.grad_out = stored_operand(a.grad_out, "the output's gradient" + role);
    c.out = stored_operand(a.out, "the forward's output" + role);
    c.logsumexp = stored_operand(a.logsumexp, "the forward's logsumexp" + role);
  }
  ExternalCall call;
  call.op = node.op;
  call.attention = std::move(c);
  call.library = "Stax runtime attention";
  call.reason =
      "attention in blocks whose scores stay in cache, with an online softmax (flash attention)";
  std::string why;
  if (options_.library_for && !options_.library_for(call, &why)) {
    throw ir::GraphError(ir::describe_node(graph_, node) + ": " + why);
  }
  if (!why.empty()) call.reason += "; " + why;
  const std::vector<Expr> sizes = ir::symbolic_sizes_of(out.type);
  LoweredValue v = add_external_buffer(node, std::move(call), out.type.dtype, sizes,
                                       dense_in_order_of(sizes, strides, graph_.size_symbols()));
  first_result_calls_[first] = v;
  return v;
}

LoweredValue Lowerer::lower_further_result(const ir::Node& node, const ir::Value& out,
                                           const std::string& library,
                                           std::optional<std::vector<int64_t>> strides) {
  const int first = node_index(node) - node.result_index;
  const auto it = first_result_calls_.find(first);
  if (it == first_result_calls_.end()) {
    throw std::logic_error(node.op + " result " + std::to_string(node.result_index) +
                           " before its first result");
  }
  const LoweredValue& call_value = it->second;
  ExternalCall call;
  call.op = node.op;
  call.a = ExternalOperand{call_value.layout->buffer,  false, call_value.dtype, call_value.sizes,
                           call_value.layout->strides, 0};
  call.result_of = ResultOf{call_value.layout->buffer, node.result_index};
  call.library = library;
  call.reason = "result " + std::to_string(node.result_index) + " of the call that writes " +
                call_value.layout->buffer;
  const std::vector<Expr> sizes = ir::symbolic_sizes_of(out.type);
  return add_external_buffer(
      node, std::move(call), out.type.dtype, sizes,
      dense_in_order_of(sizes, strides ? *strides : ir::contiguous_strides(out.type.sizes),
                        graph_.size_symbols()));
}

}  // namespace stax::lowering
