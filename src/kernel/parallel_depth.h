// Algorithm 8.1: how many loop levels, from the outermost, an OpenMP loop spans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stax::kernel {

constexpr int64_t kMinParallelChunk = 512;

// `ranges`: extents of the loops from outer to inner (all of them, for the total work);
// `threads`: P; `max_depth`: how many leading loops may be parallel at all.
int parallel_depth(const std::vector<int64_t>& ranges, int threads, size_t max_depth,
                   int64_t min_chunk = kMinParallelChunk);

}  // namespace stax::kernel
