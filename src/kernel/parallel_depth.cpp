// Algorithm 8.1 of Section 8.4.
#include "kernel/parallel_depth.h"

namespace stax::kernel {

int parallel_depth(const std::vector<int64_t>& ranges, int threads, size_t max_depth,
                   int64_t min_chunk) {
  int64_t seq = 1;
  for (int64_t r : ranges) seq *= r;
  int64_t par = 1;
  int depth = 0;
  const int64_t p = threads;
  for (int64_t r : ranges) {
    if (static_cast<size_t>(depth) >= max_depth) break;
    if (par >= 2 * p || par == p) break;  // enough parallel units
    if (seq / p < min_chunk) break;       // too little work per thread
    ++depth;
    par *= r;
    seq = r == 0 ? 0 : seq / r;
  }
  return depth;
}

}  // namespace stax::kernel
