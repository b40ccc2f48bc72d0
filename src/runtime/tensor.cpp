// Host tensors: aligned storage, strided views and element access converting every dtype to and
// from double. f16/bf16 conversions are done on the bit patterns with round-to-nearest-even,
// directly from double (one rounding), so they are exact for every representable value.
#include "runtime/tensor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "ir/checked_arith.h"

namespace stax {

namespace {

constexpr size_t kAlignment = 64;

// Rounds a double to a binary floating-point format with `exp_bits` exponent bits and
// `mant_bits` explicit mantissa bits (IEEE layout, with subnormals, inf and NaN), using
// round-to-nearest-even. Returns the bit pattern.
uint16_t round_double_to_small_float(double value, int exp_bits, int mant_bits) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 63) << (exp_bits + mant_bits));
  const int dexp = static_cast<int>((bits >> 52) & 0x7FF);
  const uint64_t dmant = bits & ((uint64_t{1} << 52) - 1);
  const uint16_t inf = static_cast<uint16_t>(((1u << exp_bits) - 1) << mant_bits);
  if (dexp == 0x7FF) {
    if (dmant != 0) return static_cast<uint16_t>(sign | inf | (1u << (mant_bits - 1)));  // NaN
    return static_cast<uint16_t>(sign | inf);
  }
  // Double subnormals (and zero) are far below the smallest subnormal of the small format.
  if (dexp == 0) return sign;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int min_exp = 1 - bias;  // exponent of the smallest normal number
  const int exponent = dexp - 1023;
  if (exponent > bias) return static_cast<uint16_t>(sign | inf);
  const uint64_t significand = dmant | (uint64_t{1} << 52);  // value = significand * 2^(e-52)
  // Number of low significand bits that do not fit in the target's quantum at this exponent.
  int shift = 52 - mant_bits;
  if (exponent < min_exp) shift += min_exp - exponent;
  if (shift > 63) return sign;  // below half of the smallest subnormal
  uint64_t q = significand >> shift;
  const uint64_t rest = significand & ((uint64_t{1} << shift) - 1);
  const uint64_t halfway = uint64_t{1} << (shift - 1);
  if (rest > halfway || (rest == halfway && (q & 1) != 0)) ++q;
  uint64_t result;
  if (exponent < min_exp) {
    // Subnormal: q is the mantissa field; q == 2^mant_bits carries into the smallest normal.
    result = q;
  } else {
    // q in [2^m, 2^(m+1)]; the carry of q == 2^(m+1) bumps the exponent (possibly to inf).
    result = (static_cast<uint64_t>(exponent + bias) << mant_bits) + q - (uint64_t{1} << mant_bits);
  }
  if (result >= inf) result = inf;
  return static_cast<uint16_t>(sign | result);
}

double small_float_to_double(uint16_t bits, int exp_bits, int mant_bits) {
  const bool negative = (bits >> (exp_bits + mant_bits)) & 1;
  const int exponent = (bits >> mant_bits) & ((1 << exp_bits) - 1);
  const int mantissa = bits & ((1 << mant_bits) - 1);
  const int bias = (1 << (exp_bits - 1)) - 1;
  double magnitude;
  if (exponent == (1 << exp_bits) - 1) {
    magnitude = mantissa != 0 ? std::numeric_limits<double>::quiet_NaN()
                              : std::numeric_limits<double>::infinity();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - bias - mant_bits);
  } else {
    magnitude =
        std::ldexp(static_cast<double>(mantissa + (1 << mant_bits)), exponent - bias - mant_bits);
  }
  return negative ? -magnitude : magnitude;
}

// double -> int64 by truncation toward zero; NaN gives 0 and out-of-range values saturate.
int64_t double_to_int64(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (value <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

template <typename T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void store(void* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// Throws std::invalid_argument naming the layout when it fails stax::layout_problem.
void check_layout(DType dtype, const std::vector<int64_t>& sizes,
                  const std::vector<int64_t>& strides, int64_t offset) {
  if (std::optional<std::string> problem = layout_problem(dtype, sizes, strides, offset)) {
    throw std::invalid_argument("tensor (" + std::string(dtype_name(dtype)) + "): " + *problem);
  }
}

// Elements of storage a validated layout reaches (0 when empty).
int64_t extent_of(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                  int64_t offset) {
  return checked_strided_extent(sizes, strides, offset).value();
}

}  // namespace

double load_as_double(DType dtype, const void* p) {
  switch (dtype) {
    case DType::Bool:
      return load<uint8_t>(p) != 0 ? 1.0 : 0.0;
    case DType::UInt8:
      return load<uint8_t>(p);
    case DType::Int8:
      return load<int8_t>(p);
    case DType::Int16:
      return load<int16_t>(p);
    case DType::Int32:
      return load<int32_t>(p);
    case DType::Int64:
      return static_cast<double>(load<int64_t>(p));
    case DType::Float16:
      return small_float_to_double(load<uint16_t>(p), 5, 10);
    case DType::BFloat16:
      return small_float_to_double(load<uint16_t>(p), 8, 7);
    case DType::Float32:
      return load<float>(p);
    case DType::Float64:
      return load<double>(p);
  }
  throw std::logic_error("tensor: unknown dtype");
}

// Integer dtypes: truncate toward zero, then wrap to the target width (two's complement).
void store_from_double(DType dtype, void* p, double value) {
  switch (dtype) {
    case DType::Bool:
      store<uint8_t>(p, value != 0.0 ? 1 : 0);
      return;  // NaN is true
    case DType::UInt8:
      store<uint8_t>(p, static_cast<uint8_t>(double_to_int64(value)));
      return;
    case DType::Int8:
      store<int8_t>(p, static_cast<int8_t>(double_to_int64(value)));
      return;
    case DType::Int16:
      store<int16_t>(p, static_cast<int16_t>(double_to_int64(value)));
      return;
    case DType::Int32:
      store<int32_t>(p, static_cast<int32_t>(double_to_int64(value)));
      return;
    case DType::Int64:
      store<int64_t>(p, double_to_int64(value));
      return;
    case DType::Float16:
      store<uint16_t>(p, round_double_to_small_float(value, 5, 10));
      return;
    case DType::BFloat16:
      store<uint16_t>(p, round_double_to_small_float(value, 8, 7));
      return;
    case DType::Float32:
      store<float>(p, static_cast<float>(value));
      return;
    case DType::Float64:
      store<double>(p, value);
      return;
  }
  throw std::logic_error("tensor: unknown dtype");
}

// ---- Storage ----

Storage::Storage(size_t nbytes)
    : data_(nullptr), allocation_(nullptr), nbytes_(nbytes), deleter_(&std::free) {
  // Sizes beyond PTRDIFF_MAX cannot be addressed (and sizes that pass layout_problem never
  // reach it). As before, the data is zero-filled up to the next multiple of kAlignment;
  // calloc allocates kAlignment bytes more to align the data within.
  if (nbytes > static_cast<size_t>(std::numeric_limits<ptrdiff_t>::max()) - 2 * kAlignment) {
    throw AllocationError(
        "cannot allocate " + std::to_string(nbytes) + " bytes: more than the address space holds",
        nbytes);
  }
  const size_t rounded = std::max(kAlignment, (nbytes + kAlignment - 1) / kAlignment * kAlignment);
  allocation_ = std::calloc(rounded + kAlignment, 1);
  if (allocation_ == nullptr) {
    throw AllocationError("cannot allocate " + std::to_string(nbytes) + " bytes: out of memory",
                          nbytes);
  }
  const uintptr_t address = reinterpret_cast<uintptr_t>(allocation_);
  data_ = static_cast<char*>(allocation_) + (kAlignment - address % kAlignment) % kAlignment;
}

Storage::Storage(void* data, size_t nbytes, void (*deleter)(void*))
    : data_(data), allocation_(data), nbytes_(nbytes), deleter_(deleter) {}

Storage::~Storage() {
  if (deleter_ != nullptr && allocation_ != nullptr) deleter_(allocation_);
}

// ---- Tensor ----

Tensor Tensor::empty(DType dtype, std::vector<int64_t> sizes) {
  if (std::optional<std::string> problem = contiguous_layout_problem(dtype, sizes)) {
    throw std::invalid_argument("tensor (" + std::string(dtype_name(dtype)) + "): " + *problem);
  }
  std::vector<int64_t> strides = checked_contiguous_strides(sizes).value();
  return empty_strided(dtype, std::move(sizes), std::move(strides));
}

Tensor Tensor::empty_strided(DType dtype, std::vector<int64_t> sizes,
                             std::vector<int64_t> strides) {
  check_layout(dtype, sizes, strides, 0);
  // layout_problem guarantees that the extent in bytes fits int64.
  const size_t nbytes = static_cast<size_t>(extent_of(sizes, strides, 0)) * dtype_size(dtype);
  std::shared_ptr<Storage> storage;
  try {
    storage = std::make_shared<Storage>(nbytes);
  } catch (const std::bad_alloc&) {  // AllocationError, or the shared_ptr's control block
    throw AllocationError("tensor: cannot allocate " + std::to_string(nbytes) + " bytes for " +
                              std::string(dtype_name(dtype)) + shape_to_string(sizes) +
                              " strides " + shape_to_string(strides) + ": out of memory",
                          nbytes);
  } catch (const AllocationError& e) {
    throw AllocationError("tensor: " + std::string(e.what()) + " (for " +
                              std::string(dtype_name(dtype)) + shape_to_string(sizes) +
                              " strides " + shape_to_string(strides) + ")",
                          nbytes);
  }
  return Tensor(std::move(storage), dtype, std::move(sizes), std::move(strides), 0);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, DType dtype, std::vector<int64_t> sizes,
               std::vector<int64_t> strides, int64_t offset)
    : storage_(std::move(storage)),
      dtype_(dtype),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      offset_(offset) {
  if (storage_ == nullptr) throw std::invalid_argument("tensor: view of null storage");
  check_layout(dtype_, sizes_, strides_, offset_);
  // Exact: layout_problem guarantees that the extent in bytes fits int64.
  const int64_t end_bytes =
      extent_of(sizes_, strides_, offset_) * static_cast<int64_t>(dtype_size(dtype_));
  if (static_cast<uint64_t>(end_bytes) > storage_->nbytes()) {
    throw std::out_of_range("tensor: view with sizes " + shape_to_string(sizes_) + ", strides " +
                            shape_to_string(strides_) + " and offset " + std::to_string(offset_) +
                            " reaches byte " + std::to_string(end_bytes) +
                            ", past its storage of " + std::to_string(storage_->nbytes()) +
                            " bytes");
  }
}

int64_t Tensor::numel() const {
  return checked_numel(sizes_).value();  // validated by the constructor
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] == 1) continue;  // the stride of a size-1 dimension is irrelevant
    if (strides_[i] != expected) return false;
    expected *= sizes_[i];
  }
  return true;
}

void* Tensor::data() const {
  if (storage_ == nullptr) return nullptr;
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

namespace {

char* element_pointer(const Tensor& t, const std::vector<int64_t>& index) {
  if (!t.defined()) throw std::logic_error("tensor: access to an undefined tensor");
  if (index.size() != t.dim()) {
    throw std::out_of_range("tensor: index of " + std::to_string(index.size()) +
                            " entries for a tensor of sizes " + shape_to_string(t.sizes()));
  }
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= t.sizes()[i]) {
      throw std::out_of_range("tensor: index " + shape_to_string(index) +
                              " out of range for sizes " + shape_to_string(t.sizes()));
    }
    offset += index[i] * t.strides()[i];
  }
  return static_cast<char*>(t.data()) + offset * static_cast<int64_t>(dtype_size(t.dtype()));
}

}  // namespace

double Tensor::get(const std::vector<int64_t>& index) const {
  return load_as_double(dtype_, element_pointer(*this, index));
}

void Tensor::set(const std::vector<int64_t>& index, double value) const {
  store_from_double(dtype_, element_pointer(*this, index), value);
}

double Tensor::get_flat(int64_t position) const {
  return get(unravel_index(position, sizes_));
}

void Tensor::set_flat(int64_t position, double value) const {
  set(unravel_index(position, sizes_), value);
}

Tensor Tensor::as_strided(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                          int64_t offset) const {
  if (!defined()) throw std::logic_error("tensor: as_strided of an undefined tensor");
  return Tensor(storage_, dtype_, std::move(sizes), std::move(strides), offset);
}

Tensor Tensor::contiguous_copy() const {
  if (!defined()) throw std::logic_error("tensor: contiguous_copy of an undefined tensor");
  Tensor out = empty(dtype_, sizes_);
  const size_t element = dtype_size(dtype_);
  char* dst = static_cast<char*>(out.data());
  const int64_t n = numel();
  for (int64_t p = 0; p < n; ++p) {
    std::memcpy(dst + p * static_cast<int64_t>(element),
                element_pointer(*this, unravel_index(p, sizes_)), element);
  }
  return out;
}

Tensor Tensor::clone_storage() const {
  if (!defined()) throw std::logic_error("tensor: clone_storage of an undefined tensor");
  auto storage = std::make_shared<Storage>(storage_->nbytes());
  if (storage_->nbytes() > 0) std::memcpy(storage->data(), storage_->data(), storage_->nbytes());
  return Tensor(std::move(storage), dtype_, sizes_, strides_, offset_);
}

// ---- free functions ----

std::vector<int64_t> unravel_index(int64_t position, const std::vector<int64_t>& sizes) {
  const std::optional<int64_t> n = checked_numel(sizes);
  if (!n) {
    throw std::invalid_argument("tensor: the element count of sizes " + shape_to_string(sizes) +
                                " overflows int64");
  }
  if (position < 0 || position >= *n) {
    throw std::out_of_range("tensor: position " + std::to_string(position) +
                            " out of range for sizes " + shape_to_string(sizes));
  }
  std::vector<int64_t> index(sizes.size(), 0);
  for (size_t i = sizes.size(); i-- > 0;) {
    index[i] = position % sizes[i];
    position /= sizes[i];
  }
  return index;
}

std::string shape_to_string(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(sizes[i]);
  }
  return s + "]";
}

}  // namespace stax
