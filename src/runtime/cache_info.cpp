// Cache-size detection: the kernel's description in sysfs first (what lscpu prints), sysconf
// where sysfs has none. glibc's sysconf reads cpuid itself and can be wrong under a
// hypervisor: on a 2-vCPU EPYC guest it gave a 320 MiB L3 where sysfs and lscpu say 32 MiB.
#include "runtime/cache_info.h"

#include <unistd.h>

#include <cctype>
#include <fstream>
#include <string>

namespace stax::runtime {

namespace {

int64_t sysconf_or(int name, int64_t fallback) {
  const long v = sysconf(name);
  return v > 0 ? static_cast<int64_t>(v) : fallback;
}

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// The caches sysfs lists for cpu0: the data (or unified) cache of each level, and the line.
struct SysfsCaches {
  std::optional<int64_t> level[4];  // bytes of the data or unified cache of level 1..3
  std::optional<int64_t> line;
};

SysfsCaches read_sysfs() {
  SysfsCaches out;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    const auto level = read_line(dir + "/level");
    const auto type = read_line(dir + "/type");
    const auto size = read_line(dir + "/size");
    if (!level || !type || !size) break;
    if (*type == "Instruction") continue;
    const int l = std::atoi(level->c_str());
    const std::optional<int64_t> bytes = parse_cache_size(*size);
    if (l >= 1 && l <= 3 && bytes) out.level[l] = bytes;
    if (l == 1 && !out.line) {
      if (const auto line = read_line(dir + "/coherency_line_size")) {
        out.line = parse_cache_size(*line);
      }
    }
  }
  return out;
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
  const SysfsCaches sys = read_sysfs();
  if (sys.line) c.line_bytes = *sys.line;
  if (sys.level[1]) c.l1d_bytes = *sys.level[1];
  if (sys.level[2]) c.l2_bytes = *sys.level[2];
  if (sys.level[3]) {
    c.llc_bytes = *sys.level[3];
  } else if (sys.level[2]) {
    c.llc_bytes = *sys.level[2];
  }
  return c;
}

}  // namespace

std::optional<int64_t> parse_cache_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 12) return std::nullopt;
  int64_t value = std::stoll(text.substr(0, digits));
  const std::string unit = text.substr(digits);
  if (unit == "K") {
    value *= 1024;
  } else if (unit == "M") {
    value *= 1024 * 1024;
  } else if (unit == "G") {
    value *= int64_t{1024} * 1024 * 1024;
  } else if (!unit.empty()) {
    return std::nullopt;
  }
  return value > 0 ? std::optional<int64_t>(value) : std::nullopt;
}

const CacheSizes& detect_cache_sizes() {
  static const CacheSizes sizes = detect();
  return sizes;
}

}  // namespace stax::runtime
