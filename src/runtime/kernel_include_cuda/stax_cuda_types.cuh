// Element types of generated CUDA kernels and the traits the other CUDA headers dispatch on.
//
// Why a header of its own: NVRTC compiles generated kernels with no include directories, so
// <cstdint>, <type_traits>, <cuda_bf16.h> and <cuda_fp16.h> are out of reach (design notes
// gpu-backend.md §4.4). This file gives the fixed-width integer names, minimal traits, and the
// 16-bit float storage types bf16 / f16 with their conversions to and from float, written with
// NVRTC's builtins and inline PTX only. It includes nothing.
//
// bf16 and f16 are storage only (no arithmetic): lowering computes 16-bit dtypes in float and
// rounds back after every ATen op, as eager does (src/lowering/ops_handler.h).
// Included by stax_cuda.cuh; not meant to be included directly.
#pragma once

#define STAX_DEVICE __device__ __forceinline__

namespace stax {

typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;

// bfloat16: the upper half of a binary32. No constructors, so it is an aggregate and trivially
// copyable (it may live in __shared__ arrays and kernel parameters).
struct bf16 {
  unsigned short bits;
};
// IEEE binary16.
struct f16 {
  unsigned short bits;
};
static_assert(sizeof(bf16) == 2 && sizeof(f16) == 2, "16-bit storage types");

namespace detail {

template <class A, class B>
inline constexpr bool kSame = false;
template <class A>
inline constexpr bool kSame<A, A> = true;

template <class T>
inline constexpr bool kIsFloat = kSame<T, float> || kSame<T, double>;
template <class T>
inline constexpr bool kIsBool = kSame<T, bool>;
template <class T>
inline constexpr bool kIsInt =
    kSame<T, i8> || kSame<T, u8> || kSame<T, i16> || kSame<T, i32> || kSame<T, i64>;
template <class T>
inline constexpr bool kIsSigned = !kSame<T, u8> && !kSame<T, bool>;
template <class T>
inline constexpr bool kIsStorage16 = kSame<T, bf16> || kSame<T, f16>;
// Always false, for static_asserts in templates that must not be instantiated.
template <class T>
inline constexpr bool kNever = false;

// SFINAE gate of the op overloads: the value element types (bool, the five integer types,
// float, double). Scalar<T, R> is R for those and ill-formed otherwise, so a call with bf16,
// f16 or a mixed / unsupported type fails to compile instead of converting silently.
template <class T, class R>
struct ScalarOnly {};
#define STAX_CUDA_SCALAR_TYPE(T) \
  template <class R>             \
  struct ScalarOnly<T, R> {      \
    using type = R;              \
  };
STAX_CUDA_SCALAR_TYPE(bool)
STAX_CUDA_SCALAR_TYPE(i8)
STAX_CUDA_SCALAR_TYPE(u8)
STAX_CUDA_SCALAR_TYPE(i16)
STAX_CUDA_SCALAR_TYPE(i32)
STAX_CUDA_SCALAR_TYPE(i64)
STAX_CUDA_SCALAR_TYPE(float)
STAX_CUDA_SCALAR_TYPE(double)
#undef STAX_CUDA_SCALAR_TYPE
template <class T, class R = T>
using Scalar = typename ScalarOnly<T, R>::type;

// The unsigned twin of an integer type (bool and floats map to themselves).
template <class T>
struct UnsignedOf {
  using type = T;
};
template <>
struct UnsignedOf<i8> {
  using type = unsigned char;
};
template <>
struct UnsignedOf<i16> {
  using type = unsigned short;
};
template <>
struct UnsignedOf<i32> {
  using type = unsigned int;
};
template <>
struct UnsignedOf<i64> {
  using type = unsigned long long;
};
template <class T>
using Unsigned = typename UnsignedOf<T>::type;

template <class T>
inline constexpr int kBits = static_cast<int>(sizeof(T) * 8);

// +inf of a floating type.
template <class T>
STAX_DEVICE T infinity() {
  if constexpr (kSame<T, float>) {
    return __int_as_float(0x7f800000);
  } else {
    return __longlong_as_double(0x7ff0000000000000LL);
  }
}

// The smallest and largest values of a value type (floats: -inf and +inf).
template <class T>
STAX_DEVICE T min_value() {
  if constexpr (kIsFloat<T>) {
    return -infinity<T>();
  } else if constexpr (kIsBool<T>) {
    return false;
  } else if constexpr (kIsSigned<T>) {
    return static_cast<T>(static_cast<Unsigned<T>>(static_cast<Unsigned<T>>(1) << (kBits<T> - 1)));
  } else {
    return T(0);
  }
}
template <class T>
STAX_DEVICE T max_value() {
  if constexpr (kIsFloat<T>) {
    return infinity<T>();
  } else if constexpr (kIsBool<T>) {
    return true;
  } else {
    return static_cast<T>(~static_cast<Unsigned<T>>(min_value<T>()));
  }
}

}  // namespace detail

// ---- 16-bit floats <-> float ----

// Exact: a bfloat16 is the upper half of a binary32.
STAX_DEVICE float to_float(bf16 x) {
  return __uint_as_float(static_cast<unsigned int>(x.bits) << 16);
}
// Exact (subnormals, inf and NaN included): the hardware conversion.
STAX_DEVICE float to_float(f16 x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}

// float -> 16-bit, rounded to nearest even; NaN stays NaN, overflow gives inf. The same
// instructions as __float2bfloat16 / __float2half (cvt.rn.bf16.f32 needs sm_80).
template <class S>
STAX_DEVICE S from_float(float x) {
  static_assert(detail::kNever<S>, "stax::from_float<S>: S is bf16 or f16");
  return S{};
}
template <>
STAX_DEVICE bf16 from_float<bf16>(float x) {
  bf16 r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
  return r;
}
template <>
STAX_DEVICE f16 from_float<f16>(float x) {
  f16 r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
  return r;
}

// Loads and stores of 16-bit tensors, computed in float. The printer reads and writes the
// other element types directly (p[i]).
STAX_DEVICE float load_float(const bf16* p) {
  return to_float(*p);
}
STAX_DEVICE float load_float(const f16* p) {
  return to_float(*p);
}
STAX_DEVICE void store_float(bf16* p, float v) {
  *p = from_float<bf16>(v);
}
STAX_DEVICE void store_float(f16* p, float v) {
  *p = from_float<f16>(v);
}

}  // namespace stax
