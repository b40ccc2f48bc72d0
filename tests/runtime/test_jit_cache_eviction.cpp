// The JIT cache's size bound and entry bookkeeping: least-recently-used eviction of whole
// entries (kernel libraries and precompiled headers), hits refreshing recency, the entry
// just written surviving a bound it alone exceeds, entries in use never evicted, concurrent
// processes building an entry once and evicting each other's safely, the bound's
// configuration, and the Stax version as part of the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "jit_probe.h"
#include "runtime/jit.h"
#include "runtime/jit_cache_entries.h"
#include "test_util.h"

namespace stax::runtime {
namespace {

namespace fs = std::filesystem;
using testing::run_concurrent_probes;
using testing::run_probe;
using testing::ScopedEnv;
using testing::TempDir;
using testing::write_text;

// Far above what these tests write: no eviction.
constexpr int64_t kNoBound = int64_t{1} << 40;

// Sources of the same length for answers 10..99, so their entries are about the same size.
std::string answer_source(int answer) {
  return "extern \"C\" int stax_probe_answer() { return " + std::to_string(answer) + "; }\n";
}

// The entry id of a kernel library: stax_<key>.
std::string entry_id(const JitResult& result) {
  return fs::path(result.library_path).stem().string();
}

bool belongs_to(const fs::path& path, const std::string& id) {
  const std::string name = path.filename().string();
  return name == id || name.rfind(id + ".", 0) == 0;
}

// The names in `cache` that belong to entry `id`.
std::set<std::string> entry_files(const std::string& cache, const std::string& id) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(cache)) {
    if (belongs_to(entry.path(), id)) names.insert(entry.path().filename().string());
  }
  return names;
}

// Bytes of entry `id`, as the bound counts them: its files, and for a precompiled header
// everything in its directory.
int64_t entry_bytes(const std::string& cache, const std::string& id) {
  int64_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(cache)) {
    const fs::path top = cache / entry.path().lexically_relative(cache).begin()->filename();
    if (entry.is_regular_file() && belongs_to(top, id)) {
      bytes += static_cast<int64_t>(entry.file_size());
    }
  }
  return bytes;
}

// Ids of the kernel libraries in `cache`.
std::set<std::string> kernel_entries(const std::string& cache) {
  std::set<std::string> ids;
  for (const auto& entry : fs::directory_iterator(cache)) {
    if (entry.path().extension() == ".so") ids.insert(entry.path().stem().string());
  }
  return ids;
}

std::set<std::string> precompiled_header_dirs(const std::string& cache) {
  std::set<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(cache)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind("pch-", 0) == 0) dirs.insert(name);
  }
  return dirs;
}

void expect_complete(const std::string& cache, const std::string& id) {
  const std::set<std::string> files = entry_files(cache, id);
  for (const char* suffix : {".so", ".so.sha256", ".cpp", ".key.cpp"}) {
    EXPECT_EQ(files.count(id + suffix), 1u) << id << suffix;
  }
}

class JitCacheBound : public ::testing::Test {
 protected:
  JitOptions options(std::optional<int64_t> max_cache_bytes) const {
    JitOptions options;
    options.simd = SimdLevel::Scalar;
    options.cache_dir = cache_;
    options.max_cache_bytes = max_cache_bytes;
    return options;
  }

  // Compiles (or finds) `source` under `max_cache_bytes`, checks it answers `answer`, and
  // releases the library; returns the entry id.
  std::string compile(const std::string& source, int answer, std::optional<int64_t> bound) {
    const JitResult result = compile_and_load(source, options(bound));
    EXPECT_EQ(result.library->function<int (*)()>("stax_probe_answer")(), answer);
    return entry_id(result);
  }
  std::string compile(int answer, std::optional<int64_t> bound) {
    return compile(answer_source(answer), answer, bound);
  }

  // Builds three entries, oldest first, and returns their ids.
  std::vector<std::string> three_entries() {
    return {compile(11, kNoBound), compile(12, kNoBound), compile(13, kNoBound)};
  }

  // A bound that holds two of the entries but not three.
  int64_t bound_for_two(const std::vector<std::string>& ids) const {
    int64_t largest = 0;
    for (const std::string& id : ids) largest = std::max(largest, entry_bytes(cache_, id));
    EXPECT_GT(largest, 0);
    return 2 * largest + largest / 2;
  }

  TempDir dir_;
  const std::string cache_ = dir_.path() + "/cache";
};

TEST_F(JitCacheBound, EvictsLeastRecentlyUsedWholeEntries) {
  const std::vector<std::string> ids = three_entries();
  const std::string newest = compile(14, bound_for_two(ids));
  EXPECT_EQ(kernel_entries(cache_), (std::set<std::string>{ids[2], newest}));
  // Nothing of an evicted entry is left: library, checksum, sources, stamp, lock.
  EXPECT_TRUE(entry_files(cache_, ids[0]).empty());
  EXPECT_TRUE(entry_files(cache_, ids[1]).empty());
  expect_complete(cache_, ids[2]);
  expect_complete(cache_, newest);
  // An evicted entry is rebuilt on demand.
  const int64_t before = compiler_invocations();
  EXPECT_EQ(compile(11, kNoBound), ids[0]);
  EXPECT_EQ(compiler_invocations(), before + 1);
}

TEST_F(JitCacheBound, HitFromDiskRefreshesRecency) {
  const std::vector<std::string> ids = three_entries();
  const int64_t before = compiler_invocations();
  EXPECT_EQ(compile(11, kNoBound), ids[0]);  // released before: loaded from disk again
  EXPECT_EQ(compiler_invocations(), before);
  const std::string newest = compile(14, bound_for_two(ids));
  EXPECT_EQ(kernel_entries(cache_), (std::set<std::string>{ids[0], newest}));
}

TEST_F(JitCacheBound, HitInAnotherProcessRefreshesRecency) {
  const std::vector<std::string> ids = three_entries();
  const std::string source_file = dir_.path() + "/probe_source.cpp";
  write_text(source_file, answer_source(12));
  EXPECT_EQ(run_probe(source_file, cache_, "12"), std::make_pair(std::string("hit 0"), 0));
  const std::string newest = compile(14, bound_for_two(ids));
  EXPECT_EQ(kernel_entries(cache_), (std::set<std::string>{ids[1], newest}));
}

TEST_F(JitCacheBound, HitOfALoadedLibraryRefreshesRecency) {
  const JitResult held = compile_and_load(answer_source(11), options(kNoBound));
  const std::vector<std::string> ids = {entry_id(held), compile(12, kNoBound),
                                        compile(13, kNoBound)};
  const JitResult again = compile_and_load(answer_source(11), options(kNoBound));
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.library, held.library);  // found loaded in this process, not on disk
  const std::string newest = compile(14, bound_for_two(ids));
  EXPECT_EQ(kernel_entries(cache_), (std::set<std::string>{ids[0], newest}));
}

TEST_F(JitCacheBound, EntryJustWrittenSurvivesABoundItAloneExceeds) {
  const std::string first = compile(11, 1);
  expect_complete(cache_, first);
  const std::string second = compile(12, 1);
  EXPECT_EQ(kernel_entries(cache_), (std::set<std::string>{second}));
  EXPECT_TRUE(entry_files(cache_, first).empty());
  expect_complete(cache_, second);
  const int64_t before = compiler_invocations();
  EXPECT_EQ(compile(12, 1), second);  // a hit, and hits do not evict
  EXPECT_EQ(compiler_invocations(), before);
  expect_complete(cache_, second);
}

// Eviction passes over an entry whose lock is held: another process is checking, building
// or loading it.
TEST_F(JitCacheBound, LockedEntryIsNotEvicted) {
  const std::string in_use = compile(11, kNoBound);
  {
    const std::optional<cache::EntryLock> lock = cache::EntryLock::acquire(cache_, in_use);
    ASSERT_TRUE(lock.has_value());
    const std::string newest = compile(12, 1);
    EXPECT_EQ(kernel_entries(cache_), (std::set<std::string>{in_use, newest}));
    expect_complete(cache_, in_use);
  }
  const std::string last = compile(13, 1);
  EXPECT_EQ(kernel_entries(cache_), (std::set<std::string>{last}));
}

// An entry without its recency stamp (written by a process that died before stamping it) is
// as old as its newest file.
TEST_F(JitCacheBound, EntryWithoutStampIsAsOldAsItsFiles) {
  const std::vector<std::string> ids = three_entries();
  ASSERT_TRUE(fs::remove(fs::path(cache_) / (ids[2] + ".used")));
  const auto long_ago = fs::file_time_type::clock::now() - std::chrono::hours(24 * 365);
  for (const std::string& name : entry_files(cache_, ids[2])) {
    fs::last_write_time(fs::path(cache_) / name, long_ago);
  }
  const std::string newest = compile(14, bound_for_two(ids));
  EXPECT_EQ(kernel_entries(cache_), (std::set<std::string>{ids[1], newest}));
}

// GCC only (the compiler of this build): stax_kernel.h's precompiled header is an entry. The
// kernel built with it keeps it; the next kernel, which does not use it, evicts it.
TEST_F(JitCacheBound, PrecompiledHeaderIsAnEntry) {
  const std::string with_header =
      compile("#include \"stax_kernel.h\"\n" + answer_source(21), 21, 1);
  ASSERT_EQ(precompiled_header_dirs(cache_).size(), 1u);
  const std::string header = *precompiled_header_dirs(cache_).begin();
  EXPECT_GT(entry_bytes(cache_, header), 1 << 20);  // a GCC .gch is tens of MB
  expect_complete(cache_, with_header);
  const std::string plain = compile(22, 1);
  EXPECT_TRUE(precompiled_header_dirs(cache_).empty());
  EXPECT_TRUE(entry_files(cache_, header).empty());
  EXPECT_EQ(kernel_entries(cache_), (std::set<std::string>{plain}));
}

// Processes that start compiling the same source together wait for one build: one compiles,
// the others find its entry.
TEST_F(JitCacheBound, ConcurrentProcessesBuildTheSameEntryOnce) {
  const std::string source_file = dir_.path() + "/probe_source.cpp";
  write_text(source_file, answer_source(42) + "// built once\n");
  const std::vector<std::pair<std::string, int>> results =
      run_concurrent_probes(std::vector<std::string>(3, source_file), cache_);
  int misses = 0;
  for (const auto& [line, status] : results) {
    EXPECT_EQ(status, 0);
    EXPECT_TRUE(line == "hit 0" || line == "miss 1") << line;
    misses += line == "miss 1" ? 1 : 0;
  }
  EXPECT_EQ(misses, 1);
  EXPECT_EQ(kernel_entries(cache_).size(), 1u);
}

// Four processes compile different kernels at once under a bound of one byte, so each one's
// eviction targets the others' entries while they are written, compiled and loaded.
TEST_F(JitCacheBound, ConcurrentProcessesEvictingEachOtherAllSucceed) {
  const ScopedEnv bound("STAX_CACHE_MAX_BYTES", "1");
  std::vector<std::string> source_files;
  for (int i = 0; i < 4; ++i) {
    source_files.push_back(dir_.path() + "/probe_source_" + std::to_string(i) + ".cpp");
    write_text(source_files.back(), answer_source(42) + "// kernel " + std::to_string(i) + "\n");
  }
  for (const auto& [line, status] : run_concurrent_probes(source_files, cache_)) {
    EXPECT_EQ(line, "miss 1");
    EXPECT_EQ(status, 0);  // 2 if a compile lost its source, 3 if a wrong library ran
  }
  EXPECT_FALSE(kernel_entries(cache_).empty());
  for (const auto& entry : fs::directory_iterator(cache_)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
  const std::string last = compile(15, std::nullopt);  // the bound from the environment
  EXPECT_EQ(kernel_entries(cache_), (std::set<std::string>{last}));
}

TEST(JitCacheBoundConfig, BoundComesFromOptionThenEnvironmentThenDefault) {
  JitOptions options;
  {
    const ScopedEnv unset("STAX_CACHE_MAX_BYTES", nullptr);
    EXPECT_EQ(resolve_max_cache_bytes(options), kDefaultMaxCacheBytes);
    EXPECT_EQ(kDefaultMaxCacheBytes, int64_t{2} << 30);
  }
  {
    const ScopedEnv empty("STAX_CACHE_MAX_BYTES", "");
    EXPECT_EQ(resolve_max_cache_bytes(options), kDefaultMaxCacheBytes);
  }
  const ScopedEnv env("STAX_CACHE_MAX_BYTES", "12345");
  EXPECT_EQ(resolve_max_cache_bytes(options), 12345);
  options.max_cache_bytes = 678;
  EXPECT_EQ(resolve_max_cache_bytes(options), 678);
  const ScopedEnv bad("STAX_CACHE_MAX_BYTES", "garbage");
  EXPECT_EQ(resolve_max_cache_bytes(options), 678);  // the option wins; the variable is unread
}

TEST(JitCacheBoundConfig, BadEnvironmentBoundIsAnErrorNamingIt) {
  TempDir dir;
  JitOptions options;
  options.simd = SimdLevel::Scalar;
  options.cache_dir = dir.path();
  for (const char* value : {"0", "-1", "abc", "12abc", " 5", "1e9", "2G", "99999999999999999999"}) {
    SCOPED_TRACE(value);
    const ScopedEnv env("STAX_CACHE_MAX_BYTES", value);
    const int64_t before = compiler_invocations();
    try {
      compile_and_load(answer_source(42), options);
      ADD_FAILURE() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("STAX_CACHE_MAX_BYTES"), std::string::npos) << message;
      EXPECT_NE(message.find(std::string("'") + value + "'"), std::string::npos) << message;
    }
    EXPECT_EQ(compiler_invocations(), before);
  }
}

TEST(JitCacheBoundConfig, BadOptionBoundIsAnErrorNamingIt) {
  for (int64_t value : {int64_t{0}, int64_t{-3}}) {
    JitOptions options;
    options.max_cache_bytes = value;
    try {
      resolve_max_cache_bytes(options);
      ADD_FAILURE() << "expected std::invalid_argument for " << value;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("max_cache_bytes = " + std::to_string(value)),
                std::string::npos)
          << e.what();
    }
  }
}

// The version is the top-level CMake project() version, and the key changes with it (and
// with each of its other inputs); compile_and_load names its entry by exactly this key.
TEST(JitCacheKey, CoversTheStaxVersionAndEveryOtherInput) {
  EXPECT_EQ(stax_version(), STAX_TEST_PROJECT_VERSION);
  EXPECT_TRUE(std::regex_match(stax_version(), std::regex(R"(\d+\.\d+\.\d+)"))) << stax_version();

  TempDir dir;
  JitOptions options;
  options.simd = SimdLevel::Scalar;
  options.cache_dir = dir.path();
  const CacheKeyInputs inputs = cache_key_inputs(answer_source(42), options);
  EXPECT_EQ(inputs.stax_version, stax_version());
  const std::string key = cache_key(inputs);
  EXPECT_TRUE(std::regex_match(key, std::regex("[0-9a-f]{32}"))) << key;

  const JitResult result = compile_and_load(answer_source(42), options);
  EXPECT_EQ(result.library_path, (fs::path(dir.path()) / ("stax_" + key + ".so")).string());

  std::vector<CacheKeyInputs> changed(7, inputs);
  changed[0].stax_version += ".1";
  changed[1].compiler_command.push_back("-v");
  changed[2].compiler_identity += " ";
  changed[3].compile_flags = kernel_compile_flags(SimdLevel::Avx2);
  changed[4].link_flags.pop_back();
  changed[5].kernel_headers_digest[0] ^= 1;
  changed[6].source += "\n";
  std::set<std::string> keys = {key};
  for (const CacheKeyInputs& variant : changed) keys.insert(cache_key(variant));
  EXPECT_EQ(keys.size(), changed.size() + 1);
}

}  // namespace
}  // namespace stax::runtime
