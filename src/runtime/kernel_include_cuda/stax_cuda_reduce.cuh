// Reductions of generated CUDA kernels: the combine functions of sum / prod / max / min, and
// their all-reduce across the lanes of a warp (__shfl_xor_sync) and across a block (through
// a __shared__ scratch array of 32 values).
//
// Why a header of its own: the thread_combine pass (gpu-backend.md §4.3, pass 6) needs one
// fixed combination tree, so that a reduction gives the same bits run to run and every
// participating lane ends with the same bits. The tree here is the pairwise one in lane
// order: step s combines aligned groups of 2^s lanes, the lower group always the left
// operand, so both partners of a shuffle compute combine(lower, upper) and agree even when
// combine is not commutative bit for bit (NaN payloads, max(+0, -0)). Across warps, warp 0
// combines the per-warp values with the same tree in warp order.
//
// Callers: every lane of the caller's aligned group of `width` lanes must call a warp
// all-reduce (the shuffles name that group only, so the groups of one warp, each a row of
// its own, may run different numbers of rows), and every thread of the block a block
// all-reduce; lanes without data pass the identity of the combine (sum 0, prod 1, max -inf /
// the type's minimum, min +inf / its maximum).
// Included by stax_cuda.cuh; not meant to be included directly.
#pragma once

#include "stax_cuda_ops.cuh"
#include "stax_cuda_types.cuh"

namespace stax {

// ---- Combine functions: the accumulator update of each reduction ----
// Sum and product in the value's type; integers wrap.
template <class T>
STAX_DEVICE detail::Scalar<T> combine_sum(T a, T b) {
  if constexpr (detail::kIsBool<T>) {
    return a || b;
  } else {
    return op_add(a, b);
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T> combine_prod(T a, T b) {
  if constexpr (detail::kIsBool<T>) {
    return a && b;
  } else {
    return op_mul(a, b);
  }
}
// NaN-propagating, as torch.amax / amin on CUDA (ATen's MaxNanFunctor / MinNanFunctor:
// (isnan(a) || a > b) ? a : b): the first NaN operand wins; on equal values (+0 and -0), b.
// On bool: or / and.
template <class T>
STAX_DEVICE detail::Scalar<T> combine_max(T a, T b) {
  if constexpr (detail::kIsBool<T>) {
    return a || b;
  } else {
    return (op_isnan(a) || a > b) ? a : b;
  }
}
template <class T>
STAX_DEVICE detail::Scalar<T> combine_min(T a, T b) {
  if constexpr (detail::kIsBool<T>) {
    return a && b;
  } else {
    return (op_isnan(a) || a < b) ? a : b;
  }
}

namespace detail {

// __shfl_xor_sync of any value type: 32-bit and 64-bit types through the builtin overloads
// (int, unsigned, long long, float, double), the narrow ones widened to int.
template <class T>
STAX_DEVICE T shfl_xor(unsigned int group, T v, int lane_mask, int width) {
  if constexpr (kSame<T, i64> || kSame<T, i32> || kSame<T, float> || kSame<T, double>) {
    return __shfl_xor_sync(group, v, lane_mask, width);
  } else {
    return static_cast<T>(__shfl_xor_sync(group, static_cast<int>(v), lane_mask, width));
  }
}

// This thread's lane in its warp (%laneid: right for any block shape).
STAX_DEVICE int lane_id() {
  unsigned int lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return static_cast<int>(lane);
}

// Which combine a reduction uses.
enum class Combine { Sum, Prod, Max, Min };

template <Combine C, class T>
STAX_DEVICE T combine(T a, T b) {
  if constexpr (C == Combine::Sum) {
    return combine_sum(a, b);
  } else if constexpr (C == Combine::Prod) {
    return combine_prod(a, b);
  } else if constexpr (C == Combine::Max) {
    return combine_max(a, b);
  } else {
    return combine_min(a, b);
  }
}

// The butterfly over aligned groups of `width` lanes (a power of two, 1 to 32): steps 1, 2,
// 4, ..., width / 2, each combining the lower half of a group (left) with the upper half.
template <Combine C, class T>
STAX_DEVICE T warp_allreduce(T v, int width) {
  const int lane = lane_id();
  // The lanes of this aligned group of `width`.
  const unsigned int group =
      width >= 32 ? 0xffffffffu : ((1u << width) - 1u) << (lane & ~(width - 1));
  for (int step = 1; step < width; step <<= 1) {
    const T other = shfl_xor(group, v, step, width);
    v = (lane & step) ? combine<C>(other, v) : combine<C>(v, other);
  }
  return v;
}

// The block all-reduce: warps reduce, lane 0 of each writes scratch[warp]; warp 0 reduces the
// per-warp values in warp order (the butterfly over 32 lanes, lanes past the last warp
// holding nothing: a group whose upper half holds nothing keeps its lower half) and writes
// scratch[0]; every thread reads it. A one-dimensional block, blockDim.x a multiple of 32 up
// to 1024. Three __syncthreads; the last one lets the caller reuse scratch right away.
template <Combine C, class T>
STAX_DEVICE T block_allreduce(T v, T* scratch) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int warps = static_cast<int>(blockDim.x) >> 5;
  v = warp_allreduce<C>(v, 32);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? scratch[lane] : scratch[0];
    for (int step = 1; step < 32; step <<= 1) {
      const T other = shfl_xor(0xffffffffu, w, step, 32);
      // The upper half of this step's group starts at the group's base + step.
      const bool upper_present = ((lane & ~(2 * step - 1)) + step) < warps;
      if (upper_present) {
        w = (lane & step) ? combine<C>(other, w) : combine<C>(w, other);
      } else if (lane & step) {
        // The group is its lower half alone: a lower lane keeps w, an upper lane (holding
        // nothing) takes the lower half's value.
        w = other;
      }
    }
    if (lane == 0) scratch[0] = w;
  }
  __syncthreads();
  const T result = scratch[0];
  __syncthreads();
  return result;
}

}  // namespace detail

// ---- Warp all-reduce: every lane of each aligned group of `width` lanes gets the group's
// combination (width a power of two <= 32; all 32 lanes call) ----
template <class T>
STAX_DEVICE detail::Scalar<T> warp_allreduce_sum(T v, int width) {
  return detail::warp_allreduce<detail::Combine::Sum>(v, width);
}
template <class T>
STAX_DEVICE detail::Scalar<T> warp_allreduce_prod(T v, int width) {
  return detail::warp_allreduce<detail::Combine::Prod>(v, width);
}
template <class T>
STAX_DEVICE detail::Scalar<T> warp_allreduce_max(T v, int width) {
  return detail::warp_allreduce<detail::Combine::Max>(v, width);
}
template <class T>
STAX_DEVICE detail::Scalar<T> warp_allreduce_min(T v, int width) {
  return detail::warp_allreduce<detail::Combine::Min>(v, width);
}

// ---- Block all-reduce: every thread gets the block's combination. scratch is a __shared__
// array of 32 T owned by the caller; blockDim.x a multiple of 32 up to 1024 ----
template <class T>
STAX_DEVICE detail::Scalar<T> block_allreduce_sum(T v, T* scratch) {
  return detail::block_allreduce<detail::Combine::Sum>(v, scratch);
}
template <class T>
STAX_DEVICE detail::Scalar<T> block_allreduce_prod(T v, T* scratch) {
  return detail::block_allreduce<detail::Combine::Prod>(v, scratch);
}
template <class T>
STAX_DEVICE detail::Scalar<T> block_allreduce_max(T v, T* scratch) {
  return detail::block_allreduce<detail::Combine::Max>(v, scratch);
}
template <class T>
STAX_DEVICE detail::Scalar<T> block_allreduce_min(T v, T* scratch) {
  return detail::block_allreduce<detail::Combine::Min>(v, scratch);
}

}  // namespace stax
