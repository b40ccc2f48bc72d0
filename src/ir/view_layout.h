// The strided layouts (PyTorch's strides) of the view ops — reshape/view, permute, transpose,
// unsqueeze, squeeze, expand, slice, select, narrow, split, split_with_sizes, as_strided —
// and the layout of clone's result with memory_format=preserve (torch.empty_like's rule).
// The eager interpreter builds its views with them and lowering derives the strided layout
// of a view with them, so the two always agree.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace stax::ir {

struct ViewLayout {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;  // storage offset in elements
};

// The layout of the result of `node` (one of the view ops above) over the storage of its
// operand, which has `strides` and storage offset `offset`; nullopt for a reshape that must
// copy. A `view` that the strides make impossible throws std::invalid_argument (PyTorch's
// message).
std::optional<ViewLayout> view_layout(const Graph& graph, const Node& node,
                                      const std::vector<int64_t>& strides, int64_t offset);

// Whether the elements of a layout cover a contiguous range of memory exactly once in some
// order of the dims (PyTorch's is_non_overlapping_and_dense).
bool is_non_overlapping_and_dense(const std::vector<int64_t>& sizes,
                                  const std::vector<int64_t>& strides);
// The strides of clone(x, memory_format=preserve_format) (and torch.empty_like): x's own
// strides when x is non-overlapping and dense; otherwise dense strides that keep the order of
// x's dims by stride (dims of stride 0 keep their place relative to the others).
std::vector<int64_t> preserved_strides(const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& strides);

}  // namespace stax::ir
