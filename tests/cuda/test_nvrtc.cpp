// NVRTC without a GPU: found and loaded with its builtins, kernels compiled to cubins for sm_80
// and sm_90 with ptxas' report parsed, PTX only for an architecture NVRTC lacks, compile errors
// with NVRTC's log and line, and the messages when NVRTC cannot be found.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "runtime/cuda/nvrtc.h"

namespace stax::runtime::cuda {
namespace {

namespace fs = std::filesystem;
using testing::compile_cuda_file;
using testing::kRowSumSharedBytes;
using testing::kRowSumSource;
using testing::TempDir;
using testing::test_nvrtc;
using testing::write_bytes;

bool is_elf(const std::string& image) {
  return image.size() > 4 && image.compare(0, 4,
                                           "\x7f"
                                           "ELF") == 0;
}

TEST(Nvrtc, IsFoundWithItsBuiltins) {
  const NvrtcLibrary& nvrtc = test_nvrtc();
  EXPECT_FALSE(nvrtc.path.empty());
  EXPECT_TRUE(fs::is_regular_file(nvrtc.resolved_path)) << nvrtc.resolved_path;
  EXPECT_GT(nvrtc.file_bytes, 0);
  EXPECT_GE(nvrtc.version.major, 12);
  EXPECT_EQ(nvrtc_version().major, nvrtc.version.major);
  // The builtins beside a pip wheel's libnvrtc are preloaded (else compiles fail by soname).
  const fs::path beside =
      fs::path(nvrtc.resolved_path).parent_path() /
      detail::builtins_file_name(fs::path(nvrtc.resolved_path).filename().string(), nvrtc.version);
  if (fs::exists(beside)) {
    EXPECT_EQ(nvrtc.builtins_path, beside.string());
  }
  const std::vector<int> archs = nvrtc_supported_archs();
  EXPECT_TRUE(std::is_sorted(archs.begin(), archs.end()));
  EXPECT_NE(std::find(archs.begin(), archs.end(), 80), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
}

TEST(Nvrtc, BuiltinsFileNameFollowsTheLibrary) {
  EXPECT_EQ(detail::builtins_file_name("libnvrtc.so.13", {13, 0}), "libnvrtc-builtins.so.13.0");
  EXPECT_EQ(detail::builtins_file_name("libnvrtc.so.12", {12, 8}), "libnvrtc-builtins.so.12.8");
  EXPECT_EQ(detail::builtins_file_name("libnvrtc.alt.so.13", {13, 0}),
            "libnvrtc-builtins.alt.so.13.0");
}

TEST(Nvrtc, MissingLibraryIsNamedWithWhatWasTried) {
  try {
    detail::probe_nvrtc({"/nonexistent/libnvrtc.so.13", "libnvrtc-stax-test-absent.so"}, false);
    FAIL() << "expected CudaError";
  } catch (const CudaError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("no NVRTC found: tried /nonexistent/libnvrtc.so.13 (", 0), 0)
        << message;
    EXPECT_NE(message.find(", libnvrtc-stax-test-absent.so ("), std::string::npos) << message;
    EXPECT_NE(message.find("(set STAX_NVRTC_LIBRARY or pip install nvidia-cuda-nvrtc)"),
              std::string::npos)
        << message;
  }
  try {
    detail::probe_nvrtc({"/nonexistent/libnvrtc.so.13", "libnvrtc.so.13"}, true);
    FAIL() << "expected CudaError";
  } catch (const CudaError& error) {
    EXPECT_EQ(
        std::string(error.what()).rfind("cannot load NVRTC from '/nonexistent/libnvrtc.so.13'", 0),
        0)
        << error.what();
  }
}

TEST(Nvrtc, SwitchingLibrariesAfterLoadingIsRefused) {
  const NvrtcLibrary& nvrtc = test_nvrtc();
  EXPECT_NO_THROW(set_nvrtc_library(nvrtc.resolved_path));
  EXPECT_THROW(set_nvrtc_library("/nonexistent/libnvrtc.so.13"), CudaError);
}

TEST(Nvrtc, RowSumCompilesToCubinsWithItsResources) {
  test_nvrtc();
  for (const std::string arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    CudaCompileOptions options;
    options.arch = arch;
    const CudaCompileResult result = compile_cuda(kRowSumSource, "row_sum.cu", options);
    EXPECT_FALSE(result.is_ptx);
    EXPECT_EQ(result.target, arch);
    EXPECT_TRUE(result.note.empty()) << result.note;
    EXPECT_TRUE(is_elf(result.image));
    const std::vector<std::string> expected_options = {
        "--std=c++17", "-default-device", "--gpu-architecture=" + arch,
        "-DNDEBUG",    "--fmad=true",     "--ptxas-options=-v"};
    EXPECT_EQ(result.options, expected_options);
    ASSERT_EQ(result.kernels.size(), 1u) << result.log;
    const KernelResources& kernel = result.kernels[0];
    EXPECT_EQ(kernel.name, "row_sum");
    EXPECT_EQ(kernel.arch, arch);
    EXPECT_GT(kernel.registers, 0) << result.log;
    EXPECT_LE(kernel.registers, 255);
    EXPECT_EQ(kernel.spill_store_bytes, 0) << result.log;
    EXPECT_EQ(kernel.spill_load_bytes, 0) << result.log;
    EXPECT_EQ(kernel.stack_frame_bytes, 0) << result.log;
    EXPECT_EQ(kernel.shared_bytes, kRowSumSharedBytes) << result.log;
    if (result.log.find("barriers") != std::string::npos) {
      EXPECT_EQ(kernel.barriers, 1) << result.log;
    }
  }
}

TEST(Nvrtc, OptionsReachNvrtc) {
  test_nvrtc();
  CudaCompileOptions options;
  options.arch = "sm_90";
  options.fmad = false;
  options.lineinfo = true;
  options.max_registers = 32;
  options.extra_options = {"-DSTAX_TEST_SCALE=3"};
  const std::string source =
      "extern \"C\" __global__ void scale(float* y) { y[threadIdx.x] *= STAX_TEST_SCALE; }\n";
  const CudaCompileResult result = compile_cuda(source, "scale.cu", options);
  for (const char* option :
       {"--fmad=false", "-lineinfo", "--maxrregcount=32", "-DSTAX_TEST_SCALE=3"}) {
    EXPECT_NE(std::find(result.options.begin(), result.options.end(), option), result.options.end())
        << option;
  }
  ASSERT_EQ(result.kernels.size(), 1u) << result.log;
  EXPECT_LE(result.kernels[0].registers, 32);
}

TEST(Nvrtc, IncludeDirectoriesAndFilesFromDisk) {
  test_nvrtc();
  TempDir headers;
  write_bytes(headers.path() + "/stax_test_twice.cuh",
              "#pragma once\n__device__ inline float stax_twice(float v) { return 2.0f * v; }\n");
  CudaCompileOptions options;
  options.include_dirs = {headers.path()};
  const CudaCompileResult result = compile_cuda(
      "#include \"stax_test_twice.cuh\"\n"
      "extern \"C\" __global__ void twice(float* y) { y[threadIdx.x] = stax_twice(y[threadIdx.x]); "
      "}\n",
      "twice.cu", options);
  ASSERT_EQ(result.kernels.size(), 1u);
  EXPECT_EQ(result.kernels[0].name, "twice");
  // The helper .cu files of this folder are compiled with (an absolute path works too).
  write_bytes(headers.path() + "/from_disk.cu",
              "#include \"stax_test_twice.cuh\"\n"
              "extern \"C\" __global__ void from_disk(float* y) { y[0] = stax_twice(1.0f); }\n");
  const CudaCompileResult from_disk = compile_cuda_file(headers.path() + "/from_disk.cu", options);
  ASSERT_EQ(from_disk.kernels.size(), 1u);
  EXPECT_EQ(from_disk.kernels[0].name, "from_disk");
  EXPECT_THROW(compile_cuda_file("no_such_file.cu"), std::runtime_error);
}

TEST(Nvrtc, CompileErrorCarriesTheLogAndLine) {
  test_nvrtc();
  const std::string source =
      "extern \"C\" __global__ void broken(float* y) {\n"
      "  y[0] = 1.0f;\n"
      "  y[1] = undefined_name;\n"
      "}\n";
  try {
    compile_cuda(source, "broken.cu", {});
    FAIL() << "expected CudaError";
  } catch (const CudaError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("could not compile broken.cu for sm_90"), std::string::npos) << message;
    EXPECT_NE(message.find("NVRTC_ERROR_COMPILATION"), std::string::npos) << message;
    EXPECT_NE(message.find("broken.cu(3): error"), std::string::npos) << message;
    EXPECT_NE(message.find("undefined_name"), std::string::npos) << message;
    EXPECT_NE(error.log().find("broken.cu(3)"), std::string::npos) << error.log();
  }
}

TEST(Nvrtc, ArchitecturesNvrtcLacksGetPtxOrAnError) {
  test_nvrtc();
  const std::vector<int> archs = nvrtc_supported_archs();
  ASSERT_FALSE(archs.empty());
  // Newer than every architecture NVRTC knows: PTX for the newest one, and a note.
  CudaCompileOptions options;
  options.arch = "sm_9999";
  const CudaCompileResult result = compile_cuda(kRowSumSource, "row_sum.cu", options);
  EXPECT_TRUE(result.is_ptx);
  EXPECT_EQ(result.target, "compute_" + std::to_string(archs.back()));
  EXPECT_NE(result.note.find("compiled to PTX for compute_"), std::string::npos) << result.note;
  EXPECT_NE(result.image.find(".visible .entry row_sum"), std::string::npos);
  EXPECT_EQ(result.image.back(), '\0');  // cuModuleLoadData reads PTX up to its NUL
  EXPECT_TRUE(result.kernels.empty());
  // Older than every architecture it knows, and malformed names: errors.
  if (archs.front() > 50) {
    options.arch = "sm_50";
    EXPECT_THROW(compile_cuda(kRowSumSource, "row_sum.cu", options), CudaError);
  }
  for (const char* bad : {"90", "sm_", "compute_90", "sm_9x"}) {
    options.arch = bad;
    EXPECT_THROW(compile_cuda(kRowSumSource, "row_sum.cu", options), CudaError) << bad;
  }
}

TEST(PtxasReport, ParsesEntriesAndIgnoresDeviceFunctions) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for _Z6helperf\n"
      "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'scale' for 'sm_80'\n"
      "ptxas info    : Function properties for scale\n"
      "ptxas         .     16 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 0 barriers, 364 bytes cmem[0]\n"
      "ptxas info    : Compile time = 6.854 ms\n"
      "ptxas info    : Compiling entry function 'row_sum' for 'sm_80'\n"
      "ptxas info    : Function properties for row_sum\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 13 registers, used 1 barriers, 32 bytes smem, 372 bytes cmem[0]\n";
  const std::vector<KernelResources> kernels = parse_ptxas_report(log);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "scale");
  EXPECT_EQ(kernels[0].arch, "sm_80");
  EXPECT_EQ(kernels[0].registers, 32);
  EXPECT_EQ(kernels[0].stack_frame_bytes, 16);
  EXPECT_EQ(kernels[0].spill_store_bytes, 4);
  EXPECT_EQ(kernels[0].spill_load_bytes, 12);
  EXPECT_EQ(kernels[0].shared_bytes, 0);
  EXPECT_EQ(kernels[0].constant_bytes, 364);
  EXPECT_EQ(kernels[0].barriers, 0);
  EXPECT_EQ(kernels[1].name, "row_sum");
  EXPECT_EQ(kernels[1].registers, 13);
  EXPECT_EQ(kernels[1].shared_bytes, 32);
  EXPECT_EQ(kernels[1].constant_bytes, 372);
  EXPECT_EQ(kernels[1].barriers, 1);
  EXPECT_EQ(kernels[1].spill_store_bytes, 0);
  // An older ptxas without barriers, and no report at all.
  const std::vector<KernelResources> old = parse_ptxas_report(
      "ptxas info    : Compiling entry function 'k' for 'sm_70'\n"
      "ptxas info    : Used 8 registers, 64 bytes smem, 352 bytes cmem[0]\n");
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].registers, 8);
  EXPECT_EQ(old[0].shared_bytes, 64);
  EXPECT_TRUE(parse_ptxas_report("").empty());
  EXPECT_TRUE(parse_ptxas_report("warning: something\n").empty());
}

}  // namespace
}  // namespace stax::runtime::cuda
