// Element conversions of generated CUDA kernels: stax::convert<To>(x) between every pair of
// element types (bool, i8, u8, i16, i32, i64, float, double, and bf16 / f16 through float).
//
// Why a header of its own: a C++ static_cast from floating to integer is undefined when the
// value is out of range or NaN, and PyTorch's CUDA results for those are whatever NVVM emits
// for its casts (c10::static_cast_with_inter_type). This file names those instructions
// explicitly, so the results are defined and equal eager CUDA's:
//  * floating -> i64: cvt.rzi.s64 (__float2ll_rz / __double2ll_rz): truncation toward zero,
//    saturating to [INT64_MIN, INT64_MAX], NaN -> 0;
//  * floating -> i32 / i16 / i8: cvt.rzi.s32 (saturating to the int32 range, NaN -> 0), then
//    wrapped to the narrow type (what nvcc emits for static_cast<short>(float));
//  * floating -> u8: through i64 (c10 routes float -> uint8 via int64), then wrapped;
//  * anything -> bool: x != 0 (NaN is true); bool -> number: 0 / 1;
//  * integer -> integer: wraps (two's complement);
//  * integer -> floating and double -> float: rounded to nearest even (C++ conversions);
//  * -> bf16 / f16: through float, then rounded to nearest even (from_float); bf16 / f16 ->:
//    widened to float exactly, then converted (double -> bf16 rounds twice, as c10 does).
// (The CPU header stax_kernel_convert.h gives x86's results instead: INT64_MIN for NaN and out
// of range.)
// Included by stax_cuda.cuh; not meant to be included directly.
#pragma once

#include "stax_cuda_types.cuh"

namespace stax {

namespace detail {

template <class T>
inline constexpr bool kIsElement = kIsBool<T> || kIsInt<T> || kIsFloat<T> || kIsStorage16<T>;

// Floating (float or double) to integer, truncating, with eager CUDA's results.
template <class To, class F>
STAX_DEVICE To float_to_int(F x) {
  if constexpr (kSame<To, i64>) {
    if constexpr (kSame<F, float>) {
      return __float2ll_rz(x);
    } else {
      return __double2ll_rz(x);
    }
  } else if constexpr (kSame<To, u8>) {
    return static_cast<u8>(static_cast<unsigned long long>(float_to_int<i64>(x)));
  } else {
    i32 r;
    if constexpr (kSame<F, float>) {
      r = __float2int_rz(x);
    } else {
      r = __double2int_rz(x);
    }
    return static_cast<To>(static_cast<Unsigned<To>>(static_cast<unsigned int>(r)));
  }
}

template <class To, class From>
STAX_DEVICE To convert_element(From x) {
  if constexpr (kSame<To, From>) {
    return x;
  } else if constexpr (kIsStorage16<From>) {
    return convert_element<To>(to_float(x));
  } else if constexpr (kIsStorage16<To>) {
    return from_float<To>(convert_element<float>(x));
  } else if constexpr (kIsBool<To>) {
    return x != From(0);
  } else if constexpr (kIsBool<From>) {
    return x ? To(1) : To(0);
  } else if constexpr (kIsFloat<From> && kIsInt<To>) {
    return float_to_int<To>(x);
  } else if constexpr (kIsInt<From> && kIsInt<To>) {
    return static_cast<To>(static_cast<Unsigned<To>>(x));
  } else {
    return static_cast<To>(x);  // to floating: rounded to nearest even
  }
}

}  // namespace detail

// x as To. Both types must be element types (otherwise a static_assert fires).
template <class To, class From>
STAX_DEVICE To convert(From x) {
  static_assert(detail::kIsElement<To> && detail::kIsElement<From>,
                "stax::convert: element types are bool, i8, u8, i16, i32, i64, float, double, "
                "bf16, f16");
  return detail::convert_element<To>(x);
}

}  // namespace stax
