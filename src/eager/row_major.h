// Row-major walks over a tensor's elements, for the oracle's window ops (convolution.cpp,
// pooling.cpp), which compute on flat vectors of a tensor's values whatever its strides.
#pragma once

#include <cstdint>
#include <vector>

#include "eager/ops.h"

namespace stax::eager::detail {

// Every element of `t` in row-major order, read with `load(t, index)`.
template <typename T, typename Load>
std::vector<T> gather(const Tensor& t, Load load) {
  std::vector<T> out;
  const int64_t n = t.numel();
  out.reserve(static_cast<size_t>(n));
  std::vector<int64_t> index(t.dim(), 0);
  for (int64_t p = 0; p < n; ++p) {
    out.push_back(load(t, index));
    for (size_t d = t.dim(); d-- > 0;) {
      if (++index[d] < t.sizes()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

inline std::vector<double> gather_floats(const Tensor& t) {
  return gather<double>(t, [](const Tensor& x, const std::vector<int64_t>& i) { return x.get(i); });
}

// Exact integer values (load_int).
inline std::vector<int64_t> gather_ints(const Tensor& t) {
  return gather<int64_t>(
      t, [](const Tensor& x, const std::vector<int64_t>& i) { return load_int(x, i); });
}

// Calls write(index, p) for every element of the contiguous tensor `t` in row-major order.
template <typename Write>
void write_all(const Tensor& t, Write write) {
  std::vector<int64_t> index(t.dim(), 0);
  for (int64_t p = 0; p < t.numel(); ++p) {
    write(index, p);
    for (size_t d = t.dim(); d-- > 0;) {
      if (++index[d] < t.sizes()[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace stax::eager::detail
