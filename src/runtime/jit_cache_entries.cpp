// The JIT cache's entries: atomic writes, entry locks (flock), recency stamps and
// least-recently-used eviction under the cache's size bound.
#include "runtime/jit_cache_entries.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace fs = std::filesystem;

namespace stax::runtime::cache {

namespace {

std::atomic<uint64_t> g_temp_counter{0};
std::atomic<int64_t> g_last_stamp{0};

constexpr std::string_view kKernelPrefix = "stax_";
constexpr std::string_view kPchPrefix = "pch-";

fs::path lock_path(const fs::path& cache_dir, const std::string& id) {
  return cache_dir / (id + ".lock");
}

fs::path stamp_path(const fs::path& cache_dir, const std::string& id) {
  return cache_dir / (id + ".used");
}

bool is_lower_hex(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// The id of the entry a top-level name of the cache directory belongs to; nullopt for
// anything the JIT did not write.
std::optional<std::string> entry_id_of(const std::string& name) {
  const std::string id = name.substr(0, name.find('.'));
  for (std::string_view prefix : {kKernelPrefix, kPchPrefix}) {
    if (id.size() > prefix.size() && id.compare(0, prefix.size(), prefix) == 0 &&
        is_lower_hex(std::string_view(id).substr(prefix.size()))) {
      return id;
    }
  }
  return std::nullopt;
}

struct Stat {
  int64_t bytes = 0;
  int64_t mtime_ns = 0;
  bool is_directory = false;
};

std::optional<Stat> lstat_of(const fs::path& path) {
  struct stat info{};
  if (::lstat(path.c_str(), &info) != 0) return std::nullopt;
  return Stat{static_cast<int64_t>(info.st_size),
              static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec,
              S_ISDIR(info.st_mode)};
}

std::optional<int64_t> read_stamp(const fs::path& cache_dir, const std::string& id) {
  std::ifstream in(stamp_path(cache_dir, id));
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A time after every stamp this process wrote before, so two uses in a row are ordered
// even when the clock's resolution or an adjustment would tie them.
int64_t next_stamp() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  int64_t last = g_last_stamp.load();
  int64_t next = 0;
  do {
    next = std::max(now, last + 1);
  } while (!g_last_stamp.compare_exchange_weak(last, next));
  return next;
}

struct EntryOnDisk {
  int64_t bytes = 0;
  int64_t newest_mtime_ns = INT64_MIN;
  std::vector<fs::path> paths;  // top-level files and directories
};

// Every entry in the cache directory with its size: the files named after it, and for a
// precompiled header everything in its directory.
std::map<std::string, EntryOnDisk> scan_entries(const fs::path& cache_dir) {
  std::map<std::string, EntryOnDisk> entries;
  std::error_code ec;
  for (fs::directory_iterator it(cache_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path path = it->path();
    const std::optional<std::string> id = entry_id_of(path.filename().string());
    if (!id) continue;
    const std::optional<Stat> stat = lstat_of(path);
    if (!stat) continue;  // removed since it was listed
    EntryOnDisk& entry = entries[*id];
    entry.paths.push_back(path);
    entry.newest_mtime_ns = std::max(entry.newest_mtime_ns, stat->mtime_ns);
    if (!stat->is_directory) {
      entry.bytes += stat->bytes;
      continue;
    }
    std::error_code inner_ec;
    for (fs::recursive_directory_iterator inner(path, inner_ec), inner_end;
         !inner_ec && inner != inner_end; inner.increment(inner_ec)) {
      if (const std::optional<Stat> file = lstat_of(inner->path()); file && !file->is_directory) {
        entry.bytes += file->bytes;
        entry.newest_mtime_ns = std::max(entry.newest_mtime_ns, file->mtime_ns);
      }
    }
  }
  return entries;
}

fs::path checksum_path(const fs::path& file) {
  return fs::path(file.string() + ".sha256");
}

std::string checksum_line(const std::string& digest, const std::string& entry_name) {
  return digest + "  " + entry_name + "\n";
}

// Removes an entry's files; the caller holds its lock and removes the lock file last.
// Checksum files go first, so that a reader that does not lock sees a miss at every point.
void remove_entry_files(const fs::path& cache_dir, const std::string& id,
                        const EntryOnDisk& entry) {
  std::vector<fs::path> paths = entry.paths;
  for (const char* suffix : {".so.sha256", ".so", ".cpp", ".key.cpp", ".used"}) {
    paths.push_back(cache_dir / (id + suffix));
  }
  const fs::path lock = lock_path(cache_dir, id);
  paths.erase(std::remove(paths.begin(), paths.end(), lock), paths.end());
  std::stable_partition(paths.begin(), paths.end(),
                        [](const fs::path& path) { return path.extension() == ".sha256"; });
  for (const fs::path& path : paths) {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
}

}  // namespace

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path.string() + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void ensure_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) {
    throw std::runtime_error("cannot create cache directory '" + dir.string() +
                             "': " + ec.message());
  }
}

std::optional<std::string> file_sha256(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  Sha256 hash;
  std::vector<char> chunk(1 << 16);
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    hash.update(chunk.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return std::nullopt;
  return hash.hex_digest();
}

bool checksum_matches(const fs::path& file, const std::string& entry_name) {
  // Anything but regular files (a FIFO, a link to /dev/zero) could block or never end.
  std::error_code ec;
  if (!fs::is_regular_file(file, ec) || !fs::is_regular_file(checksum_path(file), ec)) {
    return false;
  }
  std::string recorded;
  try {
    recorded = read_file(checksum_path(file));
  } catch (const std::runtime_error&) {
    return false;
  }
  const std::optional<std::string> digest = file_sha256(file);
  return digest && recorded == checksum_line(*digest, entry_name);
}

void publish_with_checksum(const fs::path& temp, const fs::path& file,
                           const std::string& entry_name) {
  const std::optional<std::string> digest = file_sha256(temp);
  if (!digest) {
    remove_quietly(temp);
    throw std::runtime_error("cannot read the freshly built '" + temp.string() + "'");
  }
  rename_or_throw(temp, file);
  write_file_atomically(checksum_path(file), checksum_line(*digest, entry_name));
}

void KeyBuilder::field(std::string_view text) {
  const uint64_t size = text.size();
  hash_.update(&size, sizeof size);
  hash_.update(text);
}

void KeyBuilder::fields(const std::vector<std::string>& list) {
  field("list:" + std::to_string(list.size()));
  for (const std::string& item : list) field(item);
}

std::string KeyBuilder::key() {
  return hash_.hex_digest().substr(0, 32);
}

std::string directory_digest(const fs::path& root) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  KeyBuilder builder;
  for (const fs::path& file : files) {
    builder.field(file.lexically_relative(root).string());
    builder.field(read_file(file));
  }
  return builder.key();
}

fs::path temp_path_for(const fs::path& path) {
  return fs::path(path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                  std::to_string(++g_temp_counter));
}

void remove_quietly(const fs::path& path) {
  std::error_code ignored;
  fs::remove(path, ignored);
}

void rename_or_throw(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) {
    remove_quietly(from);
    throw std::runtime_error("cannot rename '" + from.string() + "' to '" + to.string() +
                             "': " + ec.message());
  }
}

void write_file_atomically(const fs::path& path, const std::string& contents) {
  const fs::path temp = temp_path_for(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << contents;
    out.close();
    if (!out) {
      remove_quietly(temp);
      throw std::runtime_error("cannot write '" + temp.string() + "'");
    }
  }
  rename_or_throw(temp, path);
}

std::optional<EntryLock> EntryLock::lock(const fs::path& cache_dir, const std::string& id,
                                         bool wait) {
  const fs::path path = lock_path(cache_dir, id);
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return std::nullopt;
    int status = 0;
    while ((status = ::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
    }
    if (status != 0) {
      ::close(fd);
      return std::nullopt;
    }
    // The file may have been evicted (unlinked) between open and flock: then this lock
    // guards nothing, and the entry's current lock file is a different one.
    struct stat held{};
    struct stat current{};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &current) == 0 &&
        held.st_dev == current.st_dev && held.st_ino == current.st_ino) {
      return EntryLock(fd, path);
    }
    ::close(fd);
  }
}

std::optional<EntryLock> EntryLock::acquire(const fs::path& cache_dir, const std::string& id) {
  return lock(cache_dir, id, true);
}

std::optional<EntryLock> EntryLock::try_acquire(const fs::path& cache_dir, const std::string& id) {
  return lock(cache_dir, id, false);
}

EntryLock::EntryLock(EntryLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

EntryLock::~EntryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

void EntryLock::remove_lock_file() {
  remove_quietly(path_);
}

bool touch_entry(const fs::path& cache_dir, const std::string& id) {
  try {
    write_file_atomically(stamp_path(cache_dir, id), std::to_string(next_stamp()) + "\n");
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

EvictionReport evict_to_bound(const fs::path& cache_dir, int64_t max_bytes,
                              const std::set<std::string>& keep) {
  std::map<std::string, EntryOnDisk> entries = scan_entries(cache_dir);
  EvictionReport report;
  for (const auto& [id, entry] : entries) report.bytes_before += entry.bytes;
  int64_t total = report.bytes_before;
  if (total <= max_bytes) {
    report.bytes_after = total;
    return report;
  }

  struct Candidate {
    int64_t recency;
    std::optional<int64_t> stamp;  // as read before locking
    std::string id;
  };
  std::vector<Candidate> candidates;
  for (const auto& [id, entry] : entries) {
    if (keep.count(id) != 0) continue;
    // An entry without a stamp (a compile that failed, a writer that died): its files' age.
    const std::optional<int64_t> stamp = read_stamp(cache_dir, id);
    candidates.push_back({stamp.value_or(entry.newest_mtime_ns), stamp, id});
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.recency, a.id) < std::tie(b.recency, b.id);
  });
  for (const Candidate& candidate : candidates) {
    if (total <= max_bytes) break;
    std::optional<EntryLock> lock = EntryLock::try_acquire(cache_dir, candidate.id);
    if (!lock) continue;  // in use by another process or thread
    // Used since the scan, so now among the most recent: not this round's to evict.
    if (read_stamp(cache_dir, candidate.id) != candidate.stamp) continue;
    remove_entry_files(cache_dir, candidate.id, entries[candidate.id]);
    lock->remove_lock_file();
    total -= entries[candidate.id].bytes;
    report.evicted.push_back(candidate.id);
  }
  report.bytes_after = total;
  return report;
}

}  // namespace stax::runtime::cache
