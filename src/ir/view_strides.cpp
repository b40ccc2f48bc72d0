// torch.Tensor.view's stride rule, with overflow-checked arithmetic.
#include "ir/view_strides.h"

#include "ir/checked_arith.h"
#include "ir/graph.h"

namespace stax::ir {

std::optional<std::vector<int64_t>> view_strides(const std::vector<int64_t>& sizes,
                                                 const std::vector<int64_t>& strides,
                                                 const std::vector<int64_t>& new_sizes) {
  const std::optional<int64_t> numel = checked_numel(sizes);
  if (!numel || numel != checked_numel(new_sizes)) return std::nullopt;
  if (*numel == 0) {
    if (sizes == new_sizes) return strides;
    return ir::contiguous_strides(new_sizes);
  }

  // Split the old dims (innermost first, size-1 dims ignored) into chunks in which every dim's
  // stride is the next inner dim's stride times its size: each chunk is uniformly strided.
  struct Chunk {
    int64_t numel;
    int64_t inner_stride;
  };
  std::vector<Chunk> chunks;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    // A chunk's numbers stay below the tensor's extent except this product, one stride past
    // the chunk's last element; when it overflows, no stride can equal it.
    if (!chunks.empty() &&
        checked_mul(chunks.back().inner_stride, chunks.back().numel) == strides[i]) {
      chunks.back().numel *= sizes[i];
    } else {
      chunks.push_back({sizes[i], strides[i]});
    }
  }

  // Each new dim (innermost first, size-1 dims aside) must lie within one chunk.
  std::vector<int64_t> result(new_sizes.size(), 0);
  size_t chunk = 0;
  int64_t filled = 1;  // product of the new sizes already placed in the current chunk
  for (size_t j = new_sizes.size(); j-- > 0;) {
    if (new_sizes[j] == 1) continue;
    if (chunk >= chunks.size()) return std::nullopt;
    result[j] = chunks[chunk].inner_stride * filled;
    filled *= new_sizes[j];
    if (filled == chunks[chunk].numel) {
      ++chunk;
      filled = 1;
    } else if (filled > chunks[chunk].numel) {
      return std::nullopt;
    }
  }
  if (chunk != chunks.size()) return std::nullopt;
  // Size-1 dims get the stride a contiguous layout would give them (any stride serves a dim
  // that is never stepped along, so 1 where that stride would overflow).
  for (size_t j = new_sizes.size(); j-- > 0;) {
    if (new_sizes[j] != 1) continue;
    result[j] =
        j + 1 < new_sizes.size() ? checked_mul(result[j + 1], new_sizes[j + 1]).value_or(1) : 1;
  }
  return result;
}

}  // namespace stax::ir
