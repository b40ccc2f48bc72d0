// Values of an operand domain (op_catalog.h) for a dtype: deterministic pseudo-random
// elements, and tensors of any layout filled with them.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "fuzz/op_catalog.h"
#include "runtime/tensor.h"

namespace stax::fuzz {

// One element of `domain` for `dtype`, exactly representable in the dtype (floats are
// rounded to it by the tensor that stores them).
double domain_value(Domain domain, DType dtype, std::mt19937_64& rng);

// A tensor of `sizes` laid out with `strides` (storage gaps zero; positions sharing an
// address hold the value written last) filled with values of `domain`.
Tensor domain_tensor(Domain domain, DType dtype, const std::vector<int64_t>& sizes,
                     const std::vector<int64_t>& strides, uint64_t seed);

// An int64 tensor (contiguous) of values uniform in [0, bound).
Tensor index_tensor(const std::vector<int64_t>& sizes, int64_t bound, uint64_t seed);

}  // namespace stax::fuzz
