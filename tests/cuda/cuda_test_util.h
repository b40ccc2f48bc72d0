// Shared helpers of the CUDA runtime tests: the NVRTC the suite uses, kernels written for the
// tests, .cu files of this folder, temporary directories and file bytes.
#pragma once

#include <string>

#include "runtime/cuda/nvrtc.h"

namespace stax::runtime::cuda::testing {

// Points the runtime at the suite's NVRTC once per process: $STAX_NVRTC_LIBRARY when set (the
// runtime reads it), else the nvidia-cuda-nvrtc wheel in the project's .venv, else the loader's
// search path. Returns the loaded library; throws CudaError, failing the calling test, when none
// is found (a missing NVRTC fails the suite, never skips it).
const NvrtcLibrary& test_nvrtc();

// The libnvrtc in the project's .venv (nvidia/cu13/lib/libnvrtc.so.13 or
// nvidia/cuda_nvrtc/lib/libnvrtc.so.12), or empty.
std::string venv_nvrtc();

// One block of 256 threads per row: a strided per-thread sum, a __shfl_xor_sync tree per warp,
// one partial per warp in __shared__ memory (8 floats: 32 bytes), and the first warp's tree.
// extern "C" row_sum(const float* x, float* y, int cols).
extern const char* const kRowSumSource;
inline constexpr int kRowSumBlock = 256;
inline constexpr int kRowSumSharedBytes = 32;

// Compiles the file `relative_path` of tests/cuda with the CUDA kernel headers
// (src/runtime/kernel_include_cuda) on the include path when that folder exists; the program is
// named after the file.
CudaCompileResult compile_cuda_file(const std::string& relative_path,
                                    CudaCompileOptions options = {});

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);

}  // namespace stax::runtime::cuda::testing
