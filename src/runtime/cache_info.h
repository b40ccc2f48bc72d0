// The data-cache sizes code generation plans with (Section 8.2: a tile's lower bound is the
// cache line, its upper bound the L1 capacity; large outputs written once bypass the last
// level). Detected from the operating system, or fixed by the caller so that generated code
// does not depend on the machine (golden snapshots, ahead-of-time builds).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stax::runtime {

struct CacheSizes {
  int64_t line_bytes = 64;
  int64_t l1d_bytes = 32 * 1024;         // per core
  int64_t l2_bytes = 1024 * 1024;        // per core
  int64_t llc_bytes = 32 * 1024 * 1024;  // the last level, shared
  friend bool operator==(const CacheSizes&, const CacheSizes&) = default;
};

// The running machine's caches: sysfs's description of cpu0's caches, then sysconf, then the
// defaults above for what neither reports. Cached after the first call.
const CacheSizes& detect_cache_sizes();

// A size as sysfs writes it ("32K", "32768K", "1M", "64"): bytes; nullopt for anything else.
std::optional<int64_t> parse_cache_size(const std::string& text);

}  // namespace stax::runtime
