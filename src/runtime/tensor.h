// Host tensors: a strided view (sizes, strides, offset in elements) over shared, 64-byte
// aligned storage. Used by the eager interpreter, the compiled-graph runtime and the tools.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace stax {

// Memory for a tensor could not be allocated. The message names the bytes and, where the
// thrower knows it, the tensor (eager::run names the graph value). Thrown instead of a bare
// std::bad_alloc so that callers reporting bad input report this too.
class AllocationError : public std::runtime_error {
 public:
  AllocationError(const std::string& message, size_t bytes)
      : std::runtime_error(message), bytes_(bytes) {}
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
};

class Storage {
 public:
  // Zero-filled, 64-byte aligned. Throws AllocationError when the memory is not available.
  // The zeroes come from calloc, which for large sizes maps fresh zero pages instead of
  // writing them, so an allocation the system grants lazily (Linux overcommit) costs nothing
  // until it is used, and one it refuses fails here, cleanly, rather than in a memset.
  explicit Storage(size_t nbytes);
  // Adopts memory allocated elsewhere; `deleter` frees it when the storage dies.
  Storage(void* data, size_t nbytes, void (*deleter)(void*));
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }

 private:
  void* data_;
  void* allocation_;  // what deleter_ frees (data_ rounded down to the allocation)
  size_t nbytes_;
  void (*deleter_)(void*);
};

class Tensor {
 public:
  Tensor() = default;
  // A new contiguous, zero-filled tensor. Sizes whose element count or bytes overflow int64
  // throw std::invalid_argument; memory that cannot be allocated throws AllocationError.
  static Tensor empty(DType dtype, std::vector<int64_t> sizes);
  // A new tensor with the given strides (storage sized to cover every element); the layout
  // must pass stax::layout_problem (ir/checked_arith.h).
  static Tensor empty_strided(DType dtype, std::vector<int64_t> sizes,
                              std::vector<int64_t> strides);
  // A view sharing storage. Throws std::invalid_argument for a layout that fails
  // stax::layout_problem and std::out_of_range when it reaches past the storage.
  Tensor(std::shared_ptr<Storage> storage, DType dtype, std::vector<int64_t> sizes,
         std::vector<int64_t> strides, int64_t offset);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  size_t dim() const { return sizes_.size(); }
  int64_t numel() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // Pointer to element 0 of the view (storage data + offset * element size).
  void* data() const;

  // Element access by multi-index, converting to/from double (any dtype).
  double get(const std::vector<int64_t>& index) const;
  void set(const std::vector<int64_t>& index, double value) const;
  // Element access by row-major logical position 0..numel-1.
  double get_flat(int64_t position) const;
  void set_flat(int64_t position, double value) const;

  // A view with other sizes/strides/offset over the same storage.
  Tensor as_strided(std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset) const;
  // A contiguous copy.
  Tensor contiguous_copy() const;
  // A copy of the whole storage seen with the same sizes, strides and offset (what a caller
  // keeps of an input that a graph writes in place).
  Tensor clone_storage() const;

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::Float32;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
};

// The element of `dtype` at `p` as a double, and `value` stored there with the dtype's
// conversion: what Tensor::get and Tensor::set do once they have the element's address, for
// loops that walk element offsets themselves.
double load_as_double(DType dtype, const void* p);
void store_from_double(DType dtype, void* p, double value);

// Converts a row-major position into a multi-index for `sizes`.
std::vector<int64_t> unravel_index(int64_t position, const std::vector<int64_t>& sizes);
std::string shape_to_string(const std::vector<int64_t>& sizes);

}  // namespace stax
