// Cache-size detection through sysconf (glibc reads cpuid / sysfs behind it).
#include "runtime/cache_info.h"

#include <unistd.h>

namespace stax::runtime {

namespace {

int64_t sysconf_or(int name, int64_t fallback) {
  const long v = sysconf(name);
  return v > 0 ? static_cast<int64_t>(v) : fallback;
}

CacheSizes detect() {
  CacheSizes c;
#if defined(_SC_LEVEL1_DCACHE_SIZE)
  c.line_bytes = sysconf_or(_SC_LEVEL1_DCACHE_LINESIZE, c.line_bytes);
  c.l1d_bytes = sysconf_or(_SC_LEVEL1_DCACHE_SIZE, c.l1d_bytes);
  c.l2_bytes = sysconf_or(_SC_LEVEL2_CACHE_SIZE, c.l2_bytes);
  // The last level: L3 where there is one, else L2.
  c.llc_bytes = sysconf_or(_SC_LEVEL3_CACHE_SIZE, c.l2_bytes);
#endif
  return c;
}

}  // namespace

const CacheSizes& detect_cache_sizes() {
  static const CacheSizes sizes = detect();
  return sizes;
}

}  // namespace stax::runtime
