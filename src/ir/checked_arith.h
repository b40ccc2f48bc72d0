// Checked int64 arithmetic for tensor sizes, strides, offsets and byte counts: the one place
// that decides whether a layout's numbers fit int64. The IR (inputs and every inferred
// result), the host tensors, the eager interpreter and code generation all call these, so a
// layout accepted by one is accepted by all and no later size computation can wrap.
//
// A layout (dtype, sizes, strides, offset) is valid when sizes and strides are non-negative
// (negative strides are not supported by the kernels or the tensors) and each of these fits
// int64: the element count, the product of the sizes with 0 counted as 1 (which bounds the
// contiguous strides and every size product formed when copying or reshaping), the byte size
// (elements * element size), the strided extent (offset + the largest offset reached + 1) and the
// extent in bytes. Every element offset and byte offset of the layout, and every partial sum of i_k
// * stride_k, is then at most the extent, so kernels computing offsets in int64 cannot overflow.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace stax {

// a * b and a + b, or nullopt when the exact result does not fit int64.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// Product of the sizes (0 when any size is 0, even if the others overflow); nullopt on overflow.
std::optional<int64_t> checked_numel(const std::vector<int64_t>& sizes);
// Element count times the dtype's size in bytes.
std::optional<int64_t> checked_byte_size(const std::vector<int64_t>& sizes, DType dtype);
// Row-major strides, a size-0 dim counting as 1 as in PyTorch; nullopt when a stride (the
// product of the sizes inside its dim) overflows.
std::optional<std::vector<int64_t>> checked_contiguous_strides(const std::vector<int64_t>& sizes);
// Elements of storage a view needs: offset + sum over dims of (size - 1) * stride + 1, or 0
// for an empty view. Sizes, strides and offset must be non-negative (see layout_problem).
std::optional<int64_t> checked_strided_extent(const std::vector<int64_t>& sizes,
                                              const std::vector<int64_t>& strides,
                                              int64_t offset = 0);

// What is wrong with a layout (see the file comment), or nullopt when it is valid. The text
// starts with "sizes [..] strides [..]" so that callers only prefix what the tensor is, e.g.
// "input 'x': sizes [4611686018427387904, 4] strides [4, 1]: the element count overflows
// int64 (more than 9223372036854775807 elements)".
std::optional<std::string> layout_problem(DType dtype, const std::vector<int64_t>& sizes,
                                          const std::vector<int64_t>& strides, int64_t offset = 0);
// The same for a value given only by sizes (laid out contiguously).
std::optional<std::string> contiguous_layout_problem(DType dtype,
                                                     const std::vector<int64_t>& sizes);

}  // namespace stax
