// The JIT cache does not trust what it finds on disk: truncated, zeroed, bit-flipped and
// foreign kernel libraries, a FIFO in place of one, missing or damaged checksum files and
// damaged precompiled headers are each a miss that rebuilds the entry exactly once, never a
// crash, hang or another program's kernel. Damaged entries are loaded by probe processes
// (jit_probe.h), so a crash fails the test rather than the test binary.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "jit_probe.h"
#include "runtime/jit.h"
#include "runtime/sha256.h"
#include "test_util.h"

namespace stax::runtime {
namespace {

namespace fs = std::filesystem;
using testing::expect_concurrent_probes_agree;
using testing::run_probe;
using testing::TempDir;
using testing::write_text;

const char* const kAnswerSource = "extern \"C\" int stax_probe_answer() { return 42; }\n";
// Another program defining the same function. Its static local in an inline function is a
// unique symbol (STB_GNU_UNIQUE), which keeps the library mapped after dlclose.
const char* const kForeignSource =
    "inline int& stax_probe_counter() { static int count = 0; return count; }\n"
    "extern \"C\" int stax_probe_answer() { return 7 + stax_probe_counter(); }\n";

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

fs::path checksum_file(const fs::path& library) {
  return fs::path(library.string() + ".sha256");
}

// A checksum file that vouches for `library`'s current bytes, in the format jit.cpp writes:
// what a forger (or an unlucky copy of a whole entry with a recomputed checksum) produces.
void forge_checksum(const fs::path& library) {
  write_bytes(checksum_file(library),
              sha256_hex(read_bytes(library)) + "  " + library.filename().string() + "\n");
}

// The cache's files whose names end in `suffix`.
std::vector<fs::path> files_ending_in(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      found.push_back(entry.path());
    }
  }
  return found;
}

JitOptions scalar_options(const std::string& cache_dir) {
  JitOptions options;
  options.simd = SimdLevel::Scalar;
  options.cache_dir = cache_dir;
  return options;
}

class JitCacheIntegrity : public ::testing::Test {
 protected:
  // Writes `source` for the probe and builds its cache entry in a probe process; returns
  // the library.
  fs::path build_entry(const std::string& source = kAnswerSource) {
    write_text(source_file_, source);
    EXPECT_EQ(run_probe(source_file_, cache_), std::make_pair(std::string("miss 1"), 0));
    const std::vector<fs::path> libraries = files_ending_in(cache_, ".so");
    EXPECT_EQ(libraries.size(), 1u);
    return libraries.empty() ? fs::path() : libraries.front();
  }

  // The damaged entry is a miss that compiles once and answers 42; the rebuilt entry is
  // then a hit without the compiler.
  void expect_rebuilt() {
    EXPECT_EQ(run_probe(source_file_, cache_), std::make_pair(std::string("miss 1"), 0));
    EXPECT_EQ(run_probe(source_file_, cache_), std::make_pair(std::string("hit 0"), 0));
  }

  TempDir dir_;
  const std::string source_file_ = dir_.path() + "/probe_source.cpp";
  const std::string cache_ = dir_.path() + "/cache";
};

TEST_F(JitCacheIntegrity, TruncatedLibraryIsRebuilt) {
  const fs::path library = build_entry();
  const std::string bytes = read_bytes(library);
  write_bytes(library, bytes.substr(0, bytes.size() / 2));  // dlopen of this: SIGBUS
  expect_rebuilt();
}

TEST_F(JitCacheIntegrity, ZeroedLibraryIsRebuilt) {
  const fs::path library = build_entry();
  std::string bytes = read_bytes(library);
  ASSERT_GT(bytes.size(), 4096u);
  // The ELF and program headers survive in the first page, so dlopen maps zeros as code.
  std::fill(bytes.begin() + 4096, bytes.end(), '\0');
  write_bytes(library, bytes);
  expect_rebuilt();
}

TEST_F(JitCacheIntegrity, LibraryWithOneFlippedBitIsRebuilt) {
  const fs::path library = build_entry();
  std::string bytes = read_bytes(library);
  // `mov $42, %eax`: a flipped bit in the immediate makes the kernel answer 43.
  const size_t at = bytes.find(std::string("\xb8\x2a\x00\x00\x00", 5));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] ^= 1;
  write_bytes(library, bytes);
  expect_rebuilt();
}

// Another program's valid library copied under this entry's name must not run (the probe
// fails with exit status 3 when stax_probe_answer() returns 7 instead of 42).
class ForeignLibrary : public JitCacheIntegrity {
 protected:
  void SetUp() override {
    library_ = build_entry();
    const std::string foreign_cache = dir_.path() + "/foreign-cache";
    const std::string foreign_source = dir_.path() + "/foreign_source.cpp";
    write_text(foreign_source, kForeignSource);
    ASSERT_EQ(run_probe(foreign_source, foreign_cache, "7"),
              std::make_pair(std::string("miss 1"), 0));
    const std::vector<fs::path> libraries = files_ending_in(foreign_cache, ".so");
    ASSERT_EQ(libraries.size(), 1u);
    foreign_library_ = libraries.front();
    fs::copy_file(foreign_library_, library_, fs::copy_options::overwrite_existing);
  }

  fs::path library_;
  fs::path foreign_library_;
};

TEST_F(ForeignLibrary, AloneIsRebuilt) {
  expect_rebuilt();
}

TEST_F(ForeignLibrary, WithItsOwnChecksumFileIsRebuilt) {
  fs::copy_file(checksum_file(foreign_library_), checksum_file(library_),
                fs::copy_options::overwrite_existing);
  expect_rebuilt();
}

TEST_F(ForeignLibrary, WithAForgedChecksumIsRebuilt) {
  forge_checksum(library_);  // only the key embedded in the library tells them apart
  expect_rebuilt();
}

TEST_F(JitCacheIntegrity, FifoInPlaceOfTheLibraryIsAMissNotAHang) {
  const fs::path library = build_entry();
  ASSERT_TRUE(fs::remove(library));
  ASSERT_EQ(::mkfifo(library.c_str(), 0600), 0);  // reading it would block forever
  expect_rebuilt();
  EXPECT_TRUE(fs::is_regular_file(library));
}

TEST_F(JitCacheIntegrity, MissingChecksumFileIsAMiss) {
  const fs::path library = build_entry();
  ASSERT_TRUE(fs::remove(checksum_file(library)));  // as if the writer crashed before it
  expect_rebuilt();
  EXPECT_TRUE(fs::exists(checksum_file(library)));
}

TEST_F(JitCacheIntegrity, DamagedChecksumFileIsAMiss) {
  const fs::path library = build_entry();
  ASSERT_TRUE(fs::exists(checksum_file(library)));
  std::string line = read_bytes(checksum_file(library));
  line[0] = line[0] == '0' ? '1' : '0';  // one digit of the digest
  write_bytes(checksum_file(library), line);
  expect_rebuilt();
  write_bytes(checksum_file(library), "garbage");
  expect_rebuilt();
}

TEST_F(JitCacheIntegrity, ConcurrentProcessesRepairADamagedEntry) {
  const fs::path library = build_entry(std::string(kAnswerSource) + "// concurrent repair\n");
  const std::string bytes = read_bytes(library);
  write_bytes(library, bytes.substr(0, bytes.size() / 2));
  expect_concurrent_probes_agree(source_file_, cache_, 4);
  EXPECT_EQ(run_probe(source_file_, cache_), std::make_pair(std::string("hit 0"), 0));
}

// In this process: a damaged entry recompiles exactly once, and the rebuilt one is a hit.
TEST(JitCacheIntegrityInProcess, DamagedEntryRecompilesExactlyOnce) {
  TempDir dir;
  std::string path;
  {
    const JitResult first = compile_and_load(kAnswerSource, scalar_options(dir.path()));
    path = first.library_path;
  }  // closed and unmapped: the file may be damaged now
  std::string bytes = read_bytes(path);
  const size_t at = bytes.find(std::string("\xb8\x2a\x00\x00\x00", 5));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] ^= 1;
  write_bytes(path, bytes);

  const int64_t before = compiler_invocations();
  {
    const JitResult rebuilt = compile_and_load(kAnswerSource, scalar_options(dir.path()));
    EXPECT_FALSE(rebuilt.cache_hit);
    EXPECT_EQ(compiler_invocations(), before + 1);
    EXPECT_EQ(rebuilt.library->function<int (*)()>("stax_probe_answer")(), 42);
  }
  const JitResult again = compile_and_load(kAnswerSource, scalar_options(dir.path()));
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(compiler_invocations(), before + 1);
  EXPECT_EQ(again.library->function<int (*)()>("stax_probe_answer")(), 42);
}

// A foreign library that passed the checksum is loaded, rejected by its key, and stays
// mapped under the entry's path: it is the first in this process to define its unique
// symbol, which makes it impossible to unload. dlopen of that path returns the stale image
// even after the entry was rebuilt; the JIT must still hand out the rebuilt library.
TEST(JitCacheIntegrityInProcess, RejectedLibraryThatStaysMappedIsNotReused) {
  TempDir dir;
  const std::string path = [&] {
    return compile_and_load(kAnswerSource, scalar_options(dir.path())).library_path;
  }();
  // Built by a probe, so this process has not loaded it (nor its unique symbol) yet.
  const std::string foreign_source = dir.path() + "/foreign_source.cpp";
  const std::string foreign_cache = dir.path() + "/foreign-cache";
  write_text(foreign_source,
             "inline int& stax_stale_counter() { static int count = 0; return count; }\n"
             "extern \"C\" int stax_probe_answer() { return 7 + stax_stale_counter(); }\n");
  ASSERT_EQ(run_probe(foreign_source, foreign_cache, "7"),
            std::make_pair(std::string("miss 1"), 0));
  const std::vector<fs::path> foreign = files_ending_in(foreign_cache, ".so");
  ASSERT_EQ(foreign.size(), 1u);
  fs::copy_file(foreign.front(), path, fs::copy_options::overwrite_existing);
  forge_checksum(path);

  const int64_t before = compiler_invocations();
  {
    const JitResult rebuilt = compile_and_load(kAnswerSource, scalar_options(dir.path()));
    EXPECT_FALSE(rebuilt.cache_hit);
    EXPECT_EQ(compiler_invocations(), before + 1);
    EXPECT_EQ(rebuilt.library->function<int (*)()>("stax_probe_answer")(), 42);
  }
  // Precondition: the image mapped under the entry's path is still the foreign library,
  // which embeds the foreign entry's key.
  void* stale = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(stale, nullptr);
  const void* stale_key = ::dlsym(stale, "stax_cache_key");
  ASSERT_NE(stale_key, nullptr);
  EXPECT_EQ(static_cast<const char*>(stale_key), foreign.front().stem().string().substr(5));
  EXPECT_NE(static_cast<const char*>(stale_key), fs::path(path).stem().string().substr(5));
  ::dlclose(stale);
  // Loading the good entry from disk again meets the same stale image.
  const JitResult again = compile_and_load(kAnswerSource, scalar_options(dir.path()));
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(compiler_invocations(), before + 1);
  EXPECT_EQ(again.library->function<int (*)()>("stax_probe_answer")(), 42);
}

// GCC reads stax_kernel.h from a precompiled header in the cache (the default compiler of
// this build is GCC, so the header must exist). A damaged one is rebuilt: a probe whose
// kernel is new then runs the compiler twice (header, kernel), or three times when the
// header's checksum was forged and only the failing kernel compile reveals the damage.
TEST_F(JitCacheIntegrity, DamagedPrecompiledHeaderIsRebuilt) {
  const std::string source = "#include \"stax_kernel.h\"\n" + std::string(kAnswerSource);
  write_text(source_file_, source);
  ASSERT_EQ(run_probe(source_file_, cache_), std::make_pair(std::string("miss 2"), 0));
  const std::vector<fs::path> headers = files_ending_in(cache_, ".gch");
  ASSERT_EQ(headers.size(), 1u);
  const fs::path header = headers.front();
  EXPECT_TRUE(fs::exists(checksum_file(header)));

  struct Damage {
    const char* name;
    void (*apply)(const fs::path&);
    const char* probe_output;
  };
  const Damage damages[] = {
      {"truncated",
       [](const fs::path& gch) { fs::resize_file(gch, 5000); },  // GCC: "error: while reading"
       "miss 2"},
      {"garbage", [](const fs::path& gch) { write_bytes(gch, "garbage"); },  // GCC ignores it
       "miss 2"},
      {"truncated, checksum forged",
       [](const fs::path& gch) {
         fs::resize_file(gch, 5000);
         write_bytes(checksum_file(gch), sha256_hex(read_bytes(gch)) + "  " +
                                             gch.parent_path().filename().string() + "/" +
                                             gch.filename().string() + "\n");
       },
       "miss 3"},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.name);
    damage.apply(header);
    write_text(source_file_, source + "// after a " + damage.name + " header\n");
    EXPECT_EQ(run_probe(source_file_, cache_), std::make_pair(std::string(damage.probe_output), 0));
  }
  // The last rebuild left an intact header: a new kernel compiles once.
  write_text(source_file_, source + "// intact header\n");
  EXPECT_EQ(run_probe(source_file_, cache_), std::make_pair(std::string("miss 1"), 0));
}

}  // namespace
}  // namespace stax::runtime
