// Where the eager interpreter (the oracle) keeps each value: which storage it views, with
// which strides and offset. Lowering composes views as index maps and chooses its own
// buffers, so its layouts are not eager's; but some things observe storage — `view` (refused
// when the strides make it impossible), `as_strided` (which addresses the storage directly)
// and outputs that see an input copy_ overwrites — and for them lowering must see what eager
// sees. Views take the layout eager gives them (view_layout, which the eager interpreter
// uses); ops that compute or copy give fresh storage: contiguous, except clone
// (preserved_strides).
#include "ir/eager_storage.h"

#include <stdexcept>

#include "ir/attention_args.h"
#include "ir/checked_arith.h"
#include "ir/op_schema.h"
#include "ir/text_format.h"
#include "ir/view_layout.h"

namespace stax::ir {

namespace {

// The operand whose storage a view (or a copy that may alias) of `value` reads; -1 when the
// value's storage is its own.
int storage_parent(const Graph& graph, const Value& value) {
  if (value.producer < 0) return -1;
  const Node& node = graph.nodes()[static_cast<size_t>(value.producer)];
  const OpSchema* schema = find_op_schema(node.op);
  const bool unary_view =
      schema->category == OpCategory::View || node.op == "contiguous" || node.op == "clone";
  return unary_view ? std::get<ValueRef>(node.args[0]).index : -1;
}

}  // namespace

const EagerLayout& EagerLayouts::of(int value_index) {
  // Chains of views can be as long as the graph: walk them iteratively, innermost first.
  std::vector<int> pending;
  for (int v = value_index; v >= 0 && !layouts_.count(v);
       v = storage_parent(graph_, graph_.value(ValueRef{v}))) {
    pending.push_back(v);
  }
  for (size_t k = pending.size(); k-- > 0;) {
    layouts_.emplace(pending[k], step(pending[k]));
  }
  return layouts_.at(value_index);
}

EagerLayout EagerLayouts::step(int value_index) {
  const Value& value = graph_.value(ValueRef{value_index});
  const std::vector<int64_t>& sizes = value.type.sizes;
  EagerLayout fresh{value_index, contiguous_strides(sizes), 0};
  EagerLayout layout = fresh;
  if (value.producer < 0) {
    layout.strides = value.type.strides;  // a graph input
  } else {
    const Node& node = graph_.nodes()[static_cast<size_t>(value.producer)];
    const std::string& op = node.op;
    if (const int parent_index = storage_parent(graph_, value); parent_index >= 0) {
      const EagerLayout& parent = layouts_.at(parent_index);
      const std::vector<int64_t>& in_sizes = graph_.value(ValueRef{parent_index}).type.sizes;
      const std::vector<int64_t>& in = parent.strides;
      EagerLayout alias{parent.base, {}, parent.offset};
      if (op == "clone") {
        const auto format = string_arg(node, 1);
        layout.strides =
            format == "contiguous_format" ? fresh.strides : preserved_strides(in_sizes, in);
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
      } else if (std::optional<ViewLayout> v = view_layout(graph_, node, in, parent.offset)) {
        alias.strides = v->strides;
        alias.offset = v->offset;
        layout = alias;
      }  // else a reshape that copies: fresh storage
    } else if (is_attention_op(node.op)) {
      const AttentionArgs a = attention_args(graph_, node);
      layout.strides = a.result_strides(graph_, node.result_index, of(a.query.index).strides);
    }
  }
  return layout;
}

std::string OverwrittenOutput::message() const {
  const Value& out = graph->value(graph->outputs()[output]);
  const std::string input_name = graph->value(input).name;
  const std::string written = graph->value(write->output).name;
  return "graph output " + std::to_string(output) + " ('" + out.name + "') " +
         (out.producer < 0 ? "is input '" + input_name + "'"
                           : "is a view of input '" + input_name + "'") +
         ", which " + describe_node(*graph, *write) +
         " overwrites: the graph's values are functional, so it would name the input's "
         "contents before the write, which the write destroys; return '" +
         written + "' for the written value (what PyTorch's " + input_name +
         " holds after copy_), or clone('" + input_name + "') for the value before the write";
}

std::optional<OverwrittenOutput> output_of_overwritten_input(const Graph& graph) {
  std::unordered_map<int, const Node*> writes;  // input value -> its copy_
  for (const Node& node : graph.nodes()) {
    if (node.op == "copy_") writes[std::get<ValueRef>(node.args[0]).index] = &node;
  }
  if (writes.empty()) return std::nullopt;
  EagerLayouts layouts(graph);
  for (size_t k = 0; k < graph.outputs().size(); ++k) {
    const int base = layouts.of(graph.outputs()[k].index).base;
    if (auto it = writes.find(base); it != writes.end()) {
      OverwrittenOutput o;
      o.output = k;
      o.input = ValueRef{base};
      o.write = it->second;
      o.graph = &graph;
      return o;
    }
  }
  return std::nullopt;
}

void check_no_output_of_overwritten_input(const Graph& graph) {
  if (const std::optional<OverwrittenOutput> o = output_of_overwritten_input(graph)) {
    throw std::invalid_argument(o->message());
  }
}

}  // namespace stax::ir
