// A caching pool of large memory blocks (issue 16, point 4; issue 32, point 4): the memory of
// the outputs Stax hands to PyTorch, of the loaded programs' arenas and of their large scratch
// blocks, kept across calls so that a model called in a loop stops mapping fresh pages. PyTorch's
// CPU allocator gives a large tensor fresh pages on every call (glibc maps blocks above its mmap
// threshold anew and trims the others): a 64M-element add spent about half its time faulting in its
// output (105 ms on fresh pages, 49 ms on mapped ones, measured here).
//
// - Size buckets: a request is rounded up to one of eight sizes per power of two (at most
//   12.5% more), so outputs whose sizes vary a little (a last batch, a sequence length) share
//   blocks.
// - Large blocks (64 KiB and more) are mapped by the pool itself, so that their pages can be
//   cut, joined and moved:
//   - a request whose bucket has no cached block takes the head of the smallest larger cached
//     block (the rest stays cached);
//   - a block given back merges with the cached blocks next to it in memory;
//   - a request no cached block covers takes the pages of cached blocks, largest first,
//     moved side by side into a new range (mremap: page tables move, no page is faulted or
//     zeroed), and fresh memory only for what they do not cover.
//   So a workload whose sizes differ from one moment to the next (a training step:
//   activations, then gradients of other sizes) stops freeing some pages and faulting in
//   others. Measured on ViT-B/16's training step (2 layers, batch 2, Intel Xeon with AMX, a VM
//   where fresh pages are slow): with reuse within a bucket only, 48 of 89 requests per step
//   freed cached blocks and mapped fresh memory and the steps took 160-480 ms, the faults
//   landing inside oneDNN's calls (a 1.2 MB reorder measured 0.1-63 ms); now no fresh byte is
//   mapped after the first step and the steps take 153-211 ms, with the same 82 MiB footprint.
//   Smaller blocks come from the C library, reused within their bucket only.
// - Huge pages: a fresh block of at least 2 MiB is 2 MiB aligned and advised as transparent
//   huge pages (MADV_HUGEPAGE), where the kernel allows them: one fault maps 2 MiB instead of
//   4 KiB. (A piece of a block keeps the pages it was mapped with.)
// - Bounded by what the workload takes again: the pool's footprint (blocks handed out plus
//   blocks cached) never exceeds the most it has had handed out at once (since the last trim),
//   for large and for small blocks apart (a small block never takes a page of a large one).
//   A request the cache cannot serve first frees the least recently cached blocks as far as
//   needed (of a large block only as much as needed, from its end), so at the moment the workload
//   holds the most, nothing sits cached beside it: the pool adds nothing to the process's peak over
//   what the same tensors would take from the C library. (A training step's gradients and
//   activations are never live together: without the rule the pool held both sets, 120 MiB over the
//   default backend on BERT at batch 8.)
// - Also bounded by `max_cached_bytes` and by half the memory the system has available; a
//   block that does not fit is freed.
// - One pool per process (process_block_pool()): outputs, arenas and scratch share its
//   blocks and its bound, so programs that never run at the same time (a forward and its
//   backward) reuse one another's memory: an arena takes a piece of the cached block a
//   program of the other kind gave back.
// - Trimmed on memory pressure: when the system's available memory falls below a tenth of its
//   total, or an allocation fails, every cached block is freed (an allocation is then retried
//   once); trim() frees them on request.
// Thread-safe: blocks are given back from whichever thread frees the tensor.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

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
  int64_t live_bytes = 0;        // handed out and not given back
  int64_t peak_live_bytes = 0;   // the most handed out at once since the last trim: the bound
                                 // (kept for large and small blocks apart: the sum)
  int64_t evictions = 0;         // cached blocks freed to keep the footprint within that bound
  int64_t splits = 0;            // hits served by the head of a larger cached block
  int64_t allocated_bytes = 0;   // fresh memory the misses of large blocks mapped (to fault in)
  int64_t assembled = 0;         // large requests served by cached blocks' pages moved together
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

  // Blocks of this size and more are mapped by the pool and split and merged (see above).
  static constexpr size_t kSplitBytes = size_t{64} << 10;

  // A block of bucket_bytes(bytes) bytes; throws std::bad_alloc when none can be had even
  // after freeing the cache.
  void* take(size_t bytes);
  // A block of at least `bytes` bytes: take()'s for large blocks (a piece of a larger cached
  // block is cut to the bucket); for smaller ones a cached block of its bucket, else the
  // smallest cached one of at most twice that, else a new one. `*granted` (if not null) gets
  // its size.
  void* take_at_least(size_t bytes, size_t* granted);
  // Gives back a block from take or take_at_least; `*bucket` (if not null) gets its size. A
  // block the pool did not hand out is left alone (false).
  bool give(void* block, size_t* bucket = nullptr);
  // Frees every cached block and restarts the bound from what is handed out now; returns the
  // bytes freed.
  int64_t trim();
  BlockPoolStats stats();

 private:
  struct Cached {
    size_t size;
    uint64_t order;  // when it was cached: the oldest are freed first
    bool mapped;     // mapped by the pool (kSplitBytes and more): split, merged, unmapped
  };
  using FreeMap = std::map<char*, Cached>;

  // A fresh block of `bucket` bytes (nullptr when the system has none).
  void* allocate(size_t bucket, bool mapped);
  static void release(char* block, size_t bytes, bool mapped);
  // A block of `bucket`, or a cached one of up to `largest_cached_bucket` (small blocks); its
  // size to *granted.
  void* take_bucket(size_t bucket, size_t largest_cached_bucket, size_t* granted);
  // A large request no single cached block serves: the pages of cached mapped blocks moved
  // (mremap) side by side into a new range, the rest mapped fresh (a miss, within the bound);
  // nullptr when nothing is cached or the system refuses.
  char* assemble_locked(size_t bucket);
  // The cached block a request of `bucket` takes, or free_.end().
  FreeMap::iterator find_cached_locked(size_t bucket, size_t largest_cached_bucket);
  void cache_locked(char* block, size_t bytes, bool mapped);
  void uncache_locked(FreeMap::iterator it);
  // Frees the least recently cached blocks of the kind (mapped or not) until a new block of
  // `bucket` keeps that kind's footprint within its bound.
  void evict_for_locked(size_t bucket, bool mapped);
  int64_t trim_locked();
  // Reads MemoryInfo when the last reading is over 50 ms old, outside the mutex.
  void refresh_memory_info();
  // Whether the system is short of memory, by the last reading.
  bool under_pressure_locked(size_t* cache_limit);

  const size_t max_cached_bytes_;
  std::function<MemoryInfo()> memory_;
  std::mutex mutex_;
  FreeMap free_;                             // cached blocks by address
  std::multimap<size_t, char*> free_sizes_;  // the same by size
  struct Handed {
    size_t size;
    bool mapped;
  };
  std::unordered_map<void*, Handed> handed_;  // blocks handed out
  // The bound, kept for the pool's mapped blocks and for the C library's apart (so a small
  // block never takes a page a large request will want again): bytes handed out, cached, and
  // the most handed out at once since the last trim.
  struct Budget {
    size_t live = 0, cached = 0, peak = 0;
  };
  Budget budgets_[2];  // [mapped]
  size_t cached_bytes_locked() const;
  uint64_t next_order_ = 0;
  BlockPoolStats stats_;
  std::atomic<int64_t> last_check_ns_{0};
  MemoryInfo last_memory_;  // under the mutex
};

// The process's pool (never destroyed: PyTorch may free a pooled tensor during exit).
BlockPool& process_block_pool();

// The pool as the loaded programs call it (stax_use_process_pool in stax_kernel_scratch.h):
// a block of at least `nbytes` bytes (take_at_least when `at_least` is nonzero) or NULL,
// never an exception across the C boundary; and its return.
void* process_pool_take(int64_t nbytes, int at_least);
void process_pool_give(void* block);

}  // namespace stax::runtime
