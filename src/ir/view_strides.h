// The strides of a view: whether a tensor of given sizes and strides can be seen with other
// sizes without copying (the rule of torch.Tensor.view), and with which strides. The eager
// interpreter and lowering both decide views with it, so the two can never disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace stax::ir {

// Strides for viewing a tensor of `sizes`/`strides` as `new_sizes` without copying, or
// nullopt when some new dimension would span memory that is not uniformly strided, or when
// the element counts differ. A 0-dim tensor views as any shape of ones.
std::optional<std::vector<int64_t>> view_strides(const std::vector<int64_t>& sizes,
                                                 const std::vector<int64_t>& strides,
                                                 const std::vector<int64_t>& new_sizes);

}  // namespace stax::ir
