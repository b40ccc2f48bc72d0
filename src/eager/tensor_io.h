// Tensor helpers for tests and the `stax` CLI: deterministic random tensors, JSON conversion
// (nested lists) and torch.allclose-style comparison.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/tensor.h"

namespace stax::eager {

// A contiguous tensor of deterministic pseudo-random values (the same on every platform for a
// given seed): floats uniform in [-1, 1) (rounded to the dtype), signed integers uniform in
// [-10, 10], u8 in [0, 20], bool true/false with equal probability.
Tensor random_tensor(DType dtype, const std::vector<int64_t>& sizes, uint64_t seed);
// The same logical values as random_tensor(dtype, sizes, seed), laid out with `strides`
// (storage gaps are zero).
Tensor random_tensor_strided(DType dtype, const std::vector<int64_t>& sizes,
                             const std::vector<int64_t>& strides, uint64_t seed);

// Nested lists in row-major order (a 0-dim tensor is a bare value). Floats are numbers except
// NaN and infinities, written as the strings "nan", "inf" and "-inf"; integers are exact; bool
// is true/false.
nlohmann::json tensor_to_json(const Tensor& tensor);
// The inverse of tensor_to_json: a contiguous tensor of `dtype` and `sizes`. Accepts numbers,
// true/false and the strings "nan", "inf", "+inf", "-inf" (floats only). Integers must be
// integral and in range for the dtype. Errors throw std::invalid_argument naming the input
// (`name`), the position ([i, j, ...]) and, for list lengths, the dimension.
Tensor tensor_from_json(const nlohmann::json& json, DType dtype, const std::vector<int64_t>& sizes,
                        const std::string& name);

struct Difference {
  double max_abs = 0.0;  // largest |actual - expected| (inf where exactly one side is NaN)
  double max_rel = 0.0;  // largest |actual - expected| / |expected| (inf for x vs 0, x != 0)
  bool within_tolerance = true;
};
// Element-wise comparison with torch.allclose semantics: |a - e| <= atol + rtol * |e|, with NaN
// equal to NaN and an infinity equal to the same-signed infinity (both count as difference 0).
// Different sizes give within_tolerance = false and infinite differences. Dtypes may differ.
Difference compare(const Tensor& actual, const Tensor& expected, double rtol, double atol);

}  // namespace stax::eager
