// bfloat16 <-> float32 conversions over strided layouts (widening.h), and the names of
// arithmetic.h. The loops visit the layout in memory order (the smallest stride innermost), so
// that a transposed operand is read and written row by row of its storage, in parallel over
// the outer dimensions.
#include "external/widening.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "external/arithmetic.h"
#include "external/host_loops.h"

namespace stax::external {

const char* arithmetic_name(Arithmetic arithmetic) {
  switch (arithmetic) {
    case Arithmetic::Native:
      return "native";
    case Arithmetic::ThroughFloat32:
      return "through float32";
  }
  return "";
}

namespace detail {

namespace {

// Below this many elements a conversion runs on the calling thread: a parallel region costs
// more than it saves.
constexpr int64_t kParallelElements = 1 << 15;

// Calls body(offset) once for every offset the layout addresses.
template <class Body>
void for_each_offset(std::span<const int64_t> sizes, std::span<const int64_t> strides, int threads,
                     Body body) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size), outermost first
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return;
    // A broadcast dimension addresses the same elements at every index: visited once.
    if (sizes[d] > 1 && strides[d] != 0) dims.emplace_back(strides[d], sizes[d]);
  }
  std::sort(dims.begin(), dims.end(), [](const auto& x, const auto& y) { return x > y; });
  if (dims.empty()) dims.emplace_back(1, 1);
  const auto [inner_stride, inner] = dims.back();
  dims.pop_back();
  int64_t outer = 1;
  for (const auto& [stride, size] : dims) outer *= size;
  auto row = [&](int64_t index) {
    int64_t offset = 0;
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
      offset += index % it->second * it->first;
      index /= it->second;
    }
    for (int64_t j = 0; j < inner; ++j) body(offset + j * inner_stride);
  };
  if (threads <= 1 || outer == 1 || outer * inner < kParallelElements) {
    for (int64_t i = 0; i < outer; ++i) row(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < outer; ++i) row(i);
}

}  // namespace

int64_t strided_extent(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  int64_t last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    last += (sizes[d] - 1) * strides[d];
  }
  return last + 1;
}

void widen_bf16(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                const uint16_t* from, float* to, int threads) {
  for_each_offset(sizes, strides, threads, [&](int64_t o) { to[o] = bf16_to_float(from[o]); });
}

void narrow_to_bf16(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                    const float* from, uint16_t* to, int threads) {
  for_each_offset(sizes, strides, threads, [&](int64_t o) { to[o] = float_to_bf16(from[o]); });
}

std::pair<int64_t, int64_t> dense_strides(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const bool by_columns = rs == 1 && cs > 1 && rows > 1;
  return by_columns ? std::pair{int64_t{1}, rows} : std::pair{cols, int64_t{1}};
}

void widen_matrix(int64_t rows, int64_t cols, const uint16_t* from, int64_t rs, int64_t cs,
                  float* to) {
  const auto [to_rs, to_cs] = dense_strides(rows, cols, rs, cs);
  const bool by_columns = to_rs == 1 && to_cs > 1;
  const int64_t outer = by_columns ? cols : rows, inner = by_columns ? rows : cols;
  const int64_t outer_from = by_columns ? cs : rs, inner_from = by_columns ? rs : cs;
  for (int64_t i = 0; i < outer; ++i) {
    const uint16_t* src = from + i * outer_from;
    float* dst = to + i * inner;
    for (int64_t j = 0; j < inner; ++j) dst[j] = bf16_to_float(src[j * inner_from]);
  }
}

}  // namespace detail
}  // namespace stax::external
