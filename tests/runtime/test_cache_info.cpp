// Cache-size detection (runtime/cache_info.h): sysfs's sizes as the kernel writes them, and
// the detected sizes agree with sysfs's description of cpu0 wherever it gives one (under a
// hypervisor glibc's cpuid-based sysconf has reported a last level 10x too large).
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "runtime/cache_info.h"

namespace stax::runtime {
namespace {

TEST(CacheInfo, ParsesSysfsSizes) {
  EXPECT_EQ(parse_cache_size("32K"), std::optional<int64_t>(32 * 1024));
  EXPECT_EQ(parse_cache_size("32768K"), std::optional<int64_t>(32 * 1024 * 1024));
  EXPECT_EQ(parse_cache_size("1M"), std::optional<int64_t>(1024 * 1024));
  EXPECT_EQ(parse_cache_size("64"), std::optional<int64_t>(64));
  for (const char* bad : {"", "K", "12Q", "-4K", "0", "0K", "99999999999999K"}) {
    EXPECT_EQ(parse_cache_size(bad), std::nullopt) << bad;
  }
}

std::optional<std::string> sysfs(int index, const std::string& field) {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/" +
                   field);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

TEST(CacheInfo, AgreesWithSysfs) {
  const CacheSizes& c = detect_cache_sizes();
  int levels_seen = 0;
  for (int index = 0; index < 16; ++index) {
    const auto level = sysfs(index, "level");
    const auto type = sysfs(index, "type");
    const auto size = sysfs(index, "size");
    if (!level || !type || !size) break;
    if (*type == "Instruction") continue;
    const std::optional<int64_t> bytes = parse_cache_size(*size);
    ASSERT_TRUE(bytes) << *size;
    ++levels_seen;
    const int64_t detected = *level == "1"   ? c.l1d_bytes
                             : *level == "2" ? c.l2_bytes
                             : *level == "3" ? c.llc_bytes
                                             : *bytes;
    EXPECT_EQ(detected, *bytes) << "level " << *level;
  }
  // Without sysfs (some containers) the sizes come from sysconf or the defaults: still sane.
  EXPECT_GT(c.l1d_bytes, 0);
  EXPECT_GE(c.l2_bytes, c.l1d_bytes);
  EXPECT_GE(c.llc_bytes, c.l2_bytes);
  std::cout << "cache levels described by sysfs: " << levels_seen << "\n";
}

}  // namespace
}  // namespace stax::runtime
