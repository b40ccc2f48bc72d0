// The JIT cache directory as a set of entries: atomic file writes, a per-entry lock that
// keeps an entry's files from being removed while a process reads or writes them, a recency
// stamp refreshed on every hit, and the size bound, kept by evicting the least recently used
// whole entries after a new one is written.
//
// An entry is everything in the cache directory named after its id: a kernel library
// `stax_<key>` (stax_<key>.so, .so.sha256, .cpp, .key.cpp), a CUDA module `stax_<key>`
// (stax_<key>.cubin or .ptx, .log, their .sha256 files, .cu; runtime/cuda/cuda_jit.h) or a
// precompiled header `pch-<key>` (the directory pch-<key>/), with <id>.used (its recency),
// <id>.lock, and temporary files of writers that died (<file>.tmp.<pid>.<n>). Ids contain no
// '.'.
//
// Published files are verified, not trusted: each file F a reader uses has a checksum file
// F.sha256 beside it (checksum_matches, publish_with_checksum), and cache keys come from
// KeyBuilder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/sha256.h"

namespace stax::runtime::cache {

// The bytes of `path`; std::runtime_error when it cannot be read.
std::string read_file(const std::filesystem::path& path);

// Creates `dir` and its parents; std::runtime_error naming it when that fails.
void ensure_directory(const std::filesystem::path& dir);

// A name next to `path` that no other thread or process uses.
std::filesystem::path temp_path_for(const std::filesystem::path& path);

void remove_quietly(const std::filesystem::path& path);

// Renames `from` over `to`; on failure removes `from` and throws std::runtime_error.
void rename_or_throw(const std::filesystem::path& from, const std::filesystem::path& to);

// Writes `contents` to a temporary file and renames it over `path`, so readers only ever
// see complete files.
void write_file_atomically(const std::filesystem::path& path, const std::string& contents);

// --- Checksum files ---------------------------------------------------------------------
// F.sha256 holds one sha256sum-style line: the digest of F, two spaces, and the entry's name
// (e.g. "stax_<key>.so"). The name carries the entry's key, so a checksum file copied along
// with a file from another entry does not match.

// Hex SHA-256 of the bytes of `path`, read in chunks; nullopt when it cannot be read.
std::optional<std::string> file_sha256(const std::filesystem::path& path);

// Whether `file` is a regular file whose checksum file records its current bytes under
// `entry_name`. Reads `file` (never maps it), so a damaged file cannot crash the reader.
bool checksum_matches(const std::filesystem::path& file, const std::string& entry_name);

// Publishes the finished file `temp` as `file`: renames it into place, then writes its
// checksum file. A reader that comes in between sees a stale or missing checksum: a miss.
// Throws std::runtime_error (and removes `temp`) when it cannot.
void publish_with_checksum(const std::filesystem::path& temp, const std::filesystem::path& file,
                           const std::string& entry_name);

// A cache key from length-prefixed fields, so different field lists never hash the same byte
// stream.
class KeyBuilder {
 public:
  void field(std::string_view text);
  void fields(const std::vector<std::string>& list);
  // 128 bits of SHA-256, as 32 hex characters.
  std::string key();

 private:
  Sha256 hash_;
};

// Digest (a KeyBuilder key) of the relative path and bytes of every regular file under
// `root`, in path order, so editing, adding or renaming a header changes it. Not memoized.
std::string directory_digest(const std::filesystem::path& root);

// An exclusive flock on <cache_dir>/<id>.lock. Every process holds it while it looks an
// entry up on disk, builds it or loads it, and eviction removes only entries whose lock it
// can take without waiting; so no file is removed between its check and its use, and
// processes wanting the same entry build it once. The lock file is deleted with its entry
// (while locked): a waiter that then gets the lock on the deleted file notices and retries
// on the current one.
class EntryLock {
 public:
  // Waits for the lock. nullopt when the lock file cannot be created (a read-only cache
  // directory): the caller proceeds unlocked, which is safe for lookups.
  static std::optional<EntryLock> acquire(const std::filesystem::path& cache_dir,
                                          const std::string& id);
  // nullopt when another holder has it (or it cannot be created).
  static std::optional<EntryLock> try_acquire(const std::filesystem::path& cache_dir,
                                              const std::string& id);

  EntryLock(EntryLock&& other) noexcept;
  EntryLock& operator=(EntryLock&&) = delete;
  EntryLock(const EntryLock&) = delete;
  EntryLock& operator=(const EntryLock&) = delete;
  ~EntryLock();

  // Deletes the lock file; the lock is released when this object goes.
  void remove_lock_file();

 private:
  EntryLock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  static std::optional<EntryLock> lock(const std::filesystem::path& cache_dir,
                                       const std::string& id, bool wait);

  int fd_ = -1;
  std::filesystem::path path_;
};

// Records that entry `id` was used now, in <cache_dir>/<id>.used. The time is written as the
// file's contents (nanoseconds, increasing within a process), not taken from timestamps,
// which are coarse on some file systems and not updated on reads under noatime. Best
// effort: false when the stamp cannot be written (a read-only cache).
bool touch_entry(const std::filesystem::path& cache_dir, const std::string& id);

struct EvictionReport {
  int64_t bytes_before = 0;  // total of all entries when eviction started
  int64_t bytes_after = 0;
  std::vector<std::string> evicted;  // ids, least recently used first
};

// Removes least recently used whole entries until all entries together take at most
// `max_bytes`, skipping the ids in `keep` (the entry just written and the precompiled header
// it used) and entries another process holds locked; stops early when only those are left.
// File-system errors make it remove less, never throw.
EvictionReport evict_to_bound(const std::filesystem::path& cache_dir, int64_t max_bytes,
                              const std::set<std::string>& keep);

}  // namespace stax::runtime::cache
