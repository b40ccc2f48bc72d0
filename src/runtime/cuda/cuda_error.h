// The one exception type of the CUDA runtime (NVRTC, the driver API, the cubin cache).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace stax::runtime::cuda {

// What failed, in words a user can act on: the call and the library's own name and text of the
// error ("cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)"),
// NVRTC's log for compile errors, or why a library could not be found or loaded.
class CudaError : public std::runtime_error {
 public:
  explicit CudaError(const std::string& message, std::string log = "")
      : std::runtime_error(message), log_(std::move(log)) {}
  // NVRTC's log when a compile failed (also part of what()), else empty.
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

}  // namespace stax::runtime::cuda
