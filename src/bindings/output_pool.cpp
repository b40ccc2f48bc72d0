// The pool of large region outputs (output_pool.h) and their DLPack capsules.
#include "bindings/output_pool.h"

#include <dlpack/dlpack.h>

#include <memory>
#include <stdexcept>

#include "ir/dtype.h"
#include "runtime/block_pool.h"

namespace stax::bindings {
namespace {

// The process's pool, shared with the programs' arenas and scratch (runtime/block_pool.h).
runtime::BlockPool& pool() {
  return runtime::process_block_pool();
}

// What a capsule owns: the managed tensor and the arrays its DLTensor points into.
struct Owned {
  DLManagedTensor managed{};
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  size_t bytes = 0;
};

void delete_managed(DLManagedTensor* managed) {
  auto* owned = static_cast<Owned*>(managed->manager_ctx);
  pool().give(managed->dl_tensor.data);
  delete owned;
}

// A capsule PyTorch never consumed (from_dlpack renames the ones it takes to
// "used_dltensor") still owns its tensor.
void delete_unused_capsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

DLDataType dl_dtype(const std::string& name) {
  const auto dtype = parse_dtype(name);
  if (!dtype) throw std::invalid_argument("pooled_output: unknown dtype " + name);
  if (*dtype == DType::Bool) {
    throw std::invalid_argument("pooled_output: DLPack 0.6 has no " + name + " type");
  }
  return dlpack_type(*dtype);
}

// The DLPack type of `dtype`, after checking that `nbytes` hold the layout.
DLDataType check_layout(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                        const std::string& dtype, int64_t nbytes) {
  if (sizes.size() != strides.size()) {
    throw std::invalid_argument("pooled_output: sizes and strides differ in rank");
  }
  const DLDataType type = dl_dtype(dtype);
  int64_t extent = 1;  // elements from the first to one past the last (0 when empty)
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || strides[d] < 0) {
      throw std::invalid_argument("pooled_output: negative size or stride");
    }
    if (sizes[d] == 0) extent = 0;
  }
  if (extent != 0) {
    for (size_t d = 0; d < sizes.size(); ++d) extent += (sizes[d] - 1) * strides[d];
  }
  if (nbytes < extent * (type.bits / 8) || nbytes <= 0) {
    throw std::invalid_argument("pooled_output: " + std::to_string(nbytes) +
                                " bytes do not hold the tensor");
  }
  return type;
}

}  // namespace

DLDataType dlpack_type(DType dtype) {
  const auto bits = static_cast<uint8_t>(8 * dtype_size(dtype));
  switch (dtype) {
    case DType::Float16:
    case DType::Float32:
    case DType::Float64:
      return {kDLFloat, bits, 1};
    case DType::BFloat16:
      return {kDLBfloat, bits, 1};
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
      return {kDLInt, bits, 1};
    case DType::UInt8:
    case DType::Bool:  // DLPack 0.6 has no bool type
      break;
  }
  return {kDLUInt, bits, 1};
}

PyObject* pooled_output(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                        const std::string& dtype, int64_t nbytes) {
  check_layout(sizes, strides, dtype, nbytes);
  void* data = pool().take(static_cast<size_t>(nbytes));
  try {
    return pooled_block_capsule(data, sizes, strides, dtype, nbytes);
  } catch (...) {
    pool().give(data);
    throw;
  }
}

PyObject* pooled_block_capsule(void* block, const std::vector<int64_t>& sizes,
                               const std::vector<int64_t>& strides, const std::string& dtype,
                               int64_t nbytes) {
  const DLDataType type = check_layout(sizes, strides, dtype, nbytes);
  auto owned = std::make_unique<Owned>();
  owned->sizes = sizes;
  owned->strides = strides;
  owned->bytes = static_cast<size_t>(nbytes);
  DLTensor& t = owned->managed.dl_tensor;
  t.data = block;
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int32_t>(sizes.size());
  t.dtype = type;
  t.shape = owned->sizes.data();
  t.strides = owned->strides.data();
  t.byte_offset = 0;
  owned->managed.manager_ctx = owned.get();
  owned->managed.deleter = delete_managed;
  PyObject* capsule = PyCapsule_New(&owned->managed, "dltensor", delete_unused_capsule);
  if (capsule == nullptr) throw std::runtime_error("pooled_output: cannot create a capsule");
  owned.release();
  return capsule;
}

std::pair<int64_t, int64_t> output_pool_cached() {
  const runtime::BlockPoolStats s = pool().stats();
  return {s.cached_blocks, s.cached_bytes};
}

runtime::BlockPoolStats output_pool_stats() {
  return pool().stats();
}

int64_t output_pool_trim() {
  return pool().trim();
}

}  // namespace stax::bindings
