// Checked size, stride, extent and byte computations, and the layout validation built on
// them (see checked_arith.h for the rule).
#include "ir/checked_arith.h"

#include <limits>

#include "ir/text_format.h"

namespace stax {

namespace {

const std::string kInt64Max = std::to_string(std::numeric_limits<int64_t>::max());

// Product of the sizes with 0 counted as 1: the element count of the layout with its empty
// dims made non-empty, which bounds every contiguous stride and every product that copies,
// reshapes and lowering form from the sizes.
std::optional<int64_t> checked_span(const std::vector<int64_t>& sizes) {
  int64_t product = 1;
  for (int64_t s : sizes) {
    std::optional<int64_t> next = checked_mul(product, s > 1 ? s : 1);
    if (!next) return std::nullopt;
    product = *next;
  }
  return product;
}

// The checks shared by both layout validations, given the text naming the layout.
std::optional<std::string> size_problem(DType dtype, const std::vector<int64_t>& sizes,
                                        const std::string& layout) {
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0) {
      return layout + ": size " + std::to_string(sizes[d]) + " at dim " + std::to_string(d) +
             " is negative";
    }
  }
  if (!checked_numel(sizes)) {
    return layout + ": the element count overflows int64 (more than " + kInt64Max + " elements)";
  }
  if (!checked_span(sizes)) {
    return layout + ": the sizes with 0 counted as 1 multiply to more than " + kInt64Max +
           " (the contiguous strides and reshapes of an empty tensor overflow int64)";
  }
  if (!checked_byte_size(sizes, dtype)) {
    return layout + ": the byte size overflows int64 (" + std::to_string(*checked_numel(sizes)) +
           " elements of " + std::to_string(dtype_size(dtype)) + " bytes are more than " +
           kInt64Max + " bytes)";
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> checked_numel(const std::vector<int64_t>& sizes) {
  for (int64_t s : sizes) {
    if (s == 0) return 0;
  }
  int64_t product = 1;
  for (int64_t s : sizes) {
    std::optional<int64_t> next = checked_mul(product, s);
    if (!next) return std::nullopt;
    product = *next;
  }
  return product;
}

std::optional<int64_t> checked_byte_size(const std::vector<int64_t>& sizes, DType dtype) {
  std::optional<int64_t> numel = checked_numel(sizes);
  if (!numel) return std::nullopt;
  return checked_mul(*numel, static_cast<int64_t>(dtype_size(dtype)));
}

std::optional<std::vector<int64_t>> checked_contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) {
    std::optional<int64_t> outer = checked_mul(strides[i], sizes[i] > 1 ? sizes[i] : 1);
    if (!outer) return std::nullopt;
    strides[i - 1] = *outer;
  }
  return strides;
}

std::optional<int64_t> checked_strided_extent(const std::vector<int64_t>& sizes,
                                              const std::vector<int64_t>& strides, int64_t offset) {
  for (int64_t s : sizes) {
    if (s == 0) return 0;
  }
  int64_t last = offset;  // offset of the last element reached
  for (size_t d = 0; d < sizes.size() && d < strides.size(); ++d) {
    std::optional<int64_t> step = checked_mul(sizes[d] - 1, strides[d]);
    if (!step) return std::nullopt;
    std::optional<int64_t> sum = checked_add(last, *step);
    if (!sum) return std::nullopt;
    last = *sum;
  }
  return checked_add(last, 1);
}

std::optional<std::string> layout_problem(DType dtype, const std::vector<int64_t>& sizes,
                                          const std::vector<int64_t>& strides, int64_t offset) {
  const std::string layout = "sizes " + ir::format_sizes(sizes) + " strides " +
                             ir::format_sizes(strides) +
                             (offset != 0 ? " offset " + std::to_string(offset) : std::string());
  if (strides.size() != sizes.size()) {
    return layout + ": " + std::to_string(strides.size()) + " strides for " +
           std::to_string(sizes.size()) + " dims (need one stride per dim)";
  }
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] < 0) {
      return layout + ": stride " + std::to_string(strides[d]) + " at dim " + std::to_string(d) +
             " is negative (negative strides are not supported)";
    }
  }
  if (offset < 0) return layout + ": the storage offset is negative";
  if (std::optional<std::string> problem = size_problem(dtype, sizes, layout)) return problem;
  std::optional<int64_t> extent = checked_strided_extent(sizes, strides, offset);
  if (!extent) {
    return layout + ": the strided extent overflows int64 (offset + the sum of (size - 1) * " +
           "stride over the dims, the largest element offset reached, is more than " + kInt64Max +
           ")";
  }
  if (!checked_mul(*extent, static_cast<int64_t>(dtype_size(dtype)))) {
    return layout + ": the strided extent in bytes overflows int64 (" + std::to_string(*extent) +
           " elements of " + std::to_string(dtype_size(dtype)) + " bytes are more than " +
           kInt64Max + " bytes)";
  }
  return std::nullopt;
}

std::optional<std::string> contiguous_layout_problem(DType dtype,
                                                     const std::vector<int64_t>& sizes) {
  std::optional<std::vector<int64_t>> strides = checked_contiguous_strides(sizes);
  if (!strides) return size_problem(dtype, sizes, "sizes " + ir::format_sizes(sizes));
  return layout_problem(dtype, sizes, *strides);
}

}  // namespace stax
