// Random tensors, JSON conversion and allclose-style comparison of tensors (see tensor_io.h).
#include "eager/tensor_io.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "eager/ops.h"
#include "ir/graph.h"

namespace stax::eager {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double random_value(DType dtype, std::mt19937_64& rng) {
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
      return 2.0 * unit - 1.0;
    }
  }
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

nlohmann::json to_json_rec(const Tensor& t, std::vector<int64_t>& index, size_t d) {
  if (d == t.dim()) return element_to_json(t, index);
  nlohmann::json list = nlohmann::json::array();
  for (int64_t i = 0; i < t.sizes()[d]; ++i) {
    index[d] = i;
    list.push_back(to_json_rec(t, index, d + 1));
  }
  return list;
}

struct IntRange {
  int64_t min;
  int64_t max;
};

IntRange int_range(DType dtype) {
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
                   std::to_string(expected) + " elements, got " + describe(json));
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

  static std::string describe(const nlohmann::json& json) {
    std::string text = json.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return std::string(json.type_name()) + " " + text;
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
                        std::string(dtype_name(dtype_)) + ", got " + describe(json));
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
      if (!(std::trunc(d) == d && std::abs(d) < 0x1.0p63)) {
        fail(index,
             "expected an integer for " + std::string(dtype_name(dtype_)) + ", got " + json.dump());
      }
      v = static_cast<int64_t>(d);
    } else {
      fail(index, "expected " + std::string(dtype_ == DType::Bool ? "true/false" : "an integer") +
                      " for " + std::string(dtype_name(dtype_)) + ", got " + describe(json));
    }
    const IntRange range = int_range(dtype_);
    if (v < range.min || v > range.max) {
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

Tensor random_tensor(DType dtype, const std::vector<int64_t>& sizes, uint64_t seed) {
  return random_tensor_strided(dtype, sizes, ir::contiguous_strides(sizes), seed);
}

Tensor random_tensor_strided(DType dtype, const std::vector<int64_t>& sizes,
                             const std::vector<int64_t>& strides, uint64_t seed) {
  Tensor t = Tensor::empty_strided(dtype, sizes, strides);
  std::mt19937_64 rng(seed);
  const int64_t n = t.numel();
  for (int64_t p = 0; p < n; ++p) t.set_flat(p, random_value(dtype, rng));
  return t;
}

nlohmann::json tensor_to_json(const Tensor& tensor) {
  if (!tensor.defined()) throw std::invalid_argument("tensor_to_json: undefined tensor");
  std::vector<int64_t> index(tensor.dim(), 0);
  return to_json_rec(tensor, index, 0);
}

Tensor tensor_from_json(const nlohmann::json& json, DType dtype, const std::vector<int64_t>& sizes,
                        const std::string& name) {
  Tensor out = Tensor::empty(dtype, sizes);
  JsonReader reader(dtype, name, out);
  std::vector<int64_t> index(sizes.size(), 0);
  reader.read(json, index, 0);
  return out;
}

Difference compare(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  Difference diff;
  if (!actual.defined() || !expected.defined() || actual.sizes() != expected.sizes()) {
    return {kInf, kInf, false};
  }
  const int64_t n = expected.numel();
  for (int64_t p = 0; p < n; ++p) {
    const std::vector<int64_t> index = unravel_index(p, expected.sizes());
    const double a = actual.get(index);
    const double e = expected.get(index);
    if (a == e || (std::isnan(a) && std::isnan(e))) continue;  // includes equal infinities
    double abs_diff = std::abs(a - e);
    if (std::isnan(abs_diff)) abs_diff = kInf;  // exactly one side is NaN
    const double rel_diff = std::isinf(abs_diff) || e == 0.0 ? kInf : abs_diff / std::abs(e);
    diff.max_abs = std::max(diff.max_abs, abs_diff);
    diff.max_rel = std::max(diff.max_rel, rel_diff);
    if (!(std::isfinite(abs_diff) && abs_diff <= atol + rtol * std::abs(e))) {
      diff.within_tolerance = false;
    }
  }
  return diff;
}

}  // namespace stax::eager
