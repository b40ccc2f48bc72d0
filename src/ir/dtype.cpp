// Tables for DType: names, C++ spellings and sizes.
#include "ir/dtype.h"

#include <cstdint>
#include <limits>

namespace stax {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "u8";
    case DType::Int8:
      return "i8";
    case DType::Int16:
      return "i16";
    case DType::Int32:
      return "i32";
    case DType::Int64:
      return "i64";
    case DType::Float16:
      return "f16";
    case DType::BFloat16:
      return "bf16";
    case DType::Float32:
      return "f32";
    case DType::Float64:
      return "f64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  struct Entry {
    std::string_view name;
    DType dtype;
  };
  static constexpr Entry kEntries[] = {
      {"bool", DType::Bool},    {"u8", DType::UInt8},        {"uint8", DType::UInt8},
      {"i8", DType::Int8},      {"int8", DType::Int8},       {"i16", DType::Int16},
      {"int16", DType::Int16},  {"i32", DType::Int32},       {"int32", DType::Int32},
      {"int", DType::Int32},    {"i64", DType::Int64},       {"int64", DType::Int64},
      {"long", DType::Int64},   {"f16", DType::Float16},     {"float16", DType::Float16},
      {"half", DType::Float16}, {"bf16", DType::BFloat16},   {"bfloat16", DType::BFloat16},
      {"f32", DType::Float32},  {"float32", DType::Float32}, {"float", DType::Float32},
      {"f64", DType::Float64},  {"float64", DType::Float64}, {"double", DType::Float64},
  };
  for (const Entry& e : kEntries) {
    if (e.name == name) return e.dtype;
  }
  return std::nullopt;
}

std::string_view dtype_cpp_type(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8_t";
    case DType::Int8:
      return "int8_t";
    case DType::Int16:
      return "int16_t";
    case DType::Int32:
      return "int32_t";
    case DType::Int64:
      return "int64_t";
    case DType::Float16:
      return "stax::Half";
    case DType::BFloat16:
      return "stax::BFloat16";
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
  }
  return "?";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int32:
    case DType::Float32:
      return 4;
    case DType::Int64:
    case DType::Float64:
      return 8;
  }
  return 0;
}

bool is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 || dtype == DType::Float32 ||
         dtype == DType::Float64;
}

bool is_integral(DType dtype) {
  return dtype == DType::UInt8 || dtype == DType::Int8 || dtype == DType::Int16 ||
         dtype == DType::Int32 || dtype == DType::Int64;
}

IntegerRange integer_range(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return {0, 1};
    case DType::UInt8:
      return {0, 255};
    case DType::Int8:
      return {-128, 127};
    case DType::Int16:
      return {-32768, 32767};
    case DType::Int32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default:
      return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

}  // namespace stax
