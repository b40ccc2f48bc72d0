// 16-bit floating-point storage types used by generated code for f16 and bf16 tensors
// (dtype_cpp_type: "stax::Half", "stax::BFloat16"). Storage only: they convert to and from
// float (round to nearest even) and arithmetic happens in float.
// Included by stax_kernel.h; not meant to be included directly.
#pragma once

#include <cstdint>
#include <cstring>

namespace stax {

namespace detail {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// IEEE binary16 <-> binary32.
inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7FFFFFFFu;
  if (mag >= 0x7F800000u) {  // inf stays inf, NaN becomes a quiet NaN
    return static_cast<uint16_t>(sign | (mag > 0x7F800000u ? 0x7E00u : 0x7C00u));
  }
  if (mag >= 0x477FF000u) {  // >= 65520 rounds to infinity
    return static_cast<uint16_t>(sign | 0x7C00u);
  }
  if (mag < 0x38800000u) {  // below 2^-14: subnormal half (or zero)
    // Adding 0.5f puts the value in a binade whose ulp is 2^-24, the half subnormal unit,
    // so the float addition performs the round-to-nearest-even.
    const float shifted = bits_float(mag) + 0.5f;
    return static_cast<uint16_t>(sign | (float_bits(shifted) - 0x3F000000u));
  }
  const uint32_t odd = (mag >> 13) & 1u;
  mag += 0xC8000FFFu + odd;  // rebias exponent (127 -> 15) and round to nearest even
  return static_cast<uint16_t>(sign | (mag >> 13));
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1Fu) return bits_float(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // 2^-24
    return bits_float(sign | float_bits(magnitude));
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// bfloat16 is the upper half of a binary32.
inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  const uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

inline float bfloat16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

}  // namespace detail

struct Half {
  uint16_t bits;
  Half() = default;
  Half(float f) : bits(detail::float_to_half_bits(f)) {}
  operator float() const { return detail::half_bits_to_float(bits); }
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  BFloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}
  operator float() const { return detail::bfloat16_bits_to_float(bits); }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "16-bit storage types");

}  // namespace stax
