// Blocked summation: the choice of the blocked loop and the error bound it gives.
#include "kernel/cascade_blocking.h"

#include <algorithm>

namespace stax::kernel {

std::optional<CascadeBlocking> cascade_blocking(const std::vector<int64_t>& iterations) {
  // Scanning from the innermost loop, the first loop that takes the iterations inside it
  // past one block is strip-mined: the loops inside it make at most one block together.
  int64_t inside = 1;
  for (size_t k = iterations.size(); k-- > 0;) {
    if (iterations[k] == 0) return std::nullopt;
    if (inside * iterations[k] > kCascadeBlock) {
      return CascadeBlocking{k, std::max<int64_t>(1, kCascadeBlock / inside)};
    }
    inside *= iterations[k];
  }
  return std::nullopt;
}

int64_t cascade_error_chain(int64_t length) {
  const int64_t n = std::max<int64_t>(length, 0);
  return std::min(n, kCascadeBlock) + std::min(n, kMaxSumLanes);
}

}  // namespace stax::kernel
