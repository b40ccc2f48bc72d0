// Checks of a MatmulSpec that need no library: shapes that agree as eager's mm/bmm/addmm/
// baddbmm require, non-negative sizes and strides, and an output whose elements do not
// overlap. Internal to src/external.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "external/matmul.h"

namespace stax::external::detail {

// "" when the spec is well formed, else what is wrong (for supported()'s `why` and errors).
std::string spec_error(const MatmulSpec& spec);

// Whether a dimension of this operand is broadcast over c's: size 1 or stride 0 where c's
// size is larger.
bool broadcasts(const MatrixLayout& layout, int dim, int64_t c_size);

// Whether two different index tuples of a strided layout can name the same element (an
// output must not: its elements would be written twice).
bool elements_overlap(std::span<const int64_t> sizes, std::span<const int64_t> strides);

}  // namespace stax::external::detail
