// A caching pool of large memory blocks (issue 16, point 4): the memory of the outputs Stax
// hands to PyTorch, kept across calls so that a model called in a loop stops mapping fresh
// pages for its outputs. PyTorch's CPU allocator gives a large tensor fresh pages on every
// call (glibc maps blocks above its mmap threshold anew and trims the others): a 64M-element
// add spent about half its time faulting in its output (105 ms on fresh pages, 49 ms on
// mapped ones, measured here).
//
// - Size buckets: a request is rounded up to one of eight sizes per power of two (at most
//   12.5% more), so outputs whose sizes vary a little (a last batch, a sequence length) share
//   blocks; a block is reused only for its own bucket.
// - Huge pages: a block of at least 2 MiB is 2 MiB aligned and advised as transparent huge
//   pages (MADV_HUGEPAGE), where the kernel allows them: one fault maps 2 MiB instead of 4 KiB.
// - Bounded: the pool keeps at most `max_cached_bytes` of freed blocks, and no more than half
//   the memory the system has available; a block that does not fit is freed.
// - Trimmed on memory pressure: when the system's available memory falls below a tenth of its
//   total, or an allocation fails, every cached block is freed (an allocation is then retried
//   once); trim() frees them on request.
// Thread-safe: blocks are given back from whichever thread frees the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace stax::runtime {

// What the system reports about its memory (for the pressure rule); tests substitute it.
struct MemoryInfo {
  int64_t total_bytes = 0;
  int64_t available_bytes = 0;
};
MemoryInfo system_memory();  // /proc/meminfo's MemTotal and MemAvailable (0, 0 if unreadable)

struct BlockPoolStats {
  int64_t cached_blocks = 0;
  int64_t cached_bytes = 0;
  int64_t hits = 0;              // requests served by a cached block
  int64_t misses = 0;            // requests that allocated
  int64_t huge_page_blocks = 0;  // blocks allocated with MADV_HUGEPAGE accepted
  int64_t trims = 0;             // times the cache was emptied (pressure, failure or trim())
};

class BlockPool {
 public:
  static constexpr size_t kHugePageBytes = size_t{2} << 20;
  static constexpr size_t kMinAlignment = 64;

  explicit BlockPool(size_t max_cached_bytes = size_t{4} << 30,
                     std::function<MemoryInfo()> memory = system_memory);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // The bytes a request of `bytes` takes: the bucket it is rounded up to.
  static size_t bucket_bytes(size_t bytes);

  // A block of bucket_bytes(bytes) bytes; throws std::bad_alloc when none can be had even
  // after freeing the cache.
  void* take(size_t bytes);
  // Gives back a block taken with `bytes` (the same request size, or its bucket).
  void give(void* block, size_t bytes);
  // Frees every cached block; returns the bytes freed.
  int64_t trim();
  BlockPoolStats stats();

 private:
  void* allocate(size_t bucket);
  int64_t trim_locked();
  // Whether the system is short of memory; MemoryInfo is read at most every 50 ms.
  bool under_pressure_locked(size_t* cache_limit);

  const size_t max_cached_bytes_;
  std::function<MemoryInfo()> memory_;
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // by bucket
  size_t cached_ = 0;
  BlockPoolStats stats_;
  int64_t last_check_ns_ = 0;
  MemoryInfo last_memory_;
};

}  // namespace stax::runtime
