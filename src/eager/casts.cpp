// PyTorch's dtype conversions on x86, shared by every eager op: how an operand is converted to
// an op's computation dtype, how a result is stored, and the casts _to_copy and
// convert_element_type. Verified with torch 2.13.0:
//  - float -> i64: truncation; NaN, +-inf and out-of-range values give INT64_MIN (cvttsd2si);
//  - float -> i32/i16/i8: through int32 (out of range and NaN give INT32_MIN), then wrapped:
//    70000.0 -> i16 4464, -129.5 -> i8 127, 3e9 -> i16 0, 4294967301.0 -> i8 0;
//  - float -> u8: through int64 (c10 converts so), then wrapped: 300.7 -> 44,
//    f64 4294967301.0 -> 5;
//  - anything -> bool: != 0 (NaN is true);
//  - f64 and integers -> f16/bf16: through float (two roundings, as c10::Half(float) is the
//    only constructor): f64 1 + 2^-11 + 2^-40 -> f16 1.0.
#include <cmath>
#include <cstdint>
#include <limits>

#include "eager/ops.h"

namespace stax::eager::detail {

int64_t wrap_int(int64_t value, DType to) {
  // Narrowing integer conversions are modular (two's complement) in C++20.
  switch (to) {
    case DType::Bool:
      return value != 0 ? 1 : 0;
    case DType::UInt8:
      return static_cast<uint8_t>(value);
    case DType::Int8:
      return static_cast<int8_t>(value);
    case DType::Int16:
      return static_cast<int16_t>(value);
    case DType::Int32:
      return static_cast<int32_t>(value);
    default:
      return value;
  }
}

int64_t float_to_int(double value, DType to) {
  if (to == DType::Bool) return value != 0.0 ? 1 : 0;
  if (to == DType::Int64 || to == DType::UInt8) {
    if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0)) {
      return wrap_int(std::numeric_limits<int64_t>::min(), to);
    }
    return wrap_int(static_cast<int64_t>(value), to);
  }
  int32_t narrow = std::numeric_limits<int32_t>::min();
  if (value > -2147483649.0 && value < 2147483648.0) narrow = static_cast<int32_t>(value);
  return wrap_int(narrow, to);
}

double int_to_float(int64_t value, DType to) {
  if (to == DType::Float64) return static_cast<double>(value);
  return round_to(to, static_cast<float>(value));
}

double float_to_float(double value, DType to) {
  if (to == DType::Float64) return value;
  return round_to(to, static_cast<float>(value));
}

}  // namespace stax::eager::detail
