// Random tensors, JSON conversion and allclose-style comparison of tensors (see tensor_io.h).
#include "eager/tensor_io.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include "eager/json_file.h"
#include "eager/ops.h"
#include "ir/graph.h"

namespace stax::eager {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double random_value(DType dtype, std::mt19937_64& rng, double float_low, double float_high) {
  const uint64_t bits = rng();
  switch (dtype) {
    case DType::Bool:
      return static_cast<double>(bits >> 63);
    case DType::UInt8:
      return static_cast<double>(bits % 21);
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
      return static_cast<double>(bits % 21) - 10.0;
    default: {
      const double unit = static_cast<double>(bits >> 11) * 0x1.0p-53;  // [0, 1)
      return float_low + (float_high - float_low) * unit;
    }
  }
}

// Calls f(index) for every multi-index of `sizes` in row-major order (once for 0-dim sizes,
// never when a size is 0), reusing one index vector.
template <class F>
void for_each_index(const std::vector<int64_t>& sizes, F&& f) {
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  std::vector<int64_t> index(sizes.size(), 0);
  while (true) {
    f(static_cast<const std::vector<int64_t>&>(index));
    size_t d = sizes.size();
    while (true) {
      if (d == 0) return;
      --d;
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

char* element_address(const Tensor& t, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.strides()[d];
  return static_cast<char*>(t.data()) + offset * static_cast<int64_t>(dtype_size(t.dtype()));
}

std::string position_string(const std::vector<int64_t>& path) {
  return shape_to_string(path);
}

nlohmann::json element_to_json(const Tensor& t, const std::vector<int64_t>& index) {
  if (t.dtype() == DType::Bool) return t.get(index) != 0.0;
  if (is_integral(t.dtype())) return detail::load_int(t, index);
  const double v = t.get(index);
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

void write_json_rec(std::ostream& out, const Tensor& t, std::vector<int64_t>& index, size_t d) {
  if (d == t.dim()) {
    out << element_to_json(t, index).dump();
    return;
  }
  out << '[';
  for (int64_t i = 0; i < t.sizes()[d] && out; ++i) {
    if (i > 0) out << ',';
    index[d] = i;
    write_json_rec(out, t, index, d + 1);
  }
  out << ']';
}

class JsonReader {
 public:
  JsonReader(DType dtype, const std::string& name, Tensor out)
      : dtype_(dtype), name_(name), out_(std::move(out)) {}

  void read(const nlohmann::json& json, std::vector<int64_t>& index, size_t d) {
    if (d == out_.dim()) {
      read_element(json, index);
      return;
    }
    const int64_t expected = out_.sizes()[d];
    const std::vector<int64_t> at(index.begin(), index.begin() + static_cast<std::ptrdiff_t>(d));
    if (!json.is_array()) {
      fail(at, "dimension " + std::to_string(d) + ": expected a list of " +
                   std::to_string(expected) + " elements, got " + describe_json(json));
    }
    if (static_cast<int64_t>(json.size()) != expected) {
      fail(at, "dimension " + std::to_string(d) + ": expected a list of " +
                   std::to_string(expected) + " elements, got " + std::to_string(json.size()) +
                   " (sizes " + shape_to_string(out_.sizes()) + ")");
    }
    for (int64_t i = 0; i < expected; ++i) {
      index[d] = i;
      read(json[static_cast<size_t>(i)], index, d + 1);
    }
  }

 private:
  [[noreturn]] void fail(const std::vector<int64_t>& at, const std::string& what) const {
    throw std::invalid_argument("input '" + name_ + "' at " + position_string(at) + ": " + what);
  }

  void read_element(const nlohmann::json& json, const std::vector<int64_t>& index) {
    if (is_floating(dtype_)) {
      double v;
      if (json.is_number()) {
        v = json.get<double>();
      } else if (json.is_boolean()) {
        v = json.get<bool>() ? 1.0 : 0.0;
      } else if (json.is_string() && json.get<std::string>() == "nan") {
        v = std::numeric_limits<double>::quiet_NaN();
      } else if (json.is_string() &&
                 (json.get<std::string>() == "inf" || json.get<std::string>() == "+inf")) {
        v = kInf;
      } else if (json.is_string() && json.get<std::string>() == "-inf") {
        v = -kInf;
      } else {
        fail(index, "expected a number (or \"nan\", \"inf\", \"-inf\") for " +
                        std::string(dtype_name(dtype_)) + ", got " + describe_json(json));
      }
      if (std::isfinite(v) && !std::isfinite(detail::round_to(dtype_, v))) {
        fail(index, "value " + json.dump() + " out of range for " +
                        std::string(dtype_name(dtype_)) + " (write \"inf\" for an infinity)");
      }
      out_.set(index, v);
      return;
    }
    // bool and integer dtypes
    int64_t v;
    if (json.is_boolean()) {
      v = json.get<bool>() ? 1 : 0;
    } else if (json.is_number_unsigned()) {
      const uint64_t raw = json.get<uint64_t>();
      if (raw > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail(index,
             "value " + json.dump() + " out of range for " + std::string(dtype_name(dtype_)));
      }
      v = static_cast<int64_t>(raw);
    } else if (json.is_number_integer()) {
      v = json.get<int64_t>();
    } else if (json.is_number_float()) {
      const double d = json.get<double>();
      if (std::trunc(d) != d) {
        fail(index,
             "expected an integer for " + std::string(dtype_name(dtype_)) + ", got " + json.dump());
      }
      // -2^63 is the only integral double at or beyond 2^63 in magnitude that int64 holds.
      if (!(d >= -0x1.0p63 && d < 0x1.0p63)) {
        fail(index,
             "value " + json.dump() + " out of range for " + std::string(dtype_name(dtype_)));
      }
      v = static_cast<int64_t>(d);
    } else {
      fail(index, "expected " + std::string(dtype_ == DType::Bool ? "true/false" : "an integer") +
                      " for " + std::string(dtype_name(dtype_)) + ", got " + describe_json(json));
    }
    const IntegerRange range = integer_range(dtype_);
    if (v < range.lowest || v > range.highest) {
      fail(index,
           "value " + std::to_string(v) + " out of range for " + std::string(dtype_name(dtype_)));
    }
    detail::store_int(out_, index, v);
  }

  DType dtype_;
  const std::string& name_;
  Tensor out_;
};

}  // namespace

Tensor random_tensor(DType dtype, const std::vector<int64_t>& sizes, uint64_t seed,
                     double float_low, double float_high) {
  return random_tensor_strided(dtype, sizes, ir::contiguous_strides(sizes), seed, float_low,
                               float_high);
}

Tensor random_tensor_strided(DType dtype, const std::vector<int64_t>& sizes,
                             const std::vector<int64_t>& strides, uint64_t seed, double float_low,
                             double float_high) {
  Tensor t = Tensor::empty_strided(dtype, sizes, strides);
  std::vector<int64_t> distinct = sizes;
  for (size_t d = 0; d < distinct.size(); ++d) {
    if (strides[d] == 0) distinct[d] = std::min<int64_t>(distinct[d], 1);
  }
  const Tensor one_per_element = t.as_strided(distinct, strides, 0);
  std::mt19937_64 rng(seed);
  for_each_index(distinct, [&](const std::vector<int64_t>& index) {
    one_per_element.set(index, random_value(dtype, rng, float_low, float_high));
  });
  return t;
}

void write_tensor_json(std::ostream& out, const Tensor& tensor) {
  if (!tensor.defined()) throw std::invalid_argument("write_tensor_json: undefined tensor");
  if (tensor.numel() > kMaxJsonElements) {
    throw std::length_error("a tensor of sizes " + shape_to_string(tensor.sizes()) + " has " +
                            std::to_string(tensor.numel()) + " elements, more than the " +
                            std::to_string(kMaxJsonElements) + " written as JSON");
  }
  std::vector<int64_t> index(tensor.dim(), 0);
  write_json_rec(out, tensor, index, 0);
}

nlohmann::json tensor_to_json(const Tensor& tensor) {
  std::ostringstream text;
  write_tensor_json(text, tensor);
  return nlohmann::json::parse(text.str());
}

Tensor tensor_from_json(const nlohmann::json& json, DType dtype, const std::vector<int64_t>& sizes,
                        const std::string& name) {
  Tensor out = Tensor::empty(dtype, sizes);
  JsonReader reader(dtype, name, out);
  std::vector<int64_t> index(sizes.size(), 0);
  reader.read(json, index, 0);
  return out;
}

Tensor tensor_from_json(const nlohmann::json& json, DType dtype, const std::vector<int64_t>& sizes,
                        const std::vector<int64_t>& strides, const std::string& name) {
  const Tensor values = tensor_from_json(json, dtype, sizes, name);
  const Tensor laid = Tensor::empty_strided(dtype, sizes, strides);
  const size_t element = dtype_size(dtype);
  // Bytes, not doubles: int64 values beyond 2^53 stay exact.
  for_each_index(sizes, [&](const std::vector<int64_t>& index) {
    std::memcpy(element_address(laid, index), element_address(values, index), element);
  });
  for_each_index(sizes, [&](const std::vector<int64_t>& index) {
    if (std::memcmp(element_address(laid, index), element_address(values, index), element) != 0) {
      throw std::invalid_argument(
          "input '" + name + "' at " + position_string(index) + ": value " +
          element_to_json(values, index).dump() + " differs from " +
          element_to_json(laid, index).dump() + ", the value of a later position that strides " +
          shape_to_string(strides) +
          " store at the same address (a broadcast input needs equal values along the "
          "broadcast dimensions)");
    }
  });
  return laid;
}

Difference compare(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  Difference diff;
  if (!actual.defined() || !expected.defined() || actual.sizes() != expected.sizes()) {
    return {kInf, kInf, false};
  }
  // Along a dim where both have stride 0 every element equals the one at index 0: drop it.
  std::vector<int64_t> sizes;
  std::vector<int64_t> actual_strides;
  std::vector<int64_t> expected_strides;
  for (size_t d = 0; d < expected.dim(); ++d) {
    const int64_t size = expected.sizes()[d];
    if (size == 0) return diff;
    if (size == 1 || (actual.strides()[d] == 0 && expected.strides()[d] == 0)) continue;
    sizes.push_back(size);
    actual_strides.push_back(actual.strides()[d]);
    expected_strides.push_back(expected.strides()[d]);
  }
  const Tensor a_view = actual.as_strided(sizes, actual_strides, actual.offset());
  const Tensor e_view = expected.as_strided(sizes, expected_strides, expected.offset());
  for_each_index(sizes, [&](const std::vector<int64_t>& index) {
    const double a = a_view.get(index);
    const double e = e_view.get(index);
    if (a == e || (std::isnan(a) && std::isnan(e))) return;  // includes equal infinities
    double abs_diff = std::abs(a - e);
    if (std::isnan(abs_diff)) abs_diff = kInf;  // exactly one side is NaN
    const double rel_diff = std::isinf(abs_diff) || e == 0.0 ? kInf : abs_diff / std::abs(e);
    diff.max_abs = std::max(diff.max_abs, abs_diff);
    diff.max_rel = std::max(diff.max_rel, rel_diff);
    if (!(std::isfinite(abs_diff) && abs_diff <= atol + rtol * std::abs(e))) {
      diff.within_tolerance = false;
    }
  });
  return diff;
}

}  // namespace stax::eager
