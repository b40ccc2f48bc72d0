// The caching pool of large blocks (see block_pool.h).
#include "runtime/block_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <new>
#include <sstream>
#include <string>
#include <vector>

namespace stax::runtime {

MemoryInfo system_memory() {
  MemoryInfo info;
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    fields >> key >> kib;
    if (key == "MemTotal:") info.total_bytes = kib * 1024;
    if (key == "MemAvailable:") info.available_bytes = kib * 1024;
  }
  return info;
}

BlockPool::BlockPool(size_t max_cached_bytes, std::function<MemoryInfo()> memory)
    : max_cached_bytes_(max_cached_bytes), memory_(std::move(memory)) {}

BlockPool::~BlockPool() {
  trim();
}

size_t BlockPool::bucket_bytes(size_t bytes) {
  if (bytes <= kMinAlignment) return kMinAlignment;
  // Eight buckets per power of two: a multiple of 1/8 of the power of two below `bytes` (so at
  // most 12.5% above it), and of 64 bytes. Above 16 MiB the step is 2 MiB or more: whole
  // huge pages.
  const int top = std::bit_width(bytes - 1) - 1;  // 2^top < bytes <= 2^(top+1)
  const size_t step = std::max(top >= 3 ? size_t{1} << (top - 3) : size_t{1}, kMinAlignment);
  return (bytes + step - 1) / step * step;
}

void* BlockPool::allocate(size_t bucket, bool mapped) {
  if (!mapped) {
    void* block = nullptr;
    return posix_memalign(&block, kMinAlignment, bucket) == 0 ? block : nullptr;
  }
  const bool huge = bucket >= kHugePageBytes;
  // A huge-page block is cut out of a mapping one huge page larger, at its first 2 MiB
  // boundary; the ends are given back.
  const size_t span = huge ? bucket + kHugePageBytes : bucket;
  void* mapping = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return nullptr;
  char* block = static_cast<char*>(mapping);
  if (huge) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(mapping);
    const size_t head = (kHugePageBytes - at % kHugePageBytes) % kHugePageBytes;
    if (head > 0) munmap(mapping, head);
    block += head;
    if (span - head > bucket) munmap(block + bucket, span - head - bucket);
    // Transparent huge pages where the system grants them on request (its "madvise" mode,
    // this machine's); where it refuses (THP off) the block keeps ordinary pages.
    if (madvise(block, bucket, MADV_HUGEPAGE) == 0) ++stats_.huge_page_blocks;
  }
  return block;
}

void BlockPool::release(char* block, size_t bytes, bool mapped) {
  if (mapped) {
    munmap(block, bytes);
  } else {
    std::free(block);
  }
}

void* BlockPool::take(size_t bytes) {
  const size_t bucket = bucket_bytes(bytes);
  return take_bucket(bucket, bucket, nullptr);
}

void* BlockPool::take_at_least(size_t bytes, size_t* granted) {
  const size_t bucket = bucket_bytes(bytes);
  return take_bucket(bucket, 2 * bucket, granted);
}

void BlockPool::cache_locked(char* block, size_t bytes, bool mapped) {
  if (mapped) {
    // Merged with the cached mapped blocks right before and after it in memory.
    auto next = free_.lower_bound(block);
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->second.mapped && prev->first + prev->second.size == block) {
        block = prev->first;
        bytes += prev->second.size;
        uncache_locked(prev);
      }
    }
    next = free_.lower_bound(block + bytes);
    if (next != free_.end() && next->first == block + bytes && next->second.mapped) {
      bytes += next->second.size;
      uncache_locked(next);
    }
  }
  free_.emplace(block, Cached{bytes, next_order_++, mapped});
  free_sizes_.emplace(bytes, block);
  budgets_[mapped].cached += bytes;
}

void BlockPool::uncache_locked(FreeMap::iterator it) {
  auto [first, last] = free_sizes_.equal_range(it->second.size);
  for (auto s = first; s != last; ++s) {
    if (s->second == it->first) {
      free_sizes_.erase(s);
      break;
    }
  }
  budgets_[it->second.mapped].cached -= it->second.size;
  free_.erase(it);
}

BlockPool::FreeMap::iterator BlockPool::find_cached_locked(size_t bucket,
                                                           size_t largest_cached_bucket) {
  // Large requests take mapped blocks, small ones the C library's (a small piece left of a
  // mapped block waits to merge again).
  const bool large = bucket >= kSplitBytes;
  // The most recently cached block of the bucket (its lines may still be in cache).
  auto found = free_.end();
  auto [first, last] = free_sizes_.equal_range(bucket);
  for (auto s = first; s != last; ++s) {
    auto it = free_.find(s->second);
    if (it->second.mapped != large) continue;
    if (found == free_.end() || it->second.order > found->second.order) found = it;
  }
  if (found != free_.end()) return found;
  // Else the smallest larger block: any mapped one for a large request (cut to the bucket),
  // one of at most `largest_cached_bucket` for a small one.
  for (auto s = last; s != free_sizes_.end(); ++s) {
    if (!large && s->first > largest_cached_bucket) break;
    auto it = free_.find(s->second);
    if (it->second.mapped == large) return it;
  }
  return free_.end();
}

void* BlockPool::take_bucket(size_t bucket, size_t largest_cached_bucket, size_t* granted) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool large = bucket >= kSplitBytes;
  auto found = find_cached_locked(bucket, largest_cached_bucket);
  if (found != free_.end()) {
    char* block = found->first;
    const size_t size = found->second.size;
    const uint64_t order = found->second.order;
    uncache_locked(found);
    size_t handed = size;
    if (large && size > bucket) {
      // The head is handed out; the rest stays cached, as old as the block it was part of.
      handed = bucket;
      free_.emplace(block + bucket, Cached{size - bucket, order, true});
      free_sizes_.emplace(size - bucket, block + bucket);
      budgets_[1].cached += size - bucket;
      ++stats_.splits;
    }
    budgets_[large].live += handed;
    handed_.emplace(block, Handed{handed, large});
    ++stats_.hits;
    if (granted != nullptr) *granted = handed;
    return block;
  }
  if (large) {
    if (char* block = assemble_locked(bucket)) {
      Budget& b = budgets_[1];
      b.live += bucket;
      b.peak = std::max(b.peak, b.live);
      handed_.emplace(block, Handed{bucket, true});
      if (granted != nullptr) *granted = bucket;
      return block;
    }
  }
  ++stats_.misses;
  Budget& budget = budgets_[large];
  budget.peak = std::max(budget.peak, budget.live + bucket);
  evict_for_locked(bucket, large);
  void* block = allocate(bucket, large);
  if (block == nullptr && trim_locked() > 0) block = allocate(bucket, large);
  if (block == nullptr) throw std::bad_alloc();
  if (large) stats_.allocated_bytes += static_cast<int64_t>(bucket);
  budget.live += bucket;
  budget.peak = std::max(budget.peak, budget.live);  // a trim above restarted the bound
  handed_.emplace(block, Handed{bucket, large});
  if (granted != nullptr) *granted = bucket;
  return block;
}

char* BlockPool::assemble_locked(size_t bucket) {
  // The cached mapped blocks, largest first, until they cover the request (of the last only
  // its head).
  struct Piece {
    char* at;
    size_t bytes;
  };
  std::vector<Piece> pieces;
  size_t covered = 0;
  for (auto s = free_sizes_.rbegin(); s != free_sizes_.rend() && covered < bucket; ++s) {
    const Cached& c = free_.at(s->second);
    if (!c.mapped) continue;
    pieces.push_back({s->second, std::min(c.size, bucket - covered)});
    covered += pieces.back().bytes;
  }
  if (pieces.empty()) return nullptr;
  // A range of the request's size (2 MiB aligned from 2 MiB) reserved without memory, into
  // which the pieces' pages are moved.
  const bool huge = bucket >= kHugePageBytes;
  const size_t span = huge ? bucket + kHugePageBytes : bucket;
  void* reserved =
      mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) return nullptr;
  char* block = static_cast<char*>(reserved);
  if (huge) {
    const size_t head =
        (kHugePageBytes - reinterpret_cast<uintptr_t>(reserved) % kHugePageBytes) % kHugePageBytes;
    if (head > 0) munmap(reserved, head);
    block += head;
    if (span - head > bucket) munmap(block + bucket, span - head - bucket);
  }
  size_t moved = 0;
  for (const Piece& piece : pieces) {
    auto it = free_.find(piece.at);
    const Cached c = it->second;
    if (mremap(piece.at, piece.bytes, piece.bytes, MREMAP_MAYMOVE | MREMAP_FIXED, block + moved) ==
        MAP_FAILED) {
      break;  // the rest is mapped fresh below
    }
    uncache_locked(it);
    if (piece.bytes < c.size) {
      // The piece's tail stays cached where it was, as old as the block it was part of.
      free_.emplace(piece.at + piece.bytes, Cached{c.size - piece.bytes, c.order, true});
      free_sizes_.emplace(c.size - piece.bytes, piece.at + piece.bytes);
      budgets_[1].cached += c.size - piece.bytes;
    }
    moved += piece.bytes;
  }
  if (moved < bucket) {
    // Fresh pages for the rest: a miss, within the bound as any other.
    ++stats_.misses;
    budgets_[1].peak = std::max(budgets_[1].peak, budgets_[1].live + bucket);
    evict_for_locked(bucket, true);
    if (mmap(block + moved, bucket - moved, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
      munmap(block, bucket);  // the moved pages go with it: they were cached, not live
      return nullptr;
    }
    stats_.allocated_bytes += static_cast<int64_t>(bucket - moved);
  } else {
    ++stats_.hits;
  }
  ++stats_.assembled;
  if (huge && madvise(block, bucket, MADV_HUGEPAGE) == 0) ++stats_.huge_page_blocks;
  return block;
}

void BlockPool::evict_for_locked(size_t bucket, bool mapped) {
  Budget& b = budgets_[mapped];
  while (b.cached > 0 && b.live + bucket + b.cached > b.peak) {
    auto oldest = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second.mapped == mapped &&
          (oldest == free_.end() || it->second.order < oldest->second.order)) {
        oldest = it;
      }
    }
    char* block = oldest->first;
    const Cached c = oldest->second;
    const size_t over = b.live + bucket + b.cached - b.peak;
    uncache_locked(oldest);
    ++stats_.evictions;
    // Of a mapped block only the pages the bound needs, from its end; its head stays cached.
    const size_t page = 4096;
    const size_t freed = mapped ? std::min(c.size, (over + page - 1) / page * page) : c.size;
    if (freed < c.size) {
      munmap(block + (c.size - freed), freed);
      free_.emplace(block, Cached{c.size - freed, c.order, true});
      free_sizes_.emplace(c.size - freed, block);
      b.cached += c.size - freed;
    } else {
      release(block, c.size, mapped);
    }
  }
}

size_t BlockPool::cached_bytes_locked() const {
  return budgets_[0].cached + budgets_[1].cached;
}

void BlockPool::refresh_memory_info() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_check_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now - last <= 50'000'000) return;
  // One thread reads, the others go on with the last reading: reading /proc/meminfo takes tens
  // of microseconds, which under the mutex made the threads giving blocks back wait (perf).
  if (!last_check_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  const MemoryInfo info = memory_();
  std::lock_guard<std::mutex> lock(mutex_);
  last_memory_ = info;
}

bool BlockPool::under_pressure_locked(size_t* cache_limit) {
  *cache_limit = max_cached_bytes_;
  if (last_memory_.total_bytes <= 0) return false;  // nothing known: the fixed bound only
  *cache_limit = std::min(*cache_limit, static_cast<size_t>(last_memory_.available_bytes / 2));
  return last_memory_.available_bytes < last_memory_.total_bytes / 10;
}

bool BlockPool::give(void* block, size_t* given_bucket) {
  if (given_bucket != nullptr) *given_bucket = 0;
  if (block == nullptr) return true;
  refresh_memory_info();
  size_t bytes = 0;
  bool mapped = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto handed = handed_.find(block);
    if (handed == handed_.end()) return false;
    bytes = handed->second.size;
    mapped = handed->second.mapped;
    if (given_bucket != nullptr) *given_bucket = bytes;
    handed_.erase(handed);
    budgets_[mapped].live -= bytes;
    size_t limit = 0;
    if (under_pressure_locked(&limit)) {
      trim_locked();
    } else if (cached_bytes_locked() + bytes <= limit) {
      // The footprint is unchanged (the block moves from handed out to cached), so the bound
      // the misses keep still holds.
      cache_locked(static_cast<char*>(block), bytes, mapped);
      return true;
    }
  }
  release(static_cast<char*>(block), bytes, mapped);
  return true;
}

int64_t BlockPool::trim_locked() {
  const auto freed = static_cast<int64_t>(cached_bytes_locked());
  for (auto& [block, cached] : free_) release(block, cached.size, cached.mapped);
  free_.clear();
  free_sizes_.clear();
  for (Budget& b : budgets_) {
    b.cached = 0;
    b.peak = b.live;
  }
  if (freed > 0) ++stats_.trims;
  return freed;
}

int64_t BlockPool::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  return trim_locked();
}

BlockPoolStats BlockPool::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  BlockPoolStats s = stats_;
  s.cached_blocks = static_cast<int64_t>(free_.size());
  s.cached_bytes = static_cast<int64_t>(cached_bytes_locked());
  s.live_bytes = static_cast<int64_t>(budgets_[0].live + budgets_[1].live);
  s.peak_live_bytes = static_cast<int64_t>(budgets_[0].peak + budgets_[1].peak);
  return s;
}

BlockPool& process_block_pool() {
  static auto* pool = new BlockPool();
  return *pool;
}

void* process_pool_take(int64_t nbytes, int at_least) {
  if (nbytes < 0) return nullptr;
  try {
    const auto bytes = static_cast<size_t>(nbytes);
    return at_least != 0 ? process_block_pool().take_at_least(bytes, nullptr)
                         : process_block_pool().take(bytes);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void process_pool_give(void* block) {
  // A block the pool did not hand out cannot reach here: the programs give back only what
  // process_pool_take returned.
  process_block_pool().give(block);
}

}  // namespace stax::runtime
