// The one header included by Stax-generated kernels: the kernel-header API of
// docs/kernel_header_api.md (element types, stax::Vec<T, N>, conversions, every op as
// stax::op_<name>, reductions, data movement, error checks), plus the C ABI of
// stax_kernel_abi.h, scratch memory kept across calls (stax_kernel_scratch.h) and the names
// of the pre-kernel-IR generator (stax_kernel_legacy.h).
// The SIMD level is chosen by a macro (set by the JIT through simd_compiler_flags):
// STAX_SIMD_AVX512, STAX_SIMD_AVX2, or neither for scalar kernels.
// Keep it lean: kernels are compiled at run time and every include costs compile time (no
// <cmath>, <limits>, <type_traits>: the headers use compiler builtins).
#ifndef STAX_KERNEL_H_
#define STAX_KERNEL_H_

#include <cstdint>
#include <cstring>

#include "stax_kernel_abi.h"
#include "stax_kernel_scratch.h"
#include "stax_kernel_trace.h"

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

#if defined(STAX_SIMD_AVX512) || defined(STAX_SIMD_AVX2)
#include <immintrin.h>
#endif

// GCC 12's AVX-512 intrinsics read an "undefined" register they never initialize
// (_mm512_undefined_*), which -Wuninitialized reports in user code that inlines them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "stax_kernel_half.h"
#include "stax_kernel_reg_generic.h"
#if defined(STAX_SIMD_AVX512) || defined(STAX_SIMD_AVX2)
#include "stax_kernel_reg_avx2.h"
#endif
#if defined(STAX_SIMD_AVX512)
#include "stax_kernel_reg_avx512.h"
#endif
#include "stax_kernel_data.h"
#if defined(STAX_SIMD_AVX512) || defined(STAX_SIMD_AVX2)
#include "stax_kernel_transpose.h"
#endif
#include "stax_kernel_legacy.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include "stax_kernel_reduce.h"
#include "stax_kernel_vec.h"
#include "stax_kernel_vec_ops.h"

#endif  // STAX_KERNEL_H_
