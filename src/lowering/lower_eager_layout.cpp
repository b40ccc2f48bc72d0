// Where the eager interpreter (the oracle) keeps each value: which storage it views, with
// which strides and offset. Lowering composes views as index maps and chooses its own
// buffers, so its layouts are not eager's; but two ops observe storage — `view` (refused
// when the strides make it impossible) and `as_strided` (which addresses the storage
// directly) — and for them lowering must see what eager sees. The rules mirror
// src/eager/views.cpp (PyTorch's strides); ops that compute or copy give fresh storage:
// contiguous, except clone (ir::preserved_strides).
#include "ir/checked_arith.h"
#include "ir/text_format.h"
#include "ir/view_layout.h"
#include "lowering/lowerer.h"

namespace stax::lowering {

const Lowerer::EagerLayout& Lowerer::eager_layout(int value_index) {
  if (auto it = eager_layouts_.find(value_index); it != eager_layouts_.end()) return it->second;
  const ir::Value& value = graph_.value(ir::ValueRef{value_index});
  const std::vector<int64_t>& sizes = value.type.sizes;
  EagerLayout fresh{value_index, ir::contiguous_strides(sizes), 0};
  EagerLayout layout = fresh;
  if (value.producer < 0) {
    layout.strides = value.type.strides;  // a graph input
  } else {
    const ir::Node& node = graph_.nodes()[static_cast<size_t>(value.producer)];
    const std::string& op = node.op;
    const ir::OpSchema* schema = ir::find_op_schema(op);
    const bool unary_view =
        schema->category == ir::OpCategory::View || op == "contiguous" || op == "clone";
    if (unary_view) {
      const int parent_index = std::get<ir::ValueRef>(node.args[0]).index;
      const EagerLayout parent = eager_layout(parent_index);
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
        if (contiguous || expected == 0) {
          alias.strides = in;
          layout = alias;
        }
      } else if (op == "reshape" || op == "view") {
        if (auto strides = ir::view_strides(in_sizes, in, sizes)) {
          alias.strides = *strides;
          layout = alias;
        } else if (op == "view") {
          throw std::invalid_argument(
              "view: view size is not compatible with input tensor's size and stride (the "
              "eager result viewed has sizes " +
              ir::format_sizes(in_sizes) + " and strides " + ir::format_sizes(in) +
              "); use reshape instead");
        }
      } else if (op == "permute" || op == "transpose") {
        std::vector<int64_t> dims(in_sizes.size());
        for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
        if (op == "permute") {
          const auto given = *ir::int_list_arg(node, 1);
          for (size_t d = 0; d < dims.size(); ++d) {
            dims[d] = ir::normalize_dim(given[d], in_sizes.size(), op);
          }
        } else if (!in_sizes.empty()) {
          std::swap(dims[static_cast<size_t>(
                        ir::normalize_dim(ir::int_arg(node, 1), in_sizes.size(), op))],
                    dims[static_cast<size_t>(
                        ir::normalize_dim(ir::int_arg(node, 2), in_sizes.size(), op))]);
        }
        for (int64_t d : dims) alias.strides.push_back(in[static_cast<size_t>(d)]);
        layout = alias;
      } else if (op == "unsqueeze") {
        const auto d =
            static_cast<size_t>(ir::normalize_dim(ir::int_arg(node, 1), in_sizes.size() + 1, op));
        alias.strides = in;
        const int64_t stride =
            d < in_sizes.size() ? checked_mul(in_sizes[d], in[d]).value_or(1) : 1;
        alias.strides.insert(alias.strides.begin() + static_cast<std::ptrdiff_t>(d), stride);
        layout = alias;
      } else if (op == "squeeze") {
        // The result keeps the strides of the dims it keeps, in order.
        std::vector<bool> listed(in_sizes.size(), true);
        if (const auto dims = ir::int_list_arg(node, 1); dims && !in_sizes.empty()) {
          listed.assign(in_sizes.size(), false);
          for (int64_t d : *dims) {
            listed[static_cast<size_t>(ir::normalize_dim(d, in_sizes.size(), op))] = true;
          }
        }
        for (size_t d = 0; d < in_sizes.size(); ++d) {
          if (!(listed[d] && in_sizes[d] == 1)) alias.strides.push_back(in[d]);
        }
        layout = alias;
      } else if (op == "expand") {
        alias.strides.assign(sizes.size(), 0);
        const size_t lead = sizes.size() - in_sizes.size();
        for (size_t d = 0; d < in_sizes.size(); ++d) {
          alias.strides[lead + d] = in_sizes[d] == sizes[lead + d] ? in[d] : 0;
        }
        layout = alias;
      } else {  // slice, select, narrow, split, split_with_sizes, as_strided
        const ir::ViewLayout v = ir::view_layout(graph_, node, in, parent.offset);
        alias.strides = v.strides;
        alias.offset = v.offset;
        layout = alias;
      }
    }
  }
  return eager_layouts_.emplace(value_index, std::move(layout)).first->second;
}

}  // namespace stax::lowering
