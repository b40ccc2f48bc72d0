// Scalar (scalar.h): exact storage by kind, PyTorch's static conversion to a dtype, and the
// overflow check of its checked conversion. The conversions were verified with torch 2.13.0:
//  - int -> integer dtype wraps (i8 + 300 adds 44; u8 == 257 compares with 1);
//  - int64 -> float32 rounds once (f32 + (2^60 + 2^36 + 1) adds 2^60 + 2^37; through double
//    it would be 2^60);
//  - float -> integer truncates toward zero as cvttsd2si (i64, u8 through i64) or cvttss2si
//    (i32, i16, i8 through i32) do, out-of-range values and NaN giving the "indefinite
//    integer" INT64_MIN / INT32_MIN, wrapped;
//  - fills refuse values that overflow: full_like(i8, 300) and full_like(i64, 1e19) raise
//    "value cannot be converted to type int8_t without overflow"; uint8 takes -255..255.
#include "ir/scalar.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "ir/text_format.h"

namespace stax::ir {

namespace {

int64_t wrap_to(int64_t v, DType dtype) {
  // Narrowing integer conversions are modular (two's complement) in C++20.
  switch (dtype) {
    case DType::UInt8:
      return static_cast<uint8_t>(v);
    case DType::Int8:
      return static_cast<int8_t>(v);
    case DType::Int16:
      return static_cast<int16_t>(v);
    case DType::Int32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}

int64_t truncate_to(double v, DType dtype) {
  if (dtype == DType::Int64 || dtype == DType::UInt8) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
      return wrap_to(std::numeric_limits<int64_t>::min(), dtype);
    }
    return wrap_to(static_cast<int64_t>(v), dtype);
  }
  int32_t narrow = std::numeric_limits<int32_t>::min();
  if (v > -2147483649.0 && v < 2147483648.0) narrow = static_cast<int32_t>(v);
  return wrap_to(narrow, dtype);
}

double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.3895313892515355e38;
    case DType::Float32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

}  // namespace

double Scalar::float_value() const {
  if (!is_float()) throw std::logic_error("Scalar " + format_scalar(*this) + " is not a float");
  return std::get<double>(payload_);
}

int64_t Scalar::int_value() const {
  if (!is_int()) throw std::logic_error("Scalar " + format_scalar(*this) + " is not an int");
  return std::get<int64_t>(payload_);
}

bool Scalar::bool_value() const {
  if (!is_bool()) throw std::logic_error("Scalar " + format_scalar(*this) + " is not a bool");
  return std::get<bool>(payload_);
}

double Scalar::as_double() const {
  switch (kind()) {
    case Kind::Float:
      return std::get<double>(payload_);
    case Kind::Int:
      return static_cast<double>(std::get<int64_t>(payload_));
    case Kind::Bool:
      return std::get<bool>(payload_) ? 1.0 : 0.0;
  }
  return 0.0;
}

std::optional<int64_t> Scalar::as_exact_int64() const {
  switch (kind()) {
    case Kind::Int:
      return std::get<int64_t>(payload_);
    case Kind::Bool:
      return std::get<bool>(payload_) ? 1 : 0;
    case Kind::Float: {
      const double v = std::get<double>(payload_);
      if (v >= -9223372036854775808.0 && v < 9223372036854775808.0 && v == std::trunc(v)) {
        return static_cast<int64_t>(v);
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

bool Scalar::is_zero() const {
  switch (kind()) {
    case Kind::Float:
      return std::get<double>(payload_) == 0.0;
    case Kind::Int:
      return std::get<int64_t>(payload_) == 0;
    case Kind::Bool:
      return !std::get<bool>(payload_);
  }
  return false;
}

bool Scalar::equals(double v) const {
  if (is_float()) return std::get<double>(payload_) == v;
  // An integer equals v when v is integral, in range and the same integer.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) || v != std::trunc(v)) {
    return false;
  }
  return *as_exact_int64() == static_cast<int64_t>(v);
}

bool operator==(const Scalar& a, const Scalar& b) {
  if (a.kind() != b.kind()) return false;
  if (!a.is_float()) return a.payload_ == b.payload_;
  const double x = a.float_value();
  const double y = b.float_value();
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return x == y && std::signbit(x) == std::signbit(y);
}

Scalar convert_scalar(const Scalar& s, DType dtype) {
  switch (dtype) {
    case DType::Bool:
      // NaN is true: it is not zero.
      return Scalar(!s.is_zero());
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
      if (s.is_float()) return Scalar(truncate_to(s.float_value(), dtype));
      return Scalar(wrap_to(*s.as_exact_int64(), dtype));
    case DType::Float32:
      // Rounded once from the exact value (an int64 straight to float, as c10 converts).
      if (s.is_int()) return Scalar(static_cast<double>(static_cast<float>(s.int_value())));
      return Scalar(static_cast<double>(static_cast<float>(s.as_double())));
    case DType::Float64:
      return Scalar(s.as_double());
    case DType::Float16:
    case DType::BFloat16:
      break;
  }
  throw std::logic_error("convert_scalar: " + std::string(dtype_name(dtype)) +
                         " is reached through float32 (convert to f32, then round)");
}

std::optional<std::string> scalar_overflow_problem(const Scalar& s, DType dtype) {
  if (dtype == DType::Bool || s.is_bool()) return std::nullopt;
  if (is_integral(dtype)) {
    const IntegerRange r = integer_range(dtype);
    bool fits = true;
    if (s.is_int()) {
      // uint8 also takes the negative values whose magnitude fits (-1 fills 255), as c10's
      // overflow check does for an unsigned target.
      const int64_t lowest = dtype == DType::UInt8 ? -r.highest : r.lowest;
      fits = s.int_value() >= lowest && s.int_value() <= r.highest;
    } else {
      // Compared as doubles, as c10 does: int64's maximum reads as 2^63, so 2^63 passes.
      const double v = s.float_value();
      fits = v >= static_cast<double>(r.lowest) && v <= static_cast<double>(r.highest);
    }
    if (fits) return std::nullopt;
    return "[" + std::to_string(r.lowest) + ", " + std::to_string(r.highest) + "]";
  }
  const double v = s.as_double();
  if (!std::isfinite(v) || std::fabs(v) <= largest_finite(dtype)) return std::nullopt;
  return "largest finite value " + format_float(largest_finite(dtype));
}

std::string format_scalar(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Float:
      return format_float(s.float_value());
    case Scalar::Kind::Int:
      return std::to_string(s.int_value());
    case Scalar::Kind::Bool:
      return s.bool_value() ? "True" : "False";
  }
  return "?";
}

}  // namespace stax::ir
