// Exact integer reads and writes of one element at its address, inline: the interpreter's
// loops that walk element offsets themselves (scatter.cpp) call them once or twice per
// element, and load_int/store_int (elements.cpp) are these at a multi-index.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "runtime/tensor.h"

namespace stax::eager::detail {

template <typename T>
inline T load_raw(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
inline void store_raw(const char* p, T v) {
  std::memcpy(const_cast<char*>(p), &v, sizeof(T));
}

inline int64_t truncate_to_int64(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (value <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

// Integral and bool elements exactly; floating ones truncated toward zero (NaN -> 0,
// saturating).
inline int64_t load_int_at(DType dtype, const void* address) {
  const auto* p = static_cast<const char*>(address);
  switch (dtype) {
    case DType::Bool:
      return load_raw<uint8_t>(p) != 0 ? 1 : 0;
    case DType::UInt8:
      return load_raw<uint8_t>(p);
    case DType::Int8:
      return load_raw<int8_t>(p);
    case DType::Int16:
      return load_raw<int16_t>(p);
    case DType::Int32:
      return load_raw<int32_t>(p);
    case DType::Int64:
      return load_raw<int64_t>(p);
    default:
      return truncate_to_int64(load_as_double(dtype, p));
  }
}

// Wrapped to the dtype's width (bool: nonzero -> 1); floating dtypes get the value rounded.
inline void store_int_at(DType dtype, void* address, int64_t value) {
  const auto* p = static_cast<const char*>(address);
  // Narrowing integer conversions are modular (two's complement) in C++20.
  switch (dtype) {
    case DType::Bool:
      store_raw<uint8_t>(p, value != 0 ? 1 : 0);
      return;
    case DType::UInt8:
      store_raw<uint8_t>(p, static_cast<uint8_t>(value));
      return;
    case DType::Int8:
      store_raw<int8_t>(p, static_cast<int8_t>(value));
      return;
    case DType::Int16:
      store_raw<int16_t>(p, static_cast<int16_t>(value));
      return;
    case DType::Int32:
      store_raw<int32_t>(p, static_cast<int32_t>(value));
      return;
    case DType::Int64:
      store_raw<int64_t>(p, value);
      return;
    default:
      store_from_double(dtype, address, static_cast<double>(value));
      return;
  }
}

}  // namespace stax::eager::detail
