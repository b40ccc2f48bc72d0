// Data movement and error checks of the kernel-header API: transpose_tile (register
// transposes of the blocks stax_kernel_transpose.h lists at the AVX levels, a plain copy
// otherwise),
// stream_fence after streaming stores, and the divisor / index checks any_zero and
// any_out_of_range (docs/kernel_header_api.md, "Data movement", "Errors").
// Included by stax_kernel.h after stax_kernel_vec_ops.h; not meant to be included directly.
#pragma once

#include <cstdint>

#include "stax_kernel_vec_ops.h"

namespace stax {

namespace detail {
// Returns true when the level transposed the tile in registers (stax_kernel_transpose.h).
template <class T, int R, int C>
inline bool transpose_tile_registers(const T*, int64_t, T*, int64_t) {
  return false;
}
}  // namespace detail

// dst[c * dst_row_stride + r] = src[r * src_row_stride + c] for an R x C block.
template <class T, int R, int C>
inline void transpose_tile(const T* src, int64_t src_row_stride, T* dst, int64_t dst_row_stride) {
  if (detail::transpose_tile_registers<T, R, C>(src, src_row_stride, dst, dst_row_stride)) return;
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) dst[c * dst_row_stride + r] = src[r * src_row_stride + c];
  }
}

// Orders a kernel's streaming (non-temporal) stores before its return.
inline void stream_fence() {
#if defined(STAX_SIMD_AVX512) || defined(STAX_SIMD_AVX2)
  _mm_sfence();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

// ---- Error checks ----
template <class T>
inline detail::Scalar<T, bool> any_zero(T x) {
  return x == T(0);
}
template <class T, int N>
inline bool any_zero(const Vec<T, N>& v) {
  return op_eq(v, Vec<T, N>(T(0))).bits != 0;
}
// x outside [lo, hi).
template <class T>
inline detail::Scalar<T, bool> any_out_of_range(T x, int64_t lo, int64_t hi) {
  return static_cast<int64_t>(x) < lo || static_cast<int64_t>(x) >= hi;
}
template <class T, int N>
inline bool any_out_of_range(const Vec<T, N>& v, int64_t lo, int64_t hi) {
  alignas(64) T x[N];
  v.store(x);
  bool out = false;
  for (int l = 0; l < N; ++l) out |= any_out_of_range(x[l], lo, hi);
  return out;
}

}  // namespace stax
