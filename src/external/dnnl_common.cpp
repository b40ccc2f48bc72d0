// The oneDNN pieces the external plans share (dnnl_common.h).
#include "external/dnnl_common.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

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

Buffer allocate(size_t bytes) {
  // aligned_alloc may return null for 0 bytes; a run may borrow an empty buffer.
  void* p = std::aligned_alloc(64, std::max<size_t>((bytes + 63) / 64 * 64, 64));
  if (p == nullptr) throw std::bad_alloc();
  return Buffer(p);
}

namespace {
std::atomic<size_t> g_kept_bytes{0};
}  // namespace

BufferPool::~BufferPool() {
  g_kept_bytes -= free_.size() * bytes_;
}

size_t BufferPool::kept_bytes() {
  return g_kept_bytes.load();
}

Buffer BufferPool::take() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      Buffer b = std::move(free_.back());
      free_.pop_back();
      g_kept_bytes -= bytes_;
      return b;
    }
  }
  return allocate(bytes_);
}

void BufferPool::give(Buffer buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(buffer));
  g_kept_bytes += bytes_;
}

}  // namespace stax::external::detail
