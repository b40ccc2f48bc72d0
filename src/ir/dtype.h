// Element types of Stax tensors: the core dtypes of PyTorch, their text-format names
// (`f32`, `bf16`, `i64`, `bool`, ...), sizes and the PyTorch type-promotion category.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stax {

enum class DType : uint8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

// Short name used by the text format and diagnostics: "f32", "bf16", "i64", "bool", ...
std::string_view dtype_name(DType dtype);
// Inverse of dtype_name; also accepts PyTorch spellings ("float32", "float", "int64", ...).
std::optional<DType> parse_dtype(std::string_view name);
// C++ element type used for the dtype in generated code and the runtime ("float", "int64_t", ...).
std::string_view dtype_cpp_type(DType dtype);
size_t dtype_size(DType dtype);
// The values of an integral dtype (bool: 0 and 1); other dtypes give int64's.
struct IntegerRange {
  int64_t lowest;
  int64_t highest;
};
IntegerRange integer_range(DType dtype);
bool is_floating(DType dtype);
bool is_integral(DType dtype);  // excludes Bool

}  // namespace stax
