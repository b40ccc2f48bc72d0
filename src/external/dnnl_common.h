// What the oneDNN plans (matmul.cpp, convolution.cpp) share: the one CPU engine, a stream per
// calling thread, the scope that sets the OpenMP thread count of a call, Stax's dtypes as
// oneDNN's, the test that refuses oneDNN's reference kernels, and a pool of the aligned buffers
// a run borrows (scratchpads, reordered operands). Internal to src/external.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace stax::external::detail {

dnnl::engine& cpu_engine();

// oneDNN's CPU stream is a handle for in-order execution; one per calling thread, so
// concurrent calls never share one.
dnnl::stream& thread_stream();

// Sets the calling thread's OpenMP thread count for a scope and restores the caller's.
class OmpThreads {
 public:
  explicit OmpThreads(int threads);
  ~OmpThreads();
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

// A run()'s or create()'s thread count: 0 is the caller's omp_get_max_threads().
int resolve_threads(int num_threads);

// The oneDNN data type of a Stax dtype, where oneDNN has one (whether a primitive exists for
// it on this CPU is the library's answer, asked per primitive kind).
std::optional<dnnl::memory::data_type> library_dtype(DType dtype);

// Whether oneDNN picked its reference (unoptimized, element by element) implementation: its
// impl_info_str() begins with "ref".
bool is_reference(const char* impl_info);

// Whether oneDNN's kernel runs on the CPU's matrix engine (Intel AMX tiles): its
// impl_info_str() names the ISA, "brgconv:avx512_core_amx_bf16", "brg:avx512_core_amx". The
// library's own report, so a CPU without the engine (AMD Zen 4/5) never sees it.
bool uses_matrix_engine(const char* impl_info);

// "oneDNN 2.6.3", the library the process loaded.
std::string library_version();

// A run's workspace (reordered operands, the library's scratchpad): a block of the process's
// pool (runtime/block_pool.h), given back when the run drops it. The pool keeps it for the
// next run, of this plan or of another, within the bound it keeps on all of Stax's memory.
struct PoolDeleter {
  void operator()(void* p) const;
};
// A 64-byte aligned buffer from the process's pool.
using Buffer = std::unique_ptr<void, PoolDeleter>;
Buffer allocate(size_t bytes);

// The answers of one probe of the library (whether it has a fast kernel for a dtype, a pass),
// each asked once per process; threads share them. One per probing function.
template <typename Key>
class ProbeAnswers {
 public:
  template <typename Ask>
  std::string get(const Key& key, Ask ask) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = answers_.find(key); it != answers_.end()) return it->second;
    return answers_.emplace(key, ask()).first->second;
  }

 private:
  std::mutex mutex_;
  std::map<Key, std::string> answers_;
};

// The workspaces of one plan's runs: each run borrows one of `bytes` from the process's pool and
// gives it back when it is done, so concurrent runs never share one and steady-state runs
// fault in no pages.
class BufferPool {
 public:
  explicit BufferPool(size_t bytes) : bytes_(bytes) {}
  size_t bytes() const { return bytes_; }
  Buffer take() const { return allocate(bytes_); }
  // Bytes of workspace the runs of every plan of the process hold now (stax.memory_stats()).
  static size_t in_use_bytes();

 private:
  size_t bytes_;
};

}  // namespace stax::external::detail
