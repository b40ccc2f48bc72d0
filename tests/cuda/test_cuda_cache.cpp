// The cubin cache: a second compile is a hit with the same cubin and report, a damaged entry
// (image, log or checksum) is a miss that recompiles and repairs it, and the key changes with
// every input it covers (architecture, options, source, name, the headers' contents).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cuda_test_util.h"
#include "runtime/cuda/cuda_jit.h"

namespace stax::runtime::cuda {
namespace {

namespace fs = std::filesystem;
using testing::kRowSumSharedBytes;
using testing::kRowSumSource;
using testing::read_bytes;
using testing::TempDir;
using testing::test_nvrtc;
using testing::write_bytes;

CudaJitOptions options_in(const TempDir& dir, const std::string& arch = "sm_90") {
  CudaJitOptions options;
  options.cache_dir = dir.path();
  options.compile.arch = arch;
  return options;
}

TEST(CudaCache, SecondCompileIsAHitWithTheSameCubin) {
  test_nvrtc();
  TempDir cache;
  const CudaJitOptions options = options_in(cache);
  const int64_t before = nvrtc_compile_count();
  const CudaJitResult first = compile_cuda_cached(kRowSumSource, "row_sum.cu", options);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_EQ(nvrtc_compile_count(), before + 1);
  ASSERT_EQ(first.key.size(), 32u);
  const fs::path entry = fs::path(cache.path()) / ("stax_" + first.key);
  EXPECT_EQ(first.image_path, entry.string() + ".cubin");
  for (const char* suffix : {".cubin", ".cubin.sha256", ".log", ".log.sha256", ".cu", ".used"}) {
    EXPECT_TRUE(fs::is_regular_file(entry.string() + suffix)) << suffix;
  }
  // The key is compiled into the module (checked after loading on a GPU).
  EXPECT_NE(first.compiled.image.find(first.key), std::string::npos);
  EXPECT_NE(read_bytes(entry.string() + ".cu").find(kCudaCacheKeySymbol), std::string::npos);
  ASSERT_EQ(first.compiled.kernels.size(), 1u);

  const CudaJitResult second = compile_cuda_cached(kRowSumSource, "row_sum.cu", options);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(nvrtc_compile_count(), before + 1);
  EXPECT_EQ(second.key, first.key);
  EXPECT_EQ(second.compiled.image, first.compiled.image);
  EXPECT_EQ(second.compiled.log, first.compiled.log);
  EXPECT_EQ(second.compiled.target, "sm_90");
  EXPECT_EQ(second.compiled.options, first.compiled.options);
  ASSERT_EQ(second.compiled.kernels.size(), 1u);
  EXPECT_EQ(second.compiled.kernels[0].name, "row_sum");
  EXPECT_EQ(second.compiled.kernels[0].registers, first.compiled.kernels[0].registers);
  EXPECT_EQ(second.compiled.kernels[0].shared_bytes, kRowSumSharedBytes);
}

TEST(CudaCache, DamagedEntriesAreRecompiledAndRepaired) {
  test_nvrtc();
  TempDir cache;
  const CudaJitOptions options = options_in(cache, "sm_80");
  const CudaJitResult original = compile_cuda_cached(kRowSumSource, "row_sum.cu", options);
  const std::string cubin = original.image_path;
  const std::string log = (fs::path(cache.path()) / ("stax_" + original.key + ".log")).string();

  struct Damage {
    const char* what;
    std::string path;
    std::string (*change)(std::string);
  };
  const Damage damages[] = {
      {"a flipped byte in the cubin", cubin,
       [](std::string bytes) {
         bytes[bytes.size() / 2] ^= 0x20;
         return bytes;
       }},
      {"a truncated cubin", cubin, [](std::string bytes) { return bytes.substr(0, 100); }},
      {"an empty log", log, [](std::string) { return std::string(); }},
      {"a checksum of other bytes", cubin + ".sha256",
       [](std::string line) {
         line[0] = line[0] == '0' ? '1' : '0';
         return line;
       }},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    write_bytes(damage.path, damage.change(read_bytes(damage.path)));
    const int64_t before = nvrtc_compile_count();
    const CudaJitResult again = compile_cuda_cached(kRowSumSource, "row_sum.cu", options);
    EXPECT_FALSE(again.cache_hit);
    EXPECT_EQ(nvrtc_compile_count(), before + 1);
    EXPECT_EQ(again.compiled.image, original.compiled.image);
    // Repaired: the next compile is a hit.
    const CudaJitResult repaired = compile_cuda_cached(kRowSumSource, "row_sum.cu", options);
    EXPECT_TRUE(repaired.cache_hit);
    EXPECT_EQ(repaired.compiled.image, original.compiled.image);
  }
  // Missing files.
  for (const std::string& path : {cubin, cubin + ".sha256", log, log + ".sha256"}) {
    SCOPED_TRACE(path);
    fs::remove(path);
    EXPECT_FALSE(compile_cuda_cached(kRowSumSource, "row_sum.cu", options).cache_hit);
    EXPECT_TRUE(compile_cuda_cached(kRowSumSource, "row_sum.cu", options).cache_hit);
  }
}

TEST(CudaCache, AnotherEntrysFilesAreAMiss) {
  test_nvrtc();
  TempDir cache;
  const CudaJitOptions options = options_in(cache);
  const std::string other_source = std::string(kRowSumSource) + "\n// another program\n";
  const CudaJitResult mine = compile_cuda_cached(kRowSumSource, "row_sum.cu", options);
  const CudaJitResult other = compile_cuda_cached(other_source, "row_sum.cu", options);
  ASSERT_NE(mine.key, other.key);
  // The other entry's cubin with its own (valid) checksum file, copied over this entry's.
  fs::copy_file(other.image_path, mine.image_path, fs::copy_options::overwrite_existing);
  fs::copy_file(other.image_path + ".sha256", mine.image_path + ".sha256",
                fs::copy_options::overwrite_existing);
  const CudaJitResult again = compile_cuda_cached(kRowSumSource, "row_sum.cu", options);
  EXPECT_FALSE(again.cache_hit);
  EXPECT_NE(again.compiled.image.find(mine.key), std::string::npos);
  EXPECT_EQ(again.compiled.image.find(other.key), std::string::npos);
}

TEST(CudaCache, KeyCoversEveryInput) {
  test_nvrtc();
  TempDir cache;
  TempDir headers;
  write_bytes(headers.path() + "/stax_test.cuh", "#pragma once\n#define STAX_TEST_VALUE 1\n");
  CudaJitOptions base = options_in(cache);
  base.compile.include_dirs = {headers.path()};
  const std::string source = kRowSumSource;
  auto key = [&](const CudaJitOptions& options, const std::string& text = "",
                 const std::string& name = "row_sum.cu") {
    return cuda_cache_key(cuda_cache_key_inputs(text.empty() ? source : text, name, options));
  };
  const std::string reference = key(base);
  EXPECT_EQ(key(base), reference);
  CudaJitOptions changed = base;
  changed.compile.arch = "sm_80";
  EXPECT_NE(key(changed), reference);
  changed = base;
  changed.compile.fmad = false;
  EXPECT_NE(key(changed), reference);
  changed = base;
  changed.compile.max_registers = 64;
  EXPECT_NE(key(changed), reference);
  changed = base;
  changed.compile.lineinfo = true;
  EXPECT_NE(key(changed), reference);
  EXPECT_NE(key(base, source + " "), reference);
  EXPECT_NE(key(base, "", "other.cu"), reference);
  // The cache directory is not part of the key.
  TempDir other_cache;
  changed = base;
  changed.cache_dir = other_cache.path();
  EXPECT_EQ(key(changed), reference);
  // Editing or adding a header changes the key.
  write_bytes(headers.path() + "/stax_test.cuh", "#pragma once\n#define STAX_TEST_VALUE 2\n");
  const std::string edited = key(base);
  EXPECT_NE(edited, reference);
  write_bytes(headers.path() + "/stax_more.cuh", "#pragma once\n");
  EXPECT_NE(key(base), edited);
}

TEST(CudaCache, PtxEntriesAndCompileErrors) {
  test_nvrtc();
  TempDir cache;
  const CudaJitOptions ptx_options = options_in(cache, "sm_9999");
  const CudaJitResult ptx = compile_cuda_cached(kRowSumSource, "row_sum.cu", ptx_options);
  EXPECT_TRUE(ptx.compiled.is_ptx);
  EXPECT_EQ(fs::path(ptx.image_path).extension(), ".ptx");
  const CudaJitResult hit = compile_cuda_cached(kRowSumSource, "row_sum.cu", ptx_options);
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_TRUE(hit.compiled.is_ptx);
  EXPECT_FALSE(hit.compiled.note.empty());
  EXPECT_EQ(hit.compiled.image, ptx.compiled.image);

  const CudaJitOptions options = options_in(cache);
  const std::string broken = "extern \"C\" __global__ void broken() { undefined_name; }\n";
  EXPECT_THROW(compile_cuda_cached(broken, "broken.cu", options), CudaError);
  const std::string key = cuda_cache_key(cuda_cache_key_inputs(broken, "broken.cu", options));
  EXPECT_FALSE(fs::exists(fs::path(cache.path()) / ("stax_" + key + ".cubin")));
  EXPECT_THROW(compile_cuda_cached(broken, "broken.cu", options), CudaError);
}

TEST(CudaCache, UnwritableCacheDirectoryStillCompiles) {
  test_nvrtc();
  TempDir dir;
  const std::string file = dir.path() + "/not_a_directory";
  write_bytes(file, "x");
  CudaJitOptions options;
  options.cache_dir = file + "/cache";
  const CudaJitResult result = compile_cuda_cached(kRowSumSource, "row_sum.cu", options);
  EXPECT_FALSE(result.cache_hit);
  EXPECT_TRUE(result.image_path.empty());
  EXPECT_FALSE(result.compiled.image.empty());
}

}  // namespace
}  // namespace stax::runtime::cuda
