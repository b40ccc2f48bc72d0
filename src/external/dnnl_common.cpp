// The oneDNN pieces the external plans share (dnnl_common.h).
#include "external/dnnl_common.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

#include "runtime/block_pool.h"

namespace stax::external::detail {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

OmpThreads::OmpThreads(int threads) : saved_(omp_get_max_threads()) {
  omp_set_num_threads(threads);
}
OmpThreads::~OmpThreads() {
  omp_set_num_threads(saved_);
}

int resolve_threads(int num_threads) {
  return num_threads == 0 ? omp_get_max_threads() : num_threads;
}

std::optional<dnnl::memory::data_type> library_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return dnnl::memory::data_type::f32;
    case DType::BFloat16:
      return dnnl::memory::data_type::bf16;
    case DType::Float16:
      return dnnl::memory::data_type::f16;
    default:
      return std::nullopt;
  }
}

bool is_reference(const char* impl_info) {
  return std::string(impl_info).rfind("ref", 0) == 0;
}

bool uses_matrix_engine(const char* impl_info) {
  return std::string(impl_info).find("amx") != std::string::npos;
}

std::string library_version() {
  const dnnl_version_t* v = dnnl::version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

namespace {
std::atomic<size_t> g_in_use_bytes{0};
}  // namespace

Buffer allocate(size_t bytes) {
  // A run may borrow an empty buffer: it still gets an address.
  const size_t granted = runtime::BlockPool::bucket_bytes(std::max<size_t>(bytes, 64));
  void* p = runtime::process_block_pool().take(granted);  // throws std::bad_alloc
  g_in_use_bytes += granted;
  return Buffer(p);
}

void PoolDeleter::operator()(void* p) const {
  size_t granted = 0;
  runtime::process_block_pool().give(p, &granted);
  g_in_use_bytes -= granted;
}

size_t BufferPool::in_use_bytes() {
  return g_in_use_bytes.load();
}

}  // namespace stax::external::detail
