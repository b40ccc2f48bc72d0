// Strided layouts of the selecting views and of clone's preserved format.
#include "ir/view_layout.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "ir/movement_args.h"
#include "ir/op_schema.h"

namespace stax::ir {

ViewLayout view_layout(const Graph& graph, const Node& node, const std::vector<int64_t>& strides,
                       int64_t offset) {
  const std::vector<int64_t>& sizes = tensor_arg(graph, node, 0).type.sizes;
  ViewLayout out{sizes, strides, offset};
  if (node.op == "select") {
    const SelectArgs s = select_args(graph, node);
    const auto d = static_cast<size_t>(s.dim);
    out.offset += s.index * strides[d];
    out.sizes.erase(out.sizes.begin() + s.dim);
    out.strides.erase(out.strides.begin() + s.dim);
    return out;
  }
  if (node.op == "as_strided") {
    AsStridedArgs a = as_strided_args(graph, node);
    return ViewLayout{std::move(a.sizes), std::move(a.strides), a.storage_offset.value_or(offset)};
  }
  if (node.op == "slice" || node.op == "narrow" || node.op == "split" ||
      node.op == "split_with_sizes") {
    const DimWindow w = window_args(graph, node);
    const auto d = static_cast<size_t>(w.dim);
    // An empty window starts nowhere: PyTorch still offsets it by start (which is <= size).
    out.offset += w.start * strides[d];
    out.sizes[d] = w.length;
    out.strides[d] = strides[d] * w.step;
    return out;
  }
  throw std::logic_error("view_layout: " + node.op + " is not a selecting view");
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
