// Tensor helpers for tests and the `stax` CLI: deterministic random tensors, JSON conversion
// (nested lists) and torch.allclose-style comparison. Broadcast dimensions (stride 0) hold one
// value along them, so random filling and comparison visit each distinct element once, not
// every logical position of an expanded view.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/tensor.h"

namespace stax::eager {

// A contiguous tensor of deterministic pseudo-random values (the same on every platform for a
// given seed): floats uniform in [float_low, float_high) (rounded to the dtype), signed
// integers uniform in [-10, 10], u8 in [0, 20], bool true/false with equal probability.
Tensor random_tensor(DType dtype, const std::vector<int64_t>& sizes, uint64_t seed,
                     double float_low = -1.0, double float_high = 1.0);
// The same logical values as random_tensor(dtype, sizes, seed, ...), laid out with `strides`
// (storage gaps are zero). A dimension of stride 0 holds one value along it: the values are
// those of random_tensor with that dimension's size taken as 1, broadcast (so the work is one
// draw per distinct element, however large the broadcast).
Tensor random_tensor_strided(DType dtype, const std::vector<int64_t>& sizes,
                             const std::vector<int64_t>& strides, uint64_t seed,
                             double float_low = -1.0, double float_high = 1.0);

// The most elements write_tensor_json writes: JSON is for looking at results, and a bigger
// tensor (at least a gigabyte of text, minutes of writing) is refused rather than attempted.
constexpr int64_t kMaxJsonElements = 100'000'000;

// Nested lists in row-major order (a 0-dim tensor is a bare value). Floats are numbers except
// NaN and infinities, written as the strings "nan", "inf" and "-inf"; integers are exact; bool
// is true/false. Written straight to `out` (no JSON tree is built); stops at the first failed
// write, leaving the stream's state to the caller. A tensor of more than kMaxJsonElements
// elements throws std::length_error before anything is written.
void write_tensor_json(std::ostream& out, const Tensor& tensor);
// The same nested lists as a JSON value.
nlohmann::json tensor_to_json(const Tensor& tensor);
// The inverse of tensor_to_json: a contiguous tensor of `dtype` and `sizes`. Accepts numbers,
// true/false and the strings "nan", "inf", "+inf", "-inf" (floats only). Integers must be
// integral and in range for the dtype; a finite number must be finite in the dtype (1e39 is
// out of range for f32; write "inf" for an infinity). Errors throw std::invalid_argument
// naming the input (`name`), the position ([i, j, ...]) and, for list lengths, the dimension;
// a wrong value is described by a bounded prefix of its JSON.
Tensor tensor_from_json(const nlohmann::json& json, DType dtype, const std::vector<int64_t>& sizes,
                        const std::string& name);
// The same values laid out with `strides`. Strides that store several positions at one address
// (stride 0, overlapping dims) need equal values there: different ones throw
// std::invalid_argument naming the position whose value would be lost.
Tensor tensor_from_json(const nlohmann::json& json, DType dtype, const std::vector<int64_t>& sizes,
                        const std::vector<int64_t>& strides, const std::string& name);

struct Difference {
  double max_abs = 0.0;  // largest |actual - expected| (inf where exactly one side is NaN)
  double max_rel = 0.0;  // largest |actual - expected| / |expected| (inf for x vs 0, x != 0)
  bool within_tolerance = true;
};
// Element-wise comparison with torch.allclose semantics: |a - e| <= atol + rtol * |e|, with NaN
// equal to NaN and an infinity equal to the same-signed infinity (both count as difference 0).
// Different sizes give within_tolerance = false and infinite differences. Dtypes may differ.
// Dimensions of stride 0 in both tensors are compared at index 0 only (every element along
// them is the same), so comparing two expanded views costs their distinct elements.
Difference compare(const Tensor& actual, const Tensor& expected, double rtol, double atol);

}  // namespace stax::eager
