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
  std::lock_guard<std::mutex> lock(mutex_);
  // The most recently freed block of the bucket: its lines may still be in cache.
  auto [first, last] = free_.equal_range(bucket);
  if (first != last) {
    auto it = std::prev(last);
    void* block = it->second;
    free_.erase(it);
    cached_ -= bucket;
    ++stats_.hits;
    return block;
  }
  ++stats_.misses;
  void* block = allocate(bucket);
  if (block == nullptr && trim_locked() > 0) block = allocate(bucket);
  if (block == nullptr) throw std::bad_alloc();
  return block;
}

bool BlockPool::under_pressure_locked(size_t* cache_limit) {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (last_check_ns_ == 0 || now - last_check_ns_ > 50'000'000) {
    last_memory_ = memory_();
    last_check_ns_ = now;
  }
  *cache_limit = max_cached_bytes_;
  if (last_memory_.total_bytes <= 0) return false;  // nothing known: the fixed bound only
  *cache_limit = std::min(*cache_limit, static_cast<size_t>(last_memory_.available_bytes / 2));
  return last_memory_.available_bytes < last_memory_.total_bytes / 10;
}

void BlockPool::give(void* block, size_t bytes) {
  if (block == nullptr) return;
  const size_t bucket = bucket_bytes(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t limit = 0;
    if (under_pressure_locked(&limit)) {
      trim_locked();
    } else if (cached_ + bucket <= limit) {
      free_.emplace(bucket, block);
      cached_ += bucket;
      return;
    }
  }
  std::free(block);
}

int64_t BlockPool::trim_locked() {
  const auto freed = static_cast<int64_t>(cached_);
  for (auto& [bucket, block] : free_) std::free(block);
  free_.clear();
  cached_ = 0;
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
  return s;
}

}  // namespace stax::runtime
