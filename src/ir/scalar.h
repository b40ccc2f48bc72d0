// Scalar literals of the graph IR (`2`, `2.0`, `-inf`, `nan`, `True`), held exactly by kind:
// an int64, a double or a bool. Every stage (text format, lowering, kernel IR, the C++
// printer, the eager interpreter) reads a scalar through this header, so that an int64 above
// 2^53 is never rounded through double and every consumer converts a scalar to a dtype by the
// one rule below (convert_scalar), PyTorch's.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "ir/dtype.h"

namespace stax::ir {

// The C++ integer types whose every value is an int64 (not bool, not unsigned 64-bit).
template <typename T>
concept ExactlyInt64 =
    std::integral<T> && !std::same_as<T, bool> && (std::is_signed_v<T> || sizeof(T) < 8);

class Scalar {
 public:
  enum class Kind : uint8_t { Float, Int, Bool };

  Scalar() = default;  // the float 0.0
  // Implicit from a C++ literal of the kind: 2 is an int, 2.0 a float, true a bool. Unsigned
  // 64-bit values are excluded: they do not all fit int64.
  Scalar(double v) : payload_(v) {}  // NOLINT(google-explicit-constructor)
  template <ExactlyInt64 T>
  Scalar(T v) : payload_(static_cast<int64_t>(v)) {}  // NOLINT(google-explicit-constructor)
  template <std::same_as<bool> B>
  Scalar(B v) : payload_(v) {}  // NOLINT(google-explicit-constructor)

  Kind kind() const { return static_cast<Kind>(payload_.index()); }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_bool() const { return kind() == Kind::Bool; }

  // The held value of a kind; std::logic_error for another kind.
  double float_value() const;
  int64_t int_value() const;
  bool bool_value() const;

  // The value as a double (an int above 2^53 rounds to nearest, as Python's float(int)). Only
  // for uses that are floating by nature (a variance correction, a message).
  double as_double() const;
  // The value as an int64 when it is one exactly: ints and bools always, floats when integral
  // and in range.
  std::optional<int64_t> as_exact_int64() const;
  // Whether the value is zero (false, 0, 0.0 and -0.0).
  bool is_zero() const;
  // Whether the value equals `v` exactly (1 equals 1.0 and true; 2^53 + 1 does not equal 2^53).
  bool equals(double v) const;

  // Structural equality: same kind and value; NaN equals NaN, 0.0 differs from -0.0.
  friend bool operator==(const Scalar& a, const Scalar& b);

 private:
  // Index order matches Kind.
  std::variant<double, int64_t, bool> payload_{0.0};
};

// The scalar converted to `dtype` as PyTorch converts a Scalar to a tensor's type (c10's
// static conversion, not the checked one of fills): the result has the dtype's kind
//  - to an integer dtype: an int wraps to the dtype's width (i8 300 -> 44, u8 -1 -> 255); a
//    float truncates toward zero as x86 does (NaN and out-of-range values give INT64_MIN for
//    i64 and u8, INT32_MIN wrapped for i32/i16/i8); a bool is 0 or 1;
//  - to float32/float64: rounded once to nearest (int64 -> float directly, not through double);
//  - to bool: != 0 (NaN is true).
// float16/bfloat16 are not targets: PyTorch converts to them through float32, so callers
// convert to Float32 and round the float to the 16-bit type (std::logic_error otherwise).
Scalar convert_scalar(const Scalar& s, DType dtype);

// Why `s` cannot be written into a `dtype` tensor by fill/full/full_like/masked_fill/where/
// clamp (PyTorch's checked conversion: "value cannot be converted to type int8_t without
// overflow"), or nullopt when it can; the problem names the dtype's range. Integer dtypes take
// ints in [lowest, highest] (uint8 also -255..-1, which wrap) and floats in that range as
// doubles (never NaN or infinities); floating dtypes take every value but finite ones beyond
// the largest finite value; bool takes everything.
std::optional<std::string> scalar_overflow_problem(const Scalar& s, DType dtype);

// The text-format spelling: `-9223372036854775808`, `2.5`, `-inf`, `nan`, `True`.
std::string format_scalar(const Scalar& s);

}  // namespace stax::ir
