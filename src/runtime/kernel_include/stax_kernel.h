// The one header included by Stax-generated kernels. The SIMD level is chosen by a macro
// (set by the JIT through simd_compiler_flags): STAX_SIMD_AVX512, STAX_SIMD_AVX2, or neither
// for scalar kernels. Provides, in namespace stax:
//   Vectorized<float>  W-lane float vector (16 / 8 / 1): loads/stores with masked tails,
//                      arithmetic, math (exp/log/tanh/pow via SLEEF u10), lane reductions;
//   VecMask<float>     W-lane boolean mask: comparisons, where(), logical ops, bool bytes;
//   *_f helpers        scalar twins of the vector math (same semantics);
//   Half, BFloat16     16-bit float storage types;
// plus global-scope stax_floordiv / stax_mod and the C ABI of stax_kernel_abi.h.
// Keep it lean: kernels are compiled at run time and every include costs compile time.
#ifndef STAX_KERNEL_H_
#define STAX_KERNEL_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "stax_kernel_abi.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

// The most threads a kernel's parallel region runs: split reductions keep one partial per
// thread in an array of this size. A larger requested count runs this many (the result does
// not depend on the team size).
#define STAX_MAX_THREADS 1024
static inline int stax_team_size(int requested) {
  return requested < 1 ? 1 : requested > STAX_MAX_THREADS ? STAX_MAX_THREADS : requested;
}

#if defined(STAX_SIMD_AVX512)
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__) || \
    !defined(__AVX512VL__)
#error "STAX_SIMD_AVX512 needs -mavx512f -mavx512bw -mavx512dq -mavx512vl"
#endif
#define STAX_SIMD_WIDTH_F32 16
#elif defined(STAX_SIMD_AVX2)
#if !defined(__AVX2__) || !defined(__FMA__)
#error "STAX_SIMD_AVX2 needs -mavx2 -mfma"
#endif
#define STAX_SIMD_WIDTH_F32 8
#else
#define STAX_SIMD_SCALAR 1
#define STAX_SIMD_WIDTH_F32 1
#endif

#include "stax_kernel_half.h"
#include "stax_kernel_scalar.h"

namespace stax {
template <class T>
struct Vectorized;
template <class T>
struct VecMask;
}  // namespace stax

#if defined(STAX_SIMD_AVX512)
#include "stax_kernel_vec_avx512.h"
#elif defined(STAX_SIMD_AVX2)
#include "stax_kernel_vec_avx2.h"
#else
#include "stax_kernel_vec_scalar.h"
#endif

#include "stax_kernel_vec_common.h"

#endif  // STAX_KERNEL_H_
