// Issue 35, CI without a GPU: NVRTC compiles every CUDA kernel the suites produce (the golden
// programs' modules, tests/golden/kernels/*.cu, and the headers' own check file) for sm_80 and
// sm_90 with Stax's CUDA headers as the only include directory, and ptxas' report holds what
// the launch bounds promise: no spills, registers within 65536 / the block's threads (and 255),
// static shared memory within 48 KiB.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cuda_test_util.h"

namespace stax::runtime::cuda::testing {
namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The block of each kernel, from its __launch_bounds__(N).
std::map<std::string, int> launch_bounds(const std::string& source) {
  std::map<std::string, int> out;
  const std::string tag = "__launch_bounds__(";
  for (size_t at = source.find(tag); at != std::string::npos; at = source.find(tag, at + 1)) {
    const int block = std::stoi(source.substr(at + tag.size()));
    const size_t name = source.find(") ", at) + 2;
    out[source.substr(name, source.find('(', name) - name)] = block;
  }
  return out;
}

TEST(GeneratedKernels, EveryGoldenModuleCompilesWithinItsLaunchBounds) {
  test_nvrtc();
  int modules = 0;
  for (const auto& entry : std::filesystem::directory_iterator(STAX_GOLDEN_KERNEL_DIR)) {
    if (entry.path().extension() != ".cu") continue;
    ++modules;
    const std::string source = read(entry.path());
    const auto bounds = launch_bounds(source);
    ASSERT_FALSE(bounds.empty()) << entry.path();
    for (const char* arch : {"sm_80", "sm_90"}) {
      CudaCompileOptions options;
      options.arch = arch;
      options.include_dirs = {STAX_CUDA_KERNEL_INCLUDE_DIR};
      const CudaCompileResult r = compile_cuda(source, entry.path().filename().string(), options);
      EXPECT_FALSE(r.is_ptx) << entry.path() << " " << arch;
      ASSERT_EQ(r.kernels.size(), bounds.size()) << entry.path() << "\n" << r.log;
      for (const KernelResources& k : r.kernels) {
        ASSERT_TRUE(bounds.count(k.name)) << k.name;
        const int block = bounds.at(k.name);
        EXPECT_EQ(k.spill_store_bytes, 0) << entry.path() << " " << arch << " " << k.name;
        EXPECT_EQ(k.spill_load_bytes, 0) << entry.path() << " " << arch << " " << k.name;
        EXPECT_GT(k.registers, 0);
        EXPECT_LE(k.registers, std::min(255, 65536 / block)) << k.name;
        EXPECT_LE(k.shared_bytes, 48 * 1024) << k.name;
      }
    }
  }
  EXPECT_GE(modules, 10);
}

TEST(GeneratedKernels, TheHeadersCheckCompilesForEveryArchitecture) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    CudaCompileOptions options;
    options.arch = arch;
    const CudaCompileResult r = compile_cuda_file("headers_check.cu", options);
    EXPECT_FALSE(r.kernels.empty()) << arch;
    for (const KernelResources& k : r.kernels) EXPECT_EQ(k.spill_store_bytes, 0) << k.name;
  }
}

}  // namespace
}  // namespace stax::runtime::cuda::testing
