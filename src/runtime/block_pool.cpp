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

void* BlockPool::allocate(size_t bucket) {
  const bool huge = bucket >= kHugePageBytes;
  void* block = nullptr;
  if (posix_memalign(&block, huge ? kHugePageBytes : kMinAlignment, bucket) != 0) return nullptr;
  // Transparent huge pages where the system grants them on request (its "madvise" mode, this
  // machine's); where it refuses (THP off) the block keeps ordinary pages.
  if (huge && madvise(block, bucket, MADV_HUGEPAGE) == 0) ++stats_.huge_page_blocks;
  return block;
}

void* BlockPool::take(size_t bytes) {
  const size_t bucket = bucket_bytes(bytes);
  return take_bucket(bucket, bucket, nullptr);
}

void* BlockPool::take_at_least(size_t bytes, size_t* granted) {
  const size_t bucket = bucket_bytes(bytes);
  return take_bucket(bucket, 2 * bucket, granted);
}

void* BlockPool::take_bucket(size_t bucket, size_t largest_cached_bucket, size_t* granted) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The most recently freed block of the bucket (its lines may still be in cache), else the
  // smallest cached bucket above it that the caller accepts.
  auto [first, last] = free_.equal_range(bucket);
  auto found = free_.end();
  if (first != last) {
    found = std::prev(last);
  } else if (last != free_.end() && last->first <= largest_cached_bucket) {
    found = last;
  }
  if (found != free_.end()) {
    const size_t size = found->first;
    void* block = found->second.block;
    free_.erase(found);
    cached_ -= size;
    live_ += size;
    handed_.emplace(block, size);
    ++stats_.hits;
    if (granted != nullptr) *granted = size;
    return block;
  }
  ++stats_.misses;
  peak_live_ = std::max(peak_live_, live_ + bucket);
  evict_for_locked(bucket);
  void* block = allocate(bucket);
  if (block == nullptr && trim_locked() > 0) block = allocate(bucket);
  if (block == nullptr) throw std::bad_alloc();
  live_ += bucket;
  peak_live_ = std::max(peak_live_, live_);  // a trim above restarted the bound
  handed_.emplace(block, bucket);
  if (granted != nullptr) *granted = bucket;
  return block;
}

void BlockPool::evict_for_locked(size_t bucket) {
  while (!free_.empty() && live_ + bucket + cached_ > peak_live_) {
    auto oldest = free_.begin();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second.order < oldest->second.order) oldest = it;
    }
    std::free(oldest->second.block);
    cached_ -= oldest->first;
    free_.erase(oldest);
    ++stats_.evictions;
  }
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto handed = handed_.find(block);
    if (handed == handed_.end()) return false;
    const size_t bucket = handed->second;
    if (given_bucket != nullptr) *given_bucket = bucket;
    handed_.erase(handed);
    live_ -= bucket;
    size_t limit = 0;
    if (under_pressure_locked(&limit)) {
      trim_locked();
    } else if (cached_ + bucket <= limit) {
      // The footprint is unchanged (the block moves from handed out to cached), so the bound
      // the misses keep still holds.
      free_.emplace(bucket, Cached{block, next_order_++});
      cached_ += bucket;
      return true;
    }
  }
  std::free(block);
  return true;
}

int64_t BlockPool::trim_locked() {
  const auto freed = static_cast<int64_t>(cached_);
  for (auto& [bucket, cached] : free_) std::free(cached.block);
  free_.clear();
  cached_ = 0;
  peak_live_ = live_;
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
  s.cached_bytes = static_cast<int64_t>(cached_);
  s.live_bytes = static_cast<int64_t>(live_);
  s.peak_live_bytes = static_cast<int64_t>(peak_live_);
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
