// The conversions of plans that compute bfloat16 through float32 (arithmetic.h): bfloat16
// operands widened to float32, float32 results narrowed to bfloat16, element by element over a
// strided layout, each element at the same offset in both buffers (the float32 buffer spans
// the layout's extent), so that the float32 plan reads and writes the layouts the bfloat16 one
// was asked for. Internal to src/external.
#pragma once

#include <cstdint>
#include <span>
#include <utility>

namespace stax::external::detail {

// Elements from offset 0 to the last one a layout addresses (0 when it has none): what a
// buffer holding the layout spans.
int64_t strided_extent(std::span<const int64_t> sizes, std::span<const int64_t> strides);

// to[o] = float(from[o]) for every offset o the layout addresses (exact). Elements addressed
// twice (stride 0: broadcast) are converted once. `threads` > 1 converts on that many threads
// of the process's OpenMP runtime; 1 converts on the calling thread without a parallel region
// (inside another one).
void widen_bf16(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                const uint16_t* from, float* to, int threads);

// to[o] = from[o] rounded to the nearest bfloat16, ties to even (NaN stays NaN), for every
// offset o the layout addresses: the one rounding of a bfloat16 result.
void narrow_to_bf16(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                    const float* from, uint16_t* to, int threads);

// The strides {rs, cs} of a dense copy of a rows x cols matrix stored with strides rs, cs, in
// the same orientation: row-major (rows `cols` apart) unless it is stored by columns (rs == 1,
// cs > 1), then column-major (columns `rows` apart), so that the copy is read and written in
// storage order.
std::pair<int64_t, int64_t> dense_strides(int64_t rows, int64_t cols, int64_t rs, int64_t cs);

// The bfloat16 matrix widened into a dense float32 copy with dense_strides(rows, cols, rs, cs),
// on the calling thread.
void widen_matrix(int64_t rows, int64_t cols, const uint16_t* from, int64_t rs, int64_t cs,
                  float* to);

}  // namespace stax::external::detail
