// The process's pool of large blocks (issue 16, point 4; issue 32, point 4;
// runtime/block_pool.h): buckets at most 12.5% above a request, reuse within a bucket, the
// footprint bounded by the most handed out at once, large requests served by pieces of cached
// blocks, by merged ones and by cached pages moved together, partial eviction, the
// bound on cached bytes (fixed and half the available memory), trimming under memory pressure
// and on request, and huge pages for large blocks where the system grants them.
#include "runtime/block_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <future>
#include <random>
#include <sstream>
#include <string>
#include <thread>

namespace stax::runtime {
namespace {

MemoryInfo plenty() {
  return {int64_t{64} << 30, int64_t{32} << 30};
}

TEST(BlockPool, BucketsHoldTheRequestWithinAnEighth) {
  std::mt19937_64 rng(1);
  for (int k = 0; k < 100000; ++k) {
    const size_t bytes = static_cast<size_t>(rng() % (size_t{1} << (rng() % 34)));
    const size_t bucket = BlockPool::bucket_bytes(bytes);
    ASSERT_GE(bucket, bytes);
    ASSERT_EQ(bucket % BlockPool::kMinAlignment, 0u);
    // Below 512 bytes the step is 64 (and 0 bytes take 64).
    const size_t whole_lines = std::max<size_t>((bytes + 63) / 64 * 64, 64);
    ASSERT_LE(bucket, std::max<size_t>(bytes + bytes / 8, whole_lines)) << bytes;
    ASSERT_EQ(BlockPool::bucket_bytes(bucket), bucket) << "a bucket is its own bucket";
    if (bytes > (size_t{16} << 20)) {
      ASSERT_EQ(bucket % BlockPool::kHugePageBytes, 0u);
    }
  }
  // Sizes a few percent apart share a bucket.
  EXPECT_EQ(BlockPool::bucket_bytes(1000000), BlockPool::bucket_bytes(1030000));
}

TEST(BlockPool, AGivenBlockServesTheNextRequestOfItsBucket) {
  BlockPool pool(size_t{1} << 30, plenty);
  void* a = pool.take(1000000);
  std::memset(a, 1, BlockPool::bucket_bytes(1000000));
  pool.give(a);
  EXPECT_EQ(pool.stats().cached_blocks, 1);
  void* b = pool.take(1030000);  // same bucket
  EXPECT_EQ(a, b);
  void* c = pool.take(1000000);  // the block is taken: a new one
  EXPECT_NE(c, b);
  const BlockPoolStats s = pool.stats();
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.misses, 2);
  pool.give(b);
  pool.give(c);
  // Both cached (as one block where the two lie side by side in memory).
  EXPECT_EQ(pool.stats().cached_bytes, 2 * static_cast<int64_t>(BlockPool::bucket_bytes(1000000)));
}

// Live plus cached bytes, which the rule keeps within the peak handed out.
int64_t footprint(BlockPool& pool) {
  const BlockPoolStats s = pool.stats();
  return s.live_bytes + s.cached_bytes;
}

// A training step's pattern: the forward takes two activations, the backward gives them back
// one by one while it takes the gradient, and the next step drops the gradient first. The
// activations and the gradient are never all handed out at once, so the pool never holds all
// of them: at the peak nothing sits cached (without the rule it held 14 MiB against a 10 MiB
// peak, the gradient's block cached through the forward).
TEST(BlockPool, TheFootprintNeverExceedsTheMostHandedOutAtOnce) {
  BlockPool pool(size_t{1} << 30, plenty);
  const size_t activation = size_t{4} << 20, gradient = size_t{6} << 20;
  ASSERT_EQ(BlockPool::bucket_bytes(activation), activation);
  ASSERT_EQ(BlockPool::bucket_bytes(gradient), gradient);
  void* grad = nullptr;
  int64_t most = 0;
  for (int step = 0; step < 4; ++step) {
    if (grad != nullptr) pool.give(grad);
    void* a1 = pool.take(activation);
    void* a2 = pool.take(activation);
    most = std::max(most, footprint(pool));
    pool.give(a1);
    grad = pool.take(gradient);
    most = std::max(most, footprint(pool));
    EXPECT_EQ(pool.stats().cached_bytes, 0) << "step " << step << ": cached beside the peak";
    pool.give(a2);
    const BlockPoolStats s = pool.stats();
    EXPECT_EQ(s.peak_live_bytes, static_cast<int64_t>(activation + gradient));
    EXPECT_LE(s.live_bytes + s.cached_bytes, s.peak_live_bytes) << "step " << step;
  }
  EXPECT_EQ(most, static_cast<int64_t>(activation + gradient));
  // After the first step every request is served from pages the pool already has: the
  // gradient's block is the activation's pages moved together, not fresh memory.
  EXPECT_EQ(pool.stats().allocated_bytes, static_cast<int64_t>(activation + gradient));
  // What fits is still reused: one activation given and taken again is a hit.
  const int64_t hits = pool.stats().hits;
  pool.give(pool.take(activation));
  pool.give(pool.take(activation));
  EXPECT_GE(pool.stats().hits, hits + 1);
  pool.give(grad);
}

// A large request takes the head of a larger cached block and leaves the rest cached; blocks
// given back merge with their cached neighbours, so the whole block serves a request of its
// size again. Small blocks (the C library's) take a cached block of up to twice their bucket
// only through take_at_least, never a larger one.
TEST(BlockPool, LargeRequestsTakePiecesAndGivenBlocksMerge) {
  BlockPool pool(size_t{1} << 30, plenty);
  const size_t big = size_t{6} << 20;
  char* block = static_cast<char*>(pool.take(big));
  pool.give(block);
  size_t granted = 0;
  void* arena = pool.take_at_least(size_t{4} << 20, &granted);
  EXPECT_EQ(arena, block);
  EXPECT_EQ(granted, size_t{4} << 20);
  void* rest = pool.take(size_t{2} << 20);
  EXPECT_EQ(rest, block + (size_t{4} << 20));
  BlockPoolStats s = pool.stats();
  EXPECT_EQ(s.hits, 2);
  EXPECT_EQ(s.splits, 1);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.cached_bytes, 0);
  pool.give(arena);
  pool.give(rest);
  s = pool.stats();
  EXPECT_EQ(s.cached_blocks, 1);
  EXPECT_EQ(s.cached_bytes, static_cast<int64_t>(big));
  EXPECT_EQ(pool.take(big), block);
  pool.give(block);

  const size_t small = size_t{16} << 10;
  ASSERT_LT(small, BlockPool::kSplitBytes);
  void* s16 = pool.take(small);
  pool.give(s16);
  EXPECT_EQ(pool.take_at_least(size_t{10} << 10, &granted), s16);
  EXPECT_EQ(granted, small);
  pool.give(s16);
  const int64_t misses = pool.stats().misses;
  void* own = pool.take(size_t{10} << 10);  // a plain take wants its own bucket
  EXPECT_EQ(pool.stats().misses, misses + 1);
  pool.give(own);
}

// A large request no single cached block serves takes the pages of the cached blocks, moved
// side by side (their contents come along: no fresh, zeroed page), and only what they do not
// cover is fresh memory.
TEST(BlockPool, ALargeRequestIsAssembledFromCachedPages) {
  BlockPool pool(size_t{1} << 30, plenty);
  const size_t part = size_t{4} << 20;
  char* a = static_cast<char*>(pool.take(part));
  char* b = static_cast<char*>(pool.take(part));
  char* c = static_cast<char*>(pool.take(part));
  std::memset(a, 1, part);
  std::memset(c, 2, part);
  pool.give(a);
  pool.give(c);  // b, still handed out, keeps a and c apart
  const int64_t allocated = pool.stats().allocated_bytes;
  char* joined = static_cast<char*>(pool.take(2 * part));
  BlockPoolStats s = pool.stats();
  EXPECT_EQ(s.allocated_bytes, allocated) << "fresh memory for a request the cache covers";
  EXPECT_EQ(s.assembled, 1);
  EXPECT_EQ(s.cached_bytes, 0);
  int64_t ones = 0, twos = 0;
  for (size_t i = 0; i < 2 * part; i += 4096) {
    ones += joined[i] == 1;
    twos += joined[i] == 2;
  }
  EXPECT_EQ(ones, static_cast<int64_t>(part / 4096));
  EXPECT_EQ(twos, static_cast<int64_t>(part / 4096));
  std::memset(joined, 3, 2 * part);  // the whole range is writable memory
  // Wider than the cache holds: its pages and fresh ones for the rest.
  pool.give(joined);
  char* wider = static_cast<char*>(pool.take(3 * part));
  s = pool.stats();
  EXPECT_EQ(s.assembled, 2);
  EXPECT_EQ(s.allocated_bytes, allocated + static_cast<int64_t>(part));
  EXPECT_LE(s.live_bytes + s.cached_bytes, s.peak_live_bytes);
  std::memset(wider, 4, 3 * part);
  pool.give(wider);
  pool.give(b);
}

// The bound is kept for large (mapped) and small blocks apart: a small request that misses
// never frees a page of a cached large block, which a later large request would have to fault
// in again, and a large one never frees a small block.
TEST(BlockPool, SmallAndLargeBlocksKeepTheirBoundsApart) {
  BlockPool pool(size_t{1} << 30, plenty);
  const size_t big = size_t{4} << 20, small = size_t{32} << 10;
  ASSERT_LT(small, BlockPool::kSplitBytes);
  pool.give(pool.take(big));
  void* s32 = pool.take(small);
  BlockPoolStats s = pool.stats();
  EXPECT_EQ(s.evictions, 0);
  EXPECT_EQ(s.cached_bytes, static_cast<int64_t>(big));
  EXPECT_EQ(s.peak_live_bytes, static_cast<int64_t>(big + small));
  pool.give(s32);
  const int64_t allocated = pool.stats().allocated_bytes;
  pool.give(pool.take(big));
  s = pool.stats();
  EXPECT_EQ(s.allocated_bytes, allocated) << "the large block's pages stayed cached";
  EXPECT_EQ(s.cached_bytes, static_cast<int64_t>(big + small));
  EXPECT_LE(s.live_bytes + s.cached_bytes, s.peak_live_bytes);
}

TEST(BlockPool, ABlockThePoolDidNotHandOutIsLeftAlone) {
  BlockPool pool(size_t{1} << 30, plenty);
  int local = 0;
  EXPECT_FALSE(pool.give(&local));
  EXPECT_TRUE(pool.give(nullptr));
  EXPECT_EQ(pool.stats().cached_blocks, 0);
}

TEST(BlockPool, TrimRestartsTheBoundFromWhatIsHandedOut) {
  BlockPool pool(size_t{1} << 30, plenty);
  void* a = pool.take(size_t{8} << 20);
  void* b = pool.take(size_t{1} << 20);
  pool.give(a);
  EXPECT_EQ(pool.stats().peak_live_bytes, int64_t{9} << 20);
  pool.trim();
  EXPECT_EQ(pool.stats().peak_live_bytes, int64_t{1} << 20);
  pool.give(b);
}

TEST(BlockPool, CachedBytesStayWithinTheBound) {
  BlockPool pool(size_t{2} << 20, plenty);  // 2 MiB
  const size_t bytes = 768 << 10;
  void* blocks[3] = {pool.take(bytes), pool.take(bytes), pool.take(bytes)};
  for (void* b : blocks) pool.give(b);
  const BlockPoolStats s = pool.stats();
  EXPECT_EQ(s.cached_bytes, 2 * static_cast<int64_t>(bytes));  // the third did not fit
  EXPECT_LE(s.cached_bytes, int64_t{2} << 20);
  // Half the available memory bounds the cache too.
  BlockPool tight(size_t{1} << 30, [] { return MemoryInfo{int64_t{20} << 20, int64_t{3} << 20}; });
  void* x = tight.take(1 << 20);
  void* y = tight.take(1 << 20);
  tight.give(x);
  tight.give(y);
  EXPECT_EQ(tight.stats().cached_bytes, int64_t{1} << 20);  // 1.5 MiB allowed
}

TEST(BlockPool, MemoryPressureAndTrimEmptyTheCache) {
  int64_t available = int64_t{50} << 20;
  BlockPool pool(size_t{1} << 30, [&] { return MemoryInfo{int64_t{100} << 20, available}; });
  void* a = pool.take(1 << 20);
  void* b = pool.take(1 << 20);
  pool.give(a);
  EXPECT_EQ(pool.stats().cached_blocks, 1);
  available = int64_t{5} << 20;  // below a tenth of the total
  // The pool reads the system's memory at most every 50 ms.
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  pool.give(b);
  BlockPoolStats s = pool.stats();
  EXPECT_EQ(s.cached_blocks, 0);
  EXPECT_EQ(s.trims, 1);
  available = int64_t{50} << 20;
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  pool.give(pool.take(1 << 20));
  EXPECT_EQ(pool.stats().cached_blocks, 1);
  EXPECT_GT(pool.trim(), 0);
  EXPECT_EQ(pool.stats().cached_bytes, 0);
}

// The system's memory is read outside the pool's mutex (a /proc/meminfo read takes tens of
// microseconds, which under the mutex made every thread giving a block back wait): while the
// reading runs, another thread can use the pool.
TEST(BlockPool, TheSystemsMemoryIsReadOutsideTheLock) {
  BlockPool* pool_seen = nullptr;
  bool other_thread_waited = false;
  // Kept outside the reading, so that a reading under the mutex makes the test fail, not hang
  // (a future from std::async waits for its thread when destroyed).
  std::future<BlockPoolStats> other;
  BlockPool pool(size_t{1} << 30, [&] {
    if (pool_seen != nullptr) {
      other = std::async(std::launch::async, [&] { return pool_seen->stats(); });
      other_thread_waited = other.wait_for(std::chrono::seconds(2)) != std::future_status::ready;
    }
    return MemoryInfo{int64_t{100} << 20, int64_t{50} << 20};
  });
  pool_seen = &pool;
  pool.give(pool.take(1 << 20));  // the first give reads the system's memory
  ASSERT_TRUE(other.valid());
  other.get();
  EXPECT_FALSE(other_thread_waited);
  EXPECT_EQ(pool.stats().cached_blocks, 1);
}

// The system's transparent huge page mode: "always", "madvise" or "never".
std::string huge_page_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const size_t open = line.find('['), close = line.find(']');
  return open == std::string::npos ? "never" : line.substr(open + 1, close - open - 1);
}

// Kilobytes of huge pages backing the mapping that holds `address` (/proc/self/smaps).
int64_t anon_huge_kib(const void* address) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  const auto at = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  while (std::getline(in, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      std::istringstream fields(line.substr(14));
      int64_t kib = 0;
      fields >> kib;
      return kib;
    }
  }
  return 0;
}

TEST(BlockPool, LargeBlocksAreHugePageAlignedAndAdvised) {
  BlockPool pool(size_t{1} << 30, plenty);
  const size_t bytes = size_t{8} << 20;
  void* block = pool.take(bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % BlockPool::kHugePageBytes, 0u);
  std::memset(block, 1, bytes);  // fault the pages in
  const std::string mode = huge_page_mode();
  SCOPED_TRACE("transparent huge pages: " + mode);
  if (mode == "never") {
    EXPECT_EQ(anon_huge_kib(block), 0);  // the system refuses them: ordinary pages
  } else {
    EXPECT_EQ(pool.stats().huge_page_blocks, 1);
    EXPECT_GT(anon_huge_kib(block), 0) << "no huge page backs the advised block";
  }
  pool.give(block);
}

}  // namespace
}  // namespace stax::runtime
