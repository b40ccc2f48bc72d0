// Strided layouts of the view ops and of clone's preserved format.
#include "ir/view_layout.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "ir/checked_arith.h"
#include "ir/movement_args.h"
#include "ir/op_schema.h"
#include "ir/text_format.h"
#include "ir/view_strides.h"

namespace stax::ir {

std::optional<ViewLayout> view_layout(const Graph& graph, const Node& node,
                                      const std::vector<int64_t>& strides, int64_t offset) {
  const std::vector<int64_t>& sizes = tensor_arg(graph, node, 0).type.sizes;
  const std::vector<int64_t>& out_sizes = graph.value(node.output).type.sizes;
  const std::string& op = node.op;
  ViewLayout out{out_sizes, {}, offset};
  if (op == "reshape" || op == "view") {
    if (std::optional<std::vector<int64_t>> s = view_strides(sizes, strides, out_sizes)) {
      out.strides = std::move(*s);
      return out;
    }
    if (op == "reshape") return std::nullopt;
    throw std::invalid_argument(
        "view: view size is not compatible with input tensor's size and stride (viewing sizes " +
        format_sizes(sizes) + " with strides " + format_sizes(strides) + " as " +
        format_sizes(out_sizes) +
        " would make a dimension span memory that is not uniformly strided); use reshape "
        "instead");
  }
  if (op == "permute" || op == "transpose") {
    std::vector<int64_t> dims(sizes.size());
    for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
    if (op == "permute") {
      const std::vector<int64_t> given = *int_list_arg(node, 1);
      for (size_t d = 0; d < dims.size(); ++d) dims[d] = normalize_dim(given[d], sizes.size(), op);
    } else if (!sizes.empty()) {
      std::swap(dims[static_cast<size_t>(normalize_dim(int_arg(node, 1), sizes.size(), op))],
                dims[static_cast<size_t>(normalize_dim(int_arg(node, 2), sizes.size(), op))]);
    }
    for (int64_t d : dims) out.strides.push_back(strides[static_cast<size_t>(d)]);
    return out;
  }
  if (op == "unsqueeze") {
    const auto d = static_cast<size_t>(normalize_dim(int_arg(node, 1), sizes.size() + 1, op));
    out.strides = strides;
    // PyTorch's stride for the new size-1 dim; any stride serves a dim that is never stepped
    // along, so 1 where that product would overflow.
    const int64_t stride = d < sizes.size() ? checked_mul(sizes[d], strides[d]).value_or(1) : 1;
    out.strides.insert(out.strides.begin() + static_cast<std::ptrdiff_t>(d), stride);
    return out;
  }
  if (op == "squeeze") {
    std::vector<bool> listed(sizes.size(), true);
    if (const auto dims = int_list_arg(node, 1); dims) {
      listed.assign(sizes.size(), false);
      if (!sizes.empty()) {
        for (int64_t d : *dims)
          listed[static_cast<size_t>(normalize_dim(d, sizes.size(), op))] = true;
      }
    }
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (!(listed[d] && sizes[d] == 1)) out.strides.push_back(strides[d]);
    }
    return out;
  }
  if (op == "expand") {
    out.strides.assign(out_sizes.size(), 0);
    const size_t lead = out_sizes.size() - sizes.size();
    for (size_t d = 0; d < sizes.size(); ++d) {
      out.strides[lead + d] = sizes[d] == out_sizes[lead + d] ? strides[d] : 0;
    }
    return out;
  }
  if (op == "select") {
    const SelectArgs s = select_args(graph, node);
    out.offset += s.index * strides[static_cast<size_t>(s.dim)];
    out.strides = strides;
    out.strides.erase(out.strides.begin() + s.dim);
    return out;
  }
  if (op == "as_strided") {
    AsStridedArgs a = as_strided_args(graph, node);
    return ViewLayout{std::move(a.sizes), std::move(a.strides), a.storage_offset.value_or(offset)};
  }
  if (op == "slice" || op == "narrow" || op == "split" || op == "split_with_sizes") {
    const DimWindow w = window_args(graph, node);
    const auto d = static_cast<size_t>(w.dim);
    // An empty window still starts at start (<= size), as in PyTorch.
    out.offset += w.start * strides[d];
    out.strides = strides;
    out.strides[d] = strides[d] * w.step;
    return out;
  }
  throw std::logic_error("view_layout: " + op + " is not a view op");
}

bool is_non_overlapping_and_dense(const std::vector<int64_t>& sizes,
                                  const std::vector<int64_t>& strides) {
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return true;  // no elements: nothing overlaps
    if (sizes[d] != 1) dims.push_back(d);
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (size_t d : dims) {
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

std::vector<int64_t> preserved_strides(const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& strides) {
  if (is_non_overlapping_and_dense(sizes, strides)) return strides;
  // Order the dims from the fastest (smallest stride) to the slowest, starting from the
  // innermost-first order and moving a dim outward only past dims of strictly smaller
  // stride, or of equal stride and smaller size; a stride of 0 decides nothing, so such
  // a dim stays where the insertion meets it.
  const size_t rank = sizes.size();
  std::vector<size_t> order(rank);
  for (size_t k = 0; k < rank; ++k) order[k] = rank - 1 - k;
  auto compare = [&](size_t a, size_t b) {  // > 0: a belongs after b
    if (strides[a] == 0 || strides[b] == 0) return 0;
    if (strides[a] != strides[b]) return strides[a] < strides[b] ? -1 : 1;
    return sizes[a] > sizes[b] ? 1 : 0;
  };
  for (size_t i = 1; i < rank; ++i) {
    size_t moving = i;
    for (size_t j = i; j-- > 0;) {
      const int c = compare(order[j], order[moving]);
      if (c > 0) {
        std::swap(order[j], order[moving]);
        moving = j;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<int64_t> out(rank, 0);
  int64_t next = 1;
  for (size_t d : order) {
    out[d] = next;
    next *= std::max<int64_t>(sizes[d], 1);
  }
  return out;
}

}  // namespace stax::ir
