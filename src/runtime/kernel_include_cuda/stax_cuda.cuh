// The one header generated CUDA kernels include (the CUDA counterpart of the CPU's
// src/runtime/kernel_include/stax_kernel.h; design notes gpu-backend.md §4.4).
//
// These headers compile under NVRTC with no include directories (--std=c++17 -default-device
// --gpu-architecture=sm_80 or later), so they include nothing but each other: no toolkit
// header, no standard library. They use only what NVRTC provides built in: the CUDA math
// library (expf, erff, ...), the conversion intrinsics (__float2ll_rz, ...), __shfl_xor_sync,
// __syncthreads, threadIdx / blockDim, and inline PTX. Everything is in namespace stax.
//
// What is here (the names the CUDA printer may call):
//  stax_cuda_types.cuh    element types and 16-bit storage
//    stax::i8, i16, i32, i64, u8          signed char, short, int, long long, unsigned char
//    stax::bf16, stax::f16                structs of `unsigned short bits`, no arithmetic
//    stax::to_float(bf16 | f16) -> float                 exact
//    stax::from_float<bf16 | f16>(float)                 nearest even, NaN stays NaN
//    stax::load_float(const bf16* | const f16*) -> float
//    stax::store_float(bf16* | f16*, float)
//  stax_cuda_ops.cuh      stax::op_<name>(args...) for every PointwiseOp (name = op_info's):
//    add sub mul div truncdiv floordiv remainder fmod pow neg abs sign reciprocal maximum
//    minimum fmax fmin atan2 hypot copysign bitwise_and bitwise_or bitwise_xor bitwise_not
//    shift_left shift_right logical_and logical_or logical_xor logical_not eq ne lt le gt ge
//    exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh
//    asinh acosh atanh erf erfc erfinv sigmoid relu floor ceil round trunc isnan isinf where
//    with PyTorch's CUDA semantics; comparisons, logical ops, isnan and isinf return bool;
//    op_where(bool c, T a, T b). Integer division by zero returns 0 (no error word yet).
//  stax_cuda_convert.cuh  stax::convert<To>(From x) between every pair of element types,
//    with eager CUDA's results (float -> int truncates and saturates, NaN -> 0; -> bool is
//    != 0; integers wrap).
//  stax_cuda_reduce.cuh   stax::combine_sum / combine_prod / combine_max / combine_min (max and
//    min NaN-propagating, as torch.amax / amin);
//    stax::warp_allreduce_{sum,prod,max,min}(T v, int width): butterfly over aligned groups
//    of `width` lanes (power of two <= 32), every lane gets the result;
//    stax::block_allreduce_{sum,prod,max,min}(T v, T* scratch): scratch a __shared__ T[32],
//    blockDim.x a multiple of 32 up to 1024, every thread gets the result.
//    Both use one fixed combination order, so results repeat run to run. A warp all-reduce
//    names only the caller's group of `width` lanes, so the rows of one warp may end apart.
//  stax_cuda_index.cuh    stax_floordiv / stax_mod (unqualified, Python semantics), which the
//    index printer uses where a dividend may be negative.
// The macro STAX_DEVICE (__device__ __forceinline__) is defined for these headers.
#pragma once

#include "stax_cuda_convert.cuh"
#include "stax_cuda_index.cuh"
#include "stax_cuda_ops.cuh"
#include "stax_cuda_reduce.cuh"
#include "stax_cuda_types.cuh"
