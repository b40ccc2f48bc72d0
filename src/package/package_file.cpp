// The package container (package_file.h): writing it in one piece, mapping and checking it.
#include "package/package_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

#include "package/program_json.h"
#include "runtime/sha256.h"

namespace stax::package {

using nlohmann::json;

namespace {

std::array<uint32_t, 256> crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

uint32_t crc32c_table(uint32_t crc, const uint8_t* p, size_t n) {
  static const std::array<uint32_t, 256> table = crc_table();
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
bool cpu_has_sse42() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    c = _mm_crc32_u64(c, word);
  }
  return crc32c_table(static_cast<uint32_t>(c), p + i, n - i);
}

// The four lanes of section_checksum over whole 32-byte blocks: four independent chains keep
// the instruction's pipeline full (one chain waits 3 cycles per word).
__attribute__((target("sse4.2"))) void lanes_sse42(uint32_t lanes[4], const uint8_t* p,
                                                   size_t blocks) {
  uint64_t c[4] = {lanes[0], lanes[1], lanes[2], lanes[3]};
  for (size_t b = 0; b < blocks; ++b, p += 32) {
    uint64_t w[4];
    std::memcpy(w, p, 32);
    for (int j = 0; j < 4; ++j) c[j] = _mm_crc32_u64(c[j], w[j]);
  }
  for (int j = 0; j < 4; ++j) lanes[j] = static_cast<uint32_t>(c[j]);
}
#endif

void put_u64(char* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
uint64_t get_u64(const char* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

size_t aligned(size_t n) {
  return (n + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment;
}

std::string hex_crc(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

std::string hex_checksum(const void* data, size_t bytes) {
  return hex_crc(section_checksum(data, bytes));
}

}  // namespace

namespace {
// One chunk's checksum: its four lanes, folded.
uint32_t chunk_checksum(const uint8_t* p, size_t bytes) {
  uint32_t lanes[4] = {~0u, ~0u, ~0u, ~0u};
  const size_t blocks = bytes / 32;
#if defined(__x86_64__)
  static const bool hardware = cpu_has_sse42();
  if (hardware) {
    lanes_sse42(lanes, p, blocks);
  } else
#endif
  {
    for (size_t b = 0; b < blocks; ++b) {
      for (int j = 0; j < 4; ++j) lanes[j] = crc32c_table(lanes[j], p + 32 * b + 8 * j, 8);
    }
  }
  lanes[0] = crc32c_table(lanes[0], p + 32 * blocks, bytes - 32 * blocks);
  uint8_t folded[16];
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < 4; ++k) folded[4 * j + k] = static_cast<uint8_t>(lanes[j] >> (8 * k));
  }
  return crc32c(folded, sizeof folded);
}
}  // namespace

uint32_t section_checksum(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (bytes <= kChecksumChunkBytes) return chunk_checksum(p, bytes);
  // Chunks on every core: one core reads memory at about half the rate two do.
  const size_t chunks = (bytes + kChecksumChunkBytes - 1) / kChecksumChunkBytes;
  std::vector<uint8_t> folded(4 * chunks);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < chunks; ++i) {
    const size_t start = i * kChecksumChunkBytes;
    const uint32_t c = chunk_checksum(p + start, std::min(kChecksumChunkBytes, bytes - start));
    for (int k = 0; k < 4; ++k) folded[4 * i + k] = static_cast<uint8_t>(c >> (8 * k));
  }
  return crc32c(folded.data(), folded.size());
}

uint32_t crc32c(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  static const bool hardware = cpu_has_sse42();
  if (hardware) return ~crc32c_sse42(~0u, p, bytes);
#endif
  return ~crc32c_table(~0u, p, bytes);
}

void write_package_file(const std::string& path, json manifest,
                        const std::vector<std::pair<std::string, std::string_view>>& sections) {
  json table = json::array();
  size_t offset = 0;  // from the start of the data, fixed below
  for (const auto& [name, bytes] : sections) {
    table.push_back({{"name", name},
                     {"offset", offset},
                     {"bytes", bytes.size()},
                     {"checksum", hex_checksum(bytes.data(), bytes.size())}});
    offset = aligned(offset + bytes.size());
  }
  // The data starts after the manifest, whose length depends on the offsets written into it:
  // offsets are relative to the data, written as absolute ones once the length is known. Two
  // rounds settle it (a longer number can only move the data by one alignment step).
  size_t data_start = 0;
  std::string text;
  for (;;) {
    json t = table;
    for (json& s : t) s["offset"] = data_start + s["offset"].get<size_t>();
    manifest["sections"] = t;
    manifest["file_bytes"] = data_start + offset;
    text = manifest.dump();
    const size_t start = aligned(kPackageHeaderBytes + text.size());
    if (start == data_start) break;
    data_start = start;
  }
  std::string header(kPackageHeaderBytes, '\0');
  std::memcpy(header.data(), kPackageMagic, 8);
  put_u64(header.data() + 8, text.size());
  const std::string digest = runtime::sha256_hex(text);
  std::memcpy(header.data() + 16, digest.data(), 64);

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw PackageError("cannot write package '" + path + "': " + std::strerror(errno));
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    const std::string zeros(kSectionAlignment, '\0');
    size_t at = kPackageHeaderBytes + text.size();
    out.write(zeros.data(), static_cast<std::streamsize>(data_start - at));
    at = data_start;
    for (const auto& [name, bytes] : sections) {
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      at += bytes.size();
      out.write(zeros.data(), static_cast<std::streamsize>(aligned(at) - at));
      at = aligned(at);
    }
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw PackageError("cannot write package '" + path + "': " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw PackageError("cannot write package '" + path + "': " + why);
  }
}

PackageFile::PackageFile(const std::string& path) : path_(path) {
  const auto fail = [&](const std::string& what) {
    throw PackageError("Stax package '" + path + "': " + what);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("not a regular file");
  }
  bytes_ = static_cast<size_t>(st.st_size);
  if (bytes_ < kPackageHeaderBytes) {
    ::close(fd);
    fail("truncated: " + std::to_string(bytes_) + " bytes, fewer than a package's header (" +
         std::to_string(kPackageHeaderBytes) + ")");
  }
  // Populated at once (every byte is read by the checks below, and one call maps the pages
  // faster than a fault per page), read-only: populating a writable private mapping would
  // copy every page. Writable afterwards, each page copied only where a program writes it.
  void* map = ::mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) fail(std::string("cannot map: ") + std::strerror(errno));
  if (::mprotect(map, bytes_, PROT_READ | PROT_WRITE) != 0) {
    ::munmap(map, bytes_);
    fail(std::string("cannot map: ") + std::strerror(errno));
  }
  base_ = static_cast<char*>(map);
  try {
    if (std::memcmp(base_, kPackageMagic, 8) != 0) {
      fail("not a Stax package (it does not start with STAXPKG1)");
    }
    const uint64_t manifest_bytes = get_u64(base_ + 8);
    if (manifest_bytes > bytes_ - kPackageHeaderBytes) {
      fail("truncated: its manifest of " + std::to_string(manifest_bytes) +
           " bytes reaches past the end of the file (" + std::to_string(bytes_) + " bytes)");
    }
    const std::string_view text(base_ + kPackageHeaderBytes, manifest_bytes);
    if (runtime::sha256_hex(text) != std::string_view(base_ + 16, 64)) {
      fail("damaged: its manifest does not match the manifest's SHA-256");
    }
    try {
      manifest_ = json::parse(text);
    } catch (const json::exception& e) {
      fail(std::string("malformed manifest: ") + e.what());
    }
    if (!manifest_.is_object() || !manifest_.contains("file_bytes") ||
        !manifest_["file_bytes"].is_number_unsigned() || !manifest_.contains("sections") ||
        !manifest_["sections"].is_array()) {
      fail("malformed manifest: no section table");
    }
    const uint64_t expected = manifest_["file_bytes"].get<uint64_t>();
    if (expected != bytes_) {
      fail((expected > bytes_ ? "truncated: " : "damaged: ") + std::to_string(bytes_) +
           " bytes where the manifest says " + std::to_string(expected));
    }
    for (const json& s : manifest_["sections"]) {
      std::string name;
      uint64_t offset = 0, size = 0;
      std::string crc;
      try {
        name = s.at("name").get<std::string>();
        offset = s.at("offset").get<uint64_t>();
        size = s.at("bytes").get<uint64_t>();
        crc = s.at("checksum").get<std::string>();
      } catch (const json::exception& e) {
        fail(std::string("malformed section table: ") + e.what());
      }
      if (offset % kSectionAlignment != 0 || offset > bytes_ || size > bytes_ - offset ||
          offset < kPackageHeaderBytes + manifest_bytes) {
        fail("malformed section table: section '" + name + "' lies outside the file's data");
      }
      if (hex_checksum(base_ + offset, size) != crc) {
        fail("damaged: section '" + name + "' does not match its checksum");
      }
      sections_.push_back({name, {offset, size}});
    }
  } catch (...) {
    ::munmap(base_, bytes_);
    base_ = nullptr;
    throw;
  }
}

PackageFile::~PackageFile() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

bool PackageFile::has_section(const std::string& name) const {
  for (const auto& s : sections_) {
    if (s.first == name) return true;
  }
  return false;
}

std::pair<char*, size_t> PackageFile::section(const std::string& name) const {
  for (const auto& s : sections_) {
    if (s.first == name) return {base_ + s.second.first, s.second.second};
  }
  throw PackageError("Stax package '" + path_ + "': it has no section '" + name + "'");
}

}  // namespace stax::package
