// What channels_last.h declares.
#include "lowering/channels_last.h"

#include <map>
#include <string>

#include "index/shape_exprs.h"
#include "ir/view_strides.h"
#include "lowering/load_recorder.h"

namespace stax::lowering {

using index::Expr;

StoreLoops::StoreLoops(const std::vector<Expr>& sizes, std::optional<size_t> channel) {
  const size_t rank = sizes.size();
  for (size_t d = 0; d < rank; ++d) order.push_back(d);
  if (channel && *channel < rank) {
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(*channel));
    order.push_back(*channel);
  }
  for (size_t d : order) loop_sizes.push_back(sizes[d]);
  loop_strides = index::contiguous_strides(loop_sizes);
  strides.resize(rank, Expr(0));
  for (size_t k = 0; k < rank; ++k) strides[order[k]] = loop_strides[k];
}

std::vector<Expr> StoreLoops::logical(const std::vector<Expr>& idx) const {
  std::vector<Expr> at(idx.size(), Expr(0));
  for (size_t k = 0; k < idx.size(); ++k) at[order[k]] = idx[k];
  return at;
}

bool reads_channels_last(const Loader& load, const std::vector<Expr>& sizes, size_t channel,
                         const index::SymbolTable& symbols) {
  const size_t rank = sizes.size();
  if (channel + 1 >= rank || index::value_at_hints(sizes[channel], symbols) < 2) return false;
  LoadRecorder h;
  std::vector<Expr> idx;
  std::map<std::string, Expr> extents;
  for (size_t d = 0; d < rank; ++d) {
    const std::string var = "i" + std::to_string(d);
    idx.push_back(Expr::var(var));
    extents.emplace(var, sizes[d]);
  }
  const index::Domain domain(std::move(extents), symbols);
  load(h, idx);
  bool channels = false;
  for (const auto& [buffer, at] : h.loads) {
    const std::optional<int64_t> along_innermost =
        index::stride(at, "i" + std::to_string(rank - 1), domain);
    if (along_innermost == 1) return false;
    channels = channels || index::stride(at, "i" + std::to_string(channel), domain) == 1;
  }
  return channels;
}

bool is_image_batch(const std::vector<Expr>& sizes, const index::SymbolTable& symbols) {
  if (sizes.size() != 4 && sizes.size() != 5) return false;
  // With one position per image (a per-channel value broadcast over the images), channels
  // last and row-major are the same memory: nothing to choose.
  int64_t positions = 1;
  for (size_t d = kImageChannelDim + 1; d < sizes.size(); ++d) {
    positions *= index::value_at_hints(sizes[d], symbols);
  }
  return positions > 1;
}

}  // namespace stax::lowering
