// Minimal type traits for the kernel headers (no <type_traits> / <limits>: every include costs
// compile time in each JIT-compiled kernel): the element types of the kernel-header API, their
// unsigned twins, bit widths and extreme values.
// Included by stax_kernel.h; not meant to be included directly.
#pragma once

#include <cstdint>

namespace stax {

struct Half;
struct BFloat16;

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
inline constexpr bool kIsInt = kSame<T, int8_t> || kSame<T, uint8_t> || kSame<T, int16_t> ||
                               kSame<T, int32_t> || kSame<T, int64_t>;
template <class T>
inline constexpr bool kIsSigned = !kSame<T, uint8_t> && !kSame<T, bool>;
template <class T>
inline constexpr bool kIsStorage16 = kSame<T, Half> || kSame<T, BFloat16>;

// SFINAE gate of the scalar overloads, so a Vec argument never binds to them.
template <class T, class R = T>
struct ScalarOnly {};
#define STAX_SCALAR_TYPE(T) \
  template <class R>        \
  struct ScalarOnly<T, R> { \
    using type = R;         \
  };
STAX_SCALAR_TYPE(bool)
STAX_SCALAR_TYPE(int8_t)
STAX_SCALAR_TYPE(uint8_t)
STAX_SCALAR_TYPE(int16_t)
STAX_SCALAR_TYPE(int32_t)
STAX_SCALAR_TYPE(int64_t)
STAX_SCALAR_TYPE(float)
STAX_SCALAR_TYPE(double)
#undef STAX_SCALAR_TYPE
template <class T, class R = T>
using Scalar = typename ScalarOnly<T, R>::type;
// Scalar element types including the 16-bit storage types (conversions).
template <class T, class R = T>
struct ElementOnly : ScalarOnly<T, R> {};
template <class R>
struct ElementOnly<Half, R> {
  using type = R;
};
template <class R>
struct ElementOnly<BFloat16, R> {
  using type = R;
};
template <class T, class R = T>
using Element = typename ElementOnly<T, R>::type;

template <class T>
struct UnsignedOf {
  using type = T;
};
template <>
struct UnsignedOf<int8_t> {
  using type = uint8_t;
};
template <>
struct UnsignedOf<int16_t> {
  using type = uint16_t;
};
template <>
struct UnsignedOf<int32_t> {
  using type = uint32_t;
};
template <>
struct UnsignedOf<int64_t> {
  using type = uint64_t;
};
template <class T>
using Unsigned = typename UnsignedOf<T>::type;

template <class T>
inline constexpr int kBits = static_cast<int>(sizeof(T) * 8);

template <class T>
constexpr T min_value() {
  if constexpr (kIsFloat<T>) {
    return -__builtin_huge_val();
  } else if constexpr (kIsSigned<T>) {
    return static_cast<T>(static_cast<Unsigned<T>>(1) << (kBits<T> - 1));
  } else {
    return T(0);
  }
}
template <class T>
constexpr T max_value() {
  if constexpr (kIsFloat<T>) {
    return __builtin_huge_val();
  } else if constexpr (kIsBool<T>) {
    return true;
  } else if constexpr (kIsSigned<T>) {
    return static_cast<T>(~static_cast<Unsigned<T>>(min_value<T>()));
  } else {
    return static_cast<T>(~T(0));
  }
}

// Bits [0, n) set (n in [0, 64]).
constexpr uint64_t low_bits(int n) {
  return n >= 64 ? ~uint64_t{0} : n <= 0 ? 0 : (uint64_t{1} << n) - 1;
}

}  // namespace detail
}  // namespace stax
