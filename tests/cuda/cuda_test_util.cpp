#include "cuda_test_util.h"

#include <glob.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>

namespace fs = std::filesystem;

namespace stax::runtime::cuda::testing {

const char* const kRowSumSource = R"(
constexpr int kBlock = 256;
constexpr int kWarp = 32;

extern "C" __global__ void __launch_bounds__(kBlock)
row_sum(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float partial[kBlock / kWarp];
  const float* row = x + static_cast<long long>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += row[c];
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  }
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = acc;
  __syncthreads();
  if (threadIdx.x < kWarp) {
    acc = threadIdx.x < blockDim.x / kWarp ? partial[threadIdx.x] : 0.0f;
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      acc += __shfl_xor_sync(0xffffffffu, acc, offset);
    }
    if (threadIdx.x == 0) y[blockIdx.x] = acc;
  }
}
)";

std::string venv_nvrtc() {
  const std::string venv = STAX_TEST_VENV_DIR;
  for (const char* pattern : {"/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
                              "/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"}) {
    glob_t found{};
    const std::string full = venv + pattern;
    std::string path;
    if (::glob(full.c_str(), 0, nullptr, &found) == 0 && found.gl_pathc > 0) {
      path = found.gl_pathv[0];
    }
    ::globfree(&found);
    if (!path.empty()) return path;
  }
  return "";
}

const NvrtcLibrary& test_nvrtc() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("STAX_NVRTC_LIBRARY");
    if (env != nullptr && *env != '\0') return;
    if (const std::string path = venv_nvrtc(); !path.empty()) set_nvrtc_library(path);
  });
  try {
    return nvrtc_library();
  } catch (const CudaError& error) {
    throw CudaError(std::string(error.what()) +
                    "; the CUDA tests need NVRTC: run scripts/setup_python.sh, which installs "
                    "nvidia-cuda-nvrtc into " STAX_TEST_VENV_DIR);
  }
}

CudaCompileResult compile_cuda_file(const std::string& relative_path, CudaCompileOptions options) {
  test_nvrtc();
  const fs::path path = fs::path(STAX_TEST_CUDA_DIR) / relative_path;
  std::error_code ec;
  if (fs::is_directory(STAX_CUDA_KERNEL_INCLUDE_DIR, ec)) {
    options.include_dirs.insert(options.include_dirs.begin(), STAX_CUDA_KERNEL_INCLUDE_DIR);
  }
  return compile_cuda(read_bytes(path.string()), path.filename().string(), options);
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "stax-cuda-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace stax::runtime::cuda::testing
