// Channels-last storage of image batches inside a program.
//
// Convolution libraries read and write channels-last tensors in place where their fastest
// kernels take that format (oneDNN's AMX and brgconv kernels read nhwc only); an NCHW tensor
// is reordered into it before each call and out of it after. Lowering therefore stores a
// convolution's output channels last where the library's plan says it runs in place on that
// format, and stores the values computed from such data (a batch norm, a ReLU, a residual
// add) in the same layout, so that from one convolution to the next nothing is reordered.
// Graph outputs keep eager's layout.
//
// What this file holds: the loops that store a result with its channels innermost (the
// kernels then vectorize along contiguous channels), and the test whether a value reads
// channels-last data. Pooling (lower_pooling.cpp) uses the same two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "lowering/loop_ir.h"
#include "lowering/ops_handler.h"

namespace stax::lowering {

// The loops over a stored result of these sizes: row-major, or with dim `channel` moved
// innermost (the other dims keep their order), the result stored densely in loop order.
// Sizes are expressions over the size symbols (issue 33; constants for a static result), and
// so are the extents and strides.
struct StoreLoops {
  std::vector<size_t> order;              // loop k runs over result dim order[k]
  std::vector<index::Expr> loop_sizes;    // the loops' extents
  std::vector<index::Expr> loop_strides;  // the result's offset per loop index
  std::vector<index::Expr> strides;       // the result's stride per dim
  StoreLoops(const std::vector<index::Expr>& sizes, std::optional<size_t> channel);
  // The result index at loop index idx.
  std::vector<index::Expr> logical(const std::vector<index::Expr>& idx) const;
};

// Whether the value `load` of these sizes reads channels-last data: some load walks dim
// `channel` contiguously and none the innermost dim. Never for fewer than 2 channels (a
// symbol's hint stands for it: the answer chooses a layout, which is right at every size).
bool reads_channels_last(const Loader& load, const std::vector<index::Expr>& sizes, size_t channel,
                         const index::SymbolTable& symbols);

// Image batches ([N, C, H, W] and [N, C, D, H, W]) of more than one position per image (at
// the symbols' hints): the only values lowering stores channels last on its own account;
// their channel dim is 1.
inline constexpr size_t kImageChannelDim = 1;
bool is_image_batch(const std::vector<index::Expr>& sizes, const index::SymbolTable& symbols);

}  // namespace stax::lowering
