// Scratch memory of a generated program's intermediates (stax_alloc / stax_free), kept
// across calls, and the arena of a program's intermediates (stax_arena_acquire /
// stax_arena_release). A program allocates the same intermediates on every call; handing each large
// one back to the C library on free made every call fault in fresh pages for all of them
// (glibc maps large blocks and unmaps them on free): a third of a bfloat16 training step of
// BERT went to the kernel's page-fault and unmap paths. Freed blocks of at least
// kStaxScratchCachedBytes are kept here instead, keyed by size, and the next call of the
// program takes them back: its pages are already mapped. This is the first step towards
// Section 7.5's arena (one block per program, offsets planned at compile time), which will
// replace it where the program has an arena (program/plan_arena.cpp).
//
// The arena: one block of the program's fixed arena size per concurrent call. A call takes a
// kept block (its pages already mapped) or allocates one, and gives it back when it returns;
// at most kArenaSlots blocks are kept, so calls from many threads at once each get their own
// block and the extra ones are freed.
//
// The process's pool (issue 32, point 4): the runtime that loads a program hands it its block
// pool (stax_use_process_pool, runtime/block_pool.h) before the first call. The program then
// keeps nothing of its own: its arena and its large scratch blocks come from that pool and go
// back to it after each call, so programs that never run at the same time (a forward and its
// backward) share memory, and one bound covers every program and the outputs. The caches
// below serve a program loaded without that runtime.
//
// What a program holds (its arena blocks, kept and in use; its scratch blocks, cached and live)
// is what stax_memory_held reports, which the runtime sums over the loaded programs
// (driver/memory_stats.h, stax.memory_stats()).
//
// One cache per loaded program (the state is static to the program's translation unit), so
// it holds at most the bytes that the program's own calls freed, bounded by
// kStaxScratchCacheLimit, and is given back when the program is unloaded. Small blocks go
// straight to the C library, whose free lists already reuse them without faults.
#ifndef STAX_KERNEL_SCRATCH_H_
#define STAX_KERNEL_SCRATCH_H_

#include <cstdint>
#include <cstdlib>

#include "stax_kernel_abi.h"  // STAX_KERNEL_EXPORT

extern "C" {
/* The runtime's block pool: a block of at least `nbytes` bytes, 64-byte aligned (a cached one
 * of up to twice that when `at_least` is nonzero), or NULL; and its return. */
typedef void* (*StaxPoolTakeFn)(int64_t nbytes, int at_least);
typedef void (*StaxPoolGiveFn)(void* block);
}

namespace stax::scratch {
namespace {  // each program its own cache: nothing shared across loaded programs

constexpr size_t kAlignment = 64;
constexpr size_t kHeaderBytes = 64;  // the block's size, kept before its first byte
constexpr size_t kCachedBytes = size_t{1} << 16;
constexpr size_t kCacheLimit = size_t{1} << 31;
constexpr int kCacheSlots = 256;

struct Cache {
  volatile bool locked;  // a spin lock: allocation happens between kernels, not inside them
  int count;
  size_t cached_bytes;
  size_t live_bytes;          // handed out by stax_alloc and not yet freed (atomic updates)
  void* blocks[kCacheSlots];  // the block addresses (header included)
  size_t sizes[kCacheSlots];  // their usable sizes
};

inline Cache& cache() {
  static Cache c = {};
  return c;
}

struct Lock {
  Lock() {
    while (__atomic_test_and_set(&cache().locked, __ATOMIC_ACQUIRE)) {
    }
  }
  ~Lock() { __atomic_clear(&cache().locked, __ATOMIC_RELEASE); }
};

constexpr int kArenaSlots = 8;

// The runtime's pool, when the loader supplied it (see stax_use_process_pool).
struct ProcessPool {
  StaxPoolTakeFn take;
  StaxPoolGiveFn give;
};

inline ProcessPool& process_pool() {
  static ProcessPool p = {};
  return p;
}

// Without the process's pool the blocks are kept here. A program over size symbols (issue 33)
// asks for a different size per call: each block carries its size in a header, and a call
// takes a kept block at least as large as it needs.
struct ArenaPool {
  volatile bool locked;
  int count;
  void* blocks[kArenaSlots];  // kept blocks (their headers)
  size_t sizes[kArenaSlots];  // and their sizes
  size_t kept_bytes;
  size_t block_bytes;   // with the process's pool: the last call's arena size (rounded)
  int in_use;           // blocks calls hold now
  size_t in_use_bytes;  // without the process's pool: the bytes they hold
};

inline ArenaPool& arena_pool() {
  static ArenaPool p = {};
  return p;
}

struct ArenaLock {
  ArenaLock() {
    while (__atomic_test_and_set(&arena_pool().locked, __ATOMIC_ACQUIRE)) {
    }
  }
  ~ArenaLock() { __atomic_clear(&arena_pool().locked, __ATOMIC_RELEASE); }
};

// Gives every kept block back when the program is unloaded.
__attribute__((destructor)) inline void release_all() {
  Cache& c = cache();
  for (int i = 0; i < c.count; ++i) std::free(c.blocks[i]);
  c.count = 0;
  c.cached_bytes = 0;
  ArenaPool& p = arena_pool();
  for (int i = 0; i < p.count; ++i) std::free(p.blocks[i]);
  p.count = 0;
}

inline void* take_cached(size_t bytes) {
  if (bytes < kCachedBytes) return nullptr;
  Lock lock;
  Cache& c = cache();
  for (int i = c.count - 1; i >= 0; --i) {
    if (c.sizes[i] != bytes) continue;
    void* block = c.blocks[i];
    c.cached_bytes -= bytes;
    --c.count;
    c.blocks[i] = c.blocks[c.count];
    c.sizes[i] = c.sizes[c.count];
    return block;
  }
  return nullptr;
}

// Whether the cache kept `block`; if not, the caller frees it.
inline bool keep(void* block, size_t bytes) {
  if (bytes < kCachedBytes) return false;
  Lock lock;
  Cache& c = cache();
  if (c.count == kCacheSlots || c.cached_bytes + bytes > kCacheLimit) return false;
  c.blocks[c.count] = block;
  c.sizes[c.count] = bytes;
  ++c.count;
  c.cached_bytes += bytes;
  return true;
}

}  // namespace
}  // namespace stax::scratch

// 64-byte aligned scratch memory for kernel intermediates (size rounded up to a multiple of
// 64, at least 64 bytes); NULL on failure or negative size. Release with stax_free.
static inline void* stax_alloc(int64_t nbytes) {
  using namespace stax::scratch;
  if (nbytes < 0) return nullptr;
  size_t rounded = (static_cast<size_t>(nbytes) + kAlignment - 1) & ~(kAlignment - 1);
  if (rounded == 0) rounded = kAlignment;
  const ProcessPool pool = process_pool();
  void* block = nullptr;
  if (pool.take != nullptr && rounded >= kCachedBytes) {
    block = pool.take(static_cast<int64_t>(rounded + kHeaderBytes), 0);
    if (block == nullptr) return nullptr;
  } else {
    block = take_cached(rounded);
    if (block == nullptr) block = std::aligned_alloc(kAlignment, rounded + kHeaderBytes);
    if (block == nullptr) return nullptr;
  }
  *static_cast<size_t*>(block) = rounded;
  __atomic_add_fetch(&cache().live_bytes, rounded, __ATOMIC_RELAXED);
  return static_cast<char*>(block) + kHeaderBytes;
}

// Releases memory from stax_alloc (NULL is ignored).
static inline void stax_free(void* p) {
  using namespace stax::scratch;
  if (p == nullptr) return;
  void* block = static_cast<char*>(p) - kHeaderBytes;
  const size_t bytes = *static_cast<size_t*>(block);
  __atomic_sub_fetch(&cache().live_bytes, bytes, __ATOMIC_RELAXED);
  const ProcessPool pool = process_pool();
  if (pool.give != nullptr && bytes >= kCachedBytes) {
    pool.give(block);
  } else if (!keep(block, bytes)) {
    std::free(block);
  }
}

// The program's arena of `nbytes` (the same on every call of one program), 64-byte aligned;
// NULL on failure. Give it back with stax_arena_release.
static inline void* stax_arena_acquire(int64_t nbytes) {
  using namespace stax::scratch;
  size_t rounded = (static_cast<size_t>(nbytes) + kAlignment - 1) & ~(kAlignment - 1);
  if (rounded == 0) rounded = kAlignment;
  const ProcessPool pool = process_pool();
  if (pool.take != nullptr) {
    void* block = pool.take(static_cast<int64_t>(rounded), 1);
    if (block != nullptr) {
      ArenaLock lock;
      arena_pool().block_bytes = rounded;
      ++arena_pool().in_use;
    }
    return block;
  }
  {
    ArenaLock lock;
    ArenaPool& p = arena_pool();
    for (int i = p.count - 1; i >= 0; --i) {
      if (p.sizes[i] < rounded) continue;
      char* base = static_cast<char*>(p.blocks[i]);
      p.kept_bytes -= p.sizes[i];
      p.in_use_bytes += p.sizes[i];
      ++p.in_use;
      --p.count;
      p.blocks[i] = p.blocks[p.count];
      p.sizes[i] = p.sizes[p.count];
      return base + kHeaderBytes;
    }
  }
  char* base = static_cast<char*>(std::aligned_alloc(kAlignment, rounded + kHeaderBytes));
  if (base == nullptr) return nullptr;
  *reinterpret_cast<size_t*>(base) = rounded;
  ArenaLock lock;
  ++arena_pool().in_use;
  arena_pool().in_use_bytes += rounded;
  return base + kHeaderBytes;
}

static inline void stax_arena_release(void* block) {
  using namespace stax::scratch;
  if (block == nullptr) return;
  const ProcessPool pool = process_pool();
  if (pool.give != nullptr) {
    {
      ArenaLock lock;
      --arena_pool().in_use;
    }
    pool.give(block);
    return;
  }
  char* base = static_cast<char*>(block) - kHeaderBytes;
  const size_t bytes = *reinterpret_cast<size_t*>(base);
  {
    ArenaLock lock;
    ArenaPool& p = arena_pool();
    --p.in_use;
    p.in_use_bytes -= bytes;
    if (p.count < kArenaSlots) {
      p.blocks[p.count] = base;
      p.sizes[p.count] = bytes;
      ++p.count;
      p.kept_bytes += bytes;
      return;
    }
  }
  std::free(base);
}

// The bytes a buffer of `nbytes` takes in the arena of a program over size symbols: a whole
// number of 64-byte units, at least one (program/arena_layout.h places empty buffers so).
static inline int64_t stax_arena_unit(int64_t nbytes) {
  return ((nbytes > 1 ? nbytes : 1) + 63) / 64 * 64;
}

// Hands the program the runtime's pool; called by the loader once, before the first call
// (the pointers are read without a lock afterwards).
STAX_KERNEL_EXPORT void stax_use_process_pool(StaxPoolTakeFn take, StaxPoolGiveFn give) {
  stax::scratch::process_pool() = {take, give};
}

// The bytes this program holds: its arena blocks (kept for the next calls and held by calls
// now) and its scratch blocks (cached for the next calls and live). With the process's pool,
// what it holds now: the arena blocks of the calls running and the live scratch blocks. Read by the
// runtime through dlsym (driver/memory_stats.cpp); every program exports its own.
STAX_KERNEL_EXPORT void stax_memory_held(int64_t* arena_bytes, int64_t* scratch_bytes) {
  using namespace stax::scratch;
  {
    ArenaLock lock;
    const ArenaPool& p = arena_pool();
    *arena_bytes = process_pool().take != nullptr
                       ? static_cast<int64_t>(p.block_bytes * static_cast<size_t>(p.in_use))
                       : static_cast<int64_t>(p.kept_bytes + p.in_use_bytes);
  }
  Lock lock;
  *scratch_bytes = static_cast<int64_t>(cache().cached_bytes +
                                        __atomic_load_n(&cache().live_bytes, __ATOMIC_RELAXED));
}

#endif  // STAX_KERNEL_SCRATCH_H_
