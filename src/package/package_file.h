// The file an ahead-of-time package is (issue 34, point 1): one file, so that it travels as
// one thing, laid out so that loading maps it and reads weights in place.
//
//   bytes 0..7    "STAXPKG1" (the container format; the manifest names the Stax build)
//   bytes 8..15   the manifest's length in bytes, little-endian
//   bytes 16..79  the manifest's SHA-256, hex
//   then          the manifest (JSON), zero bytes to a multiple of 64, then the sections,
//                 each at a multiple of 64 bytes from the start of the file
//
// The manifest lists every section (name, offset, bytes, checksum) and the file's length. A
// reader checks the magic, the length, the manifest's SHA-256 and every section's checksum
// before anything in it is used: a truncated or damaged file is refused, naming what does not
// match. (A checksum guards against damage, not against an author who rewrites the manifest.
// A section's is section_checksum, CRC-32C in four lanes: it checks a model's weights at
// memory speed, against SHA-256's 0.3 GB/s here.)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace stax::package {

inline constexpr char kPackageMagic[8] = {'S', 'T', 'A', 'X', 'P', 'K', 'G', '1'};
inline constexpr size_t kPackageHeaderBytes = 80;
inline constexpr size_t kSectionAlignment = 64;

// CRC-32C (Castagnoli) of `bytes`: the SSE4.2 instruction where the CPU has it, else a table.
uint32_t crc32c(const void* data, size_t bytes);
// A section's checksum. A chunk's (at most kChecksumChunkBytes): its 8-byte words dealt in turn
// to four CRC-32C lanes (word j of each 32-byte block to lane j, the last partial block's
// bytes to lane 0), each lane started at all ones, then the CRC-32C of the four lanes' values
// (little-endian). A section of one chunk has that checksum; a longer one, the CRC-32C of its
// chunks' checksums (little-endian), computed on every core. Four chains run three times as
// fast as one on the CPU's instruction; the table gives the same values.
inline constexpr size_t kChecksumChunkBytes = size_t{4} << 20;
uint32_t section_checksum(const void* data, size_t bytes);

// Writes `manifest` (to which the sections' table and the file's length are added) and the
// sections, in order, to `path` through a temporary file renamed into place (a reader never
// sees half a package). Throws PackageError when the file cannot be written.
void write_package_file(const std::string& path, nlohmann::json manifest,
                        const std::vector<std::pair<std::string, std::string_view>>& sections);

// A package file mapped into memory (copy-on-write: a program that writes an input in place
// may write a weight section without changing the file), checked as the header says.
class PackageFile {
 public:
  // Throws PackageError naming the file and what is wrong with it.
  explicit PackageFile(const std::string& path);
  ~PackageFile();
  PackageFile(const PackageFile&) = delete;
  PackageFile& operator=(const PackageFile&) = delete;

  const nlohmann::json& manifest() const { return manifest_; }
  bool has_section(const std::string& name) const;
  // The section's bytes (checked when the file was opened), 64-byte aligned and writable;
  // PackageError when the package has none of that name.
  std::pair<char*, size_t> section(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  char* base_ = nullptr;
  size_t bytes_ = 0;
  nlohmann::json manifest_;
  std::vector<std::pair<std::string, std::pair<size_t, size_t>>> sections_;
};

}  // namespace stax::package
