// Scalar element conversions stax::convert<U>(x) between every pair of element types, with
// PyTorch's results on x86 (docs/kernel_header_api.md, "Conversions"): floating -> int64
// truncates and gives 0x8000000000000000 for NaN / out of range (cvttss2si); floating -> the
// narrower integers goes through int32 (cvttss2si, INT32_MIN when out of range) and wraps;
// -> bool is `!= 0` (NaN is true); integer -> integer wraps; Half/BFloat16 go through float.
// Included by stax_kernel.h; not meant to be included directly.
#pragma once

#include <cstdint>

#include "stax_kernel_half.h"
#include "stax_kernel_traits.h"

namespace stax {

namespace detail {

// cvttsd2si semantics: truncation, the "integer indefinite" MIN for NaN and out of range.
template <class I, class F>
inline I float_to_int_x86(F x) {
  // 2^(bits-1) is exact in float and double; the valid range is [-2^(bits-1), 2^(bits-1)).
  constexpr F limit = static_cast<F>(static_cast<double>(uint64_t{1} << (kBits<I> - 1)));
  if (!(x >= -limit && x < limit)) return min_value<I>();
  return static_cast<I>(x);
}

template <class U, class T>
inline U convert_scalar(T x) {
  if constexpr (kSame<U, T>) {
    return x;
  } else if constexpr (kIsStorage16<T>) {
    return convert_scalar<U>(static_cast<float>(x));
  } else if constexpr (kIsStorage16<U>) {
    return U(convert_scalar<float>(x));
  } else if constexpr (kIsBool<U>) {
    return x != T(0);
  } else if constexpr (kIsBool<T>) {
    return static_cast<U>(x ? 1 : 0);
  } else if constexpr (kIsFloat<T> && kIsInt<U>) {
    if constexpr (kSame<U, int64_t>) {
      return float_to_int_x86<int64_t>(x);
    } else {
      return static_cast<U>(static_cast<uint32_t>(float_to_int_x86<int32_t>(x)));
    }
  } else if constexpr (kIsInt<T> && kIsInt<U>) {
    return static_cast<U>(static_cast<Unsigned<U>>(x));
  } else {
    return static_cast<U>(x);
  }
}

}  // namespace detail

// Scalar conversion; the vector form (Vec<T, N> -> Vec<U, N>) is in stax_kernel_vec.h.
template <class U, class T>
inline detail::Element<T, detail::Element<U>> convert(T x) {
  return detail::convert_scalar<U>(x);
}

}  // namespace stax
