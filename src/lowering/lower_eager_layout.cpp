// Where the eager interpreter (the oracle) keeps each value: which storage it views, with
// which strides and offset. Lowering composes views as index maps and chooses its own
// buffers, so its layouts are not eager's; but two ops observe storage — `view` (refused
// when the strides make it impossible) and `as_strided` (which addresses the storage
// directly) — and for them lowering must see what eager sees. Views take the layout eager
// gives them (ir::view_layout, which the eager interpreter uses); ops that compute or copy
// give fresh storage: contiguous, except clone (ir::preserved_strides).
#include "ir/attention_args.h"
#include "ir/checked_arith.h"
#include "ir/text_format.h"
#include "ir/view_layout.h"
#include "lowering/lowerer.h"

namespace stax::lowering {

namespace {

// The operand whose storage a view (or a copy that may alias) of `value` reads; -1 when the
// value's storage is its own.
int storage_parent(const ir::Graph& graph, const ir::Value& value) {
  if (value.producer < 0) return -1;
  const ir::Node& node = graph.nodes()[static_cast<size_t>(value.producer)];
  const ir::OpSchema* schema = ir::find_op_schema(node.op);
  const bool unary_view =
      schema->category == ir::OpCategory::View || node.op == "contiguous" || node.op == "clone";
  return unary_view ? std::get<ir::ValueRef>(node.args[0]).index : -1;
}

}  // namespace

const Lowerer::EagerLayout& Lowerer::eager_layout(int value_index) {
  // Chains of views can be as long as the graph: walk them iteratively, innermost first.
  std::vector<int> pending;
  for (int v = value_index; v >= 0 && !eager_layouts_.count(v);
       v = storage_parent(graph_, graph_.value(ir::ValueRef{v}))) {
    pending.push_back(v);
  }
  for (size_t k = pending.size(); k-- > 0;) {
    eager_layouts_.emplace(pending[k], eager_layout_step(pending[k]));
  }
  return eager_layouts_.at(value_index);
}

Lowerer::EagerLayout Lowerer::eager_layout_step(int value_index) {
  const ir::Value& value = graph_.value(ir::ValueRef{value_index});
  const std::vector<int64_t>& sizes = value.type.sizes;
  EagerLayout fresh{value_index, ir::contiguous_strides(sizes), 0};
  EagerLayout layout = fresh;
  if (value.producer < 0) {
    layout.strides = value.type.strides;  // a graph input
  } else {
    const ir::Node& node = graph_.nodes()[static_cast<size_t>(value.producer)];
    const std::string& op = node.op;
    if (const int parent_index = storage_parent(graph_, value); parent_index >= 0) {
      const EagerLayout& parent = eager_layouts_.at(parent_index);
      const std::vector<int64_t>& in_sizes = graph_.value(ir::ValueRef{parent_index}).type.sizes;
      const std::vector<int64_t>& in = parent.strides;
      EagerLayout alias{parent.base, {}, parent.offset};
      if (op == "clone") {
        const auto format = ir::string_arg(node, 1);
        layout.strides =
            format == "contiguous_format" ? fresh.strides : ir::preserved_strides(in_sizes, in);
      } else if (op == "contiguous") {
        bool contiguous = true;
        int64_t expected = 1;
        for (size_t d = in_sizes.size(); d-- > 0;) {
          if (in_sizes[d] == 1) continue;
          contiguous = contiguous && in[d] == expected;
          expected *= in_sizes[d];
        }
        if (contiguous || value.type.numel() == 0) {
          alias.strides = in;
          layout = alias;
        }
      } else if (std::optional<ir::ViewLayout> v =
                     ir::view_layout(graph_, node, in, parent.offset)) {
        alias.strides = v->strides;
        alias.offset = v->offset;
        layout = alias;
      }  // else a reshape that copies: fresh storage
    } else if (ir::is_attention_op(node.op)) {
      const ir::AttentionArgs a = ir::attention_args(graph_, node);
      layout.strides =
          a.result_strides(graph_, node.result_index, eager_layout(a.query.index).strides);
    }
  }
  return layout;
}

}  // namespace stax::lowering
