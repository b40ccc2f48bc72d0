// Views as index transformations (the seed's Section 6.3): each view op maps an index of its
// output to an index of its input, so reading through a view is a load at a rewritten index
// and never a copy. Where the input is stored data with a strided layout, the view's strided
// layout is derived as well, so that a graph output that is a view needs no copy.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "index/expr.h"

namespace stax::lowering {

using IndexMap = std::function<std::vector<index::Expr>(const std::vector<index::Expr>&)>;

IndexMap permute_index(const std::vector<int64_t>& dims);
IndexMap unsqueeze_index(int64_t dim);
// removed[d]: input dim d (of size 1) is dropped by the squeeze.
IndexMap squeeze_index(const std::vector<bool>& removed);
// Broadcasting/expand: `in_sizes` aligned to the right of `out_sizes`; size-1 dims read 0.
// Sizes are expressions over size symbols (issue 33): a dim of size 1 against one of another
// size broadcasts (the graph's shape rules proved that the other is not 1 only at run time).
IndexMap broadcast_index(const std::vector<index::Expr>& in_sizes,
                         const std::vector<index::Expr>& out_sizes);
// Reshape of the logical (row-major) element order. `symbols` gives the hints that choose how
// the dims group; every group is checked by equality of its products, so the map holds at every
// size. Divisions are by sizes, which must be constants or monomials of symbols.
IndexMap reshape_index(const std::vector<index::Expr>& in_sizes,
                       const std::vector<index::Expr>& out_sizes,
                       const index::SymbolTable& symbols = {});

// slice/narrow/split: input index start + step * k along dim for output index k.
IndexMap window_index(int64_t dim, const index::Expr& start, int64_t step);
// select: the input dim `dim` is fixed at `index`.
IndexMap select_index(int64_t dim, const index::Expr& index);
// flip: flipped[d] reverses dim d of the given sizes.
IndexMap flip_index(const std::vector<index::Expr>& sizes, const std::vector<bool>& flipped);
// roll: per-dim shifts in [0, size) (floor division and modulo), or with `flat_shift` the
// roll of the row-major flattening.
// roll's maps. `shifts` (`flat_shift`) are wrapped into [0, size) where the sizes are numbers;
// over sizes known only at run time (issue 33) they are any shift, the dividend of the modulo
// kept non-negative at every size >= 1 (out - c + c * size for a shift c > 0). Throws
// index::SymbolicSizesRefused where a size is no divisor the index algebra takes.
IndexMap roll_index(const std::vector<index::Expr>& sizes, const std::vector<int64_t>& shifts);
IndexMap flat_roll_index(const std::vector<index::Expr>& sizes, int64_t flat_shift);
// Shifts every dim by `offsets` (input index = output index + offsets): the operand regions of
// cat and constant_pad_nd.
IndexMap shift_index(const std::vector<index::Expr>& offsets);

// Storage offset of a logical index under strides.
index::Expr strided_offset(const std::vector<index::Expr>& idx,
                           const std::vector<index::Expr>& strides,
                           const index::Expr& offset = index::Expr(0));

}  // namespace stax::lowering
