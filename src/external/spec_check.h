// Checks of a MatmulSpec that need no library: shapes that agree as eager's mm/bmm/addmm/
// baddbmm require, non-negative sizes and strides, and an output whose elements do not
// overlap. Internal to src/external.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "external/convolution.h"
#include "external/matmul.h"

namespace stax::external::detail {

// "" when the spec is well formed, else what is wrong (for supported()'s `why` and errors).
std::string spec_error(const MatmulSpec& spec);

// oneDNN 2.x counts sizes, strides and offsets in 32-bit ints in places: from 2^31 on it
// leaves its brgemm matmul kernels for gemm:jit (whose arguments are ints), and at 2^32 its
// matmul and convolution divide by zero while choosing a kernel (SIGFPE, issue 32 point 4).
// So a size, or a stride along a dimension of more than one element, over 2^31 - 1 is
// refused before oneDNN is asked, and a Stax loop nest computes the op instead.
// What is over the limit in this operand ("a's size 4294967296 at dim 2"), or "".
std::string over_32_bits(const std::string& operand, std::span<const int64_t> sizes,
                         std::span<const int64_t> strides);
// The refusal for `what` (the first operand over the limit), or "" when none is.
std::string library_size_refusal(const std::string& library_op, const std::string& what);
// The matmul's: a, b, c and the bias.
std::string library_size_refusal(const MatmulSpec& spec);
// The convolution's: its four layouts and its stride, padding and dilation.
std::string library_size_refusal(const ConvolutionSpec& spec);

// Whether a dimension of this operand is broadcast over c's: size 1 or stride 0 where c's
// size is larger.
bool broadcasts(const MatrixLayout& layout, int dim, int64_t c_size);

// Whether two different index tuples of a strided layout can name the same element (an
// output must not: its elements would be written twice).
bool elements_overlap(std::span<const int64_t> sizes, std::span<const int64_t> strides);

}  // namespace stax::external::detail
