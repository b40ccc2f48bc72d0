// The CUDA driver API, loaded at run time (no CUDA SDK at build time): libcuda.so.1 is opened
// on first use and every entry point is requested through cuGetProcAddress at CUDA 12.0's ABI
// (abi::kDriverAbiVersion), so the _v2 variants match the signatures in cuda_abi.h whatever
// driver is installed; a driver without cuGetProcAddress (before 11.3) is served by dlsym of
// the versioned names. See docs/cuda_runtime.md.
//
// Contexts: Stax uses each device's primary context (the one PyTorch uses, so its pointers and
// streams stay valid) and never creates another. Driver calls that need a context (modules,
// memory, launches) use the calling thread's current one: construct a PrimaryContext, or call
// make_current() on one, on each thread first.
//
// Errors: every failing call throws CudaError naming the call and the driver's error name and
// text, e.g. "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (device kernel image is
// invalid)". Without a usable driver every call throws CudaError with the reason
// cuda_driver_available() gives, e.g. "no CUDA driver: libcuda.so.1 could not be loaded
// (libcuda.so.1: cannot open shared object file: No such file or directory)".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "runtime/cuda/cuda_abi.h"
#include "runtime/cuda/cuda_error.h"

namespace stax::runtime::cuda {

using DevicePtr = abi::CUdeviceptr;
using StreamHandle = abi::CUstream;  // nullptr: the legacy default stream

// Whether the driver loads, has every entry point Stax uses and cuInit(0) succeeds; when not,
// *why (if given) says which of these failed. Never throws. Loads the driver once per process.
bool cuda_driver_available(std::string* why = nullptr);

// cuDriverGetVersion, e.g. 13000 for CUDA 13.0.
int cuda_driver_version();

// Devices the driver sees: 0 when cuInit reports CUDA_ERROR_NO_DEVICE, CudaError without a
// usable driver.
int cuda_device_count();

// What the driver reports about device `index`, in the units of stax::target::CudaDevice
// (whose fields it can fill; the copy bandwidth is not a driver attribute and stays 0).
struct CudaDeviceProperties {
  int index = 0;
  std::string name;            // "NVIDIA H100 80GB HBM3"
  int compute_capability = 0;  // major * 10 + minor: 90 for sm_90
  int sm_count = 0;
  int registers_per_sm = 0;  // 32-bit registers
  int registers_per_block = 0;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  int warp_size = 0;
  int64_t shared_bytes_per_block = 0;        // without opting in (48 KiB)
  int64_t shared_bytes_per_block_optin = 0;  // with the dynamic-shared-memory attribute
  int64_t shared_bytes_per_sm = 0;
  int64_t l2_bytes = 0;
  int64_t global_memory_bytes = 0;
  double copy_bytes_per_second = 0;  // unknown to the driver: 0

  std::string arch() const { return "sm_" + std::to_string(compute_capability); }
};
CudaDeviceProperties cuda_device_properties(int index);

// A device's primary context, retained for the object's lifetime (cuDevicePrimaryCtxRetain /
// cuDevicePrimaryCtxRelease) and made current on the constructing thread (cuCtxSetCurrent).
class PrimaryContext {
 public:
  explicit PrimaryContext(int device_index = 0);
  ~PrimaryContext();
  PrimaryContext(PrimaryContext&& other) noexcept;
  PrimaryContext& operator=(PrimaryContext&&) = delete;
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;

  // Makes the context current on the calling thread.
  void make_current() const;
  abi::CUcontext handle() const { return context_; }
  abi::CUdevice device() const { return device_; }
  int device_index() const { return index_; }

 private:
  int index_ = 0;
  abi::CUdevice device_ = 0;
  abi::CUcontext context_ = nullptr;
};

// cuCtxSynchronize on the current context.
void context_synchronize();

struct Dim3 {
  unsigned x = 1;
  unsigned y = 1;
  unsigned z = 1;
};

// A kernel of a loaded module (valid while its CudaModule lives).
struct CudaFunction {
  abi::CUfunction handle = nullptr;
  std::string name;

  // cuFuncGetAttribute (e.g. CU_FUNC_ATTRIBUTE_NUM_REGS).
  int attribute(abi::CUfunction_attribute attribute) const;
  // cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES): required before a
  // launch with more than 48 KiB of dynamic shared memory.
  void set_max_dynamic_shared_bytes(int64_t bytes) const;
};

inline constexpr int64_t kDefaultDynamicSharedLimit = 48 * 1024;

// A module loaded into the current context from a cubin or a NUL-terminated PTX image
// (cuModuleLoadData), unloaded on destruction.
class CudaModule {
 public:
  explicit CudaModule(const std::string& image);
  ~CudaModule();
  CudaModule(CudaModule&& other) noexcept;
  CudaModule& operator=(CudaModule&& other) noexcept;
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  // cuModuleGetFunction; with `max_dynamic_shared_bytes` above 48 KiB also sets the function's
  // dynamic-shared-memory limit to it.
  CudaFunction function(const std::string& name, int64_t max_dynamic_shared_bytes = 0) const;
  // Address and size of a __device__ variable (cuModuleGetGlobal); nullopt when the module has
  // none of that name.
  std::optional<std::pair<DevicePtr, size_t>> find_global(const std::string& name) const;

  abi::CUmodule handle() const { return module_; }

 private:
  abi::CUmodule module_ = nullptr;
};

// cuLaunchKernel on `stream`; `args` points at each argument's value, in order. With more than
// 48 KiB of dynamic shared memory the function needs set_max_dynamic_shared_bytes first (the
// error says so).
void launch(const CudaFunction& function, Dim3 grid, Dim3 block, unsigned shared_bytes,
            StreamHandle stream, void** args);

// Device memory from cuMemAlloc in the current context, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  DevicePtr get() const { return address_; }
  size_t bytes() const { return bytes_; }

 private:
  DevicePtr address_ = 0;
  size_t bytes_ = 0;
};

// Copies (cuMemcpyHtoD / DtoH, synchronous) and their stream-ordered forms.
void copy_to_device(DevicePtr destination, const void* source, size_t bytes);
void copy_to_host(void* destination, DevicePtr source, size_t bytes);
void copy_to_device_async(DevicePtr destination, const void* source, size_t bytes,
                          StreamHandle stream);
void copy_to_host_async(void* destination, DevicePtr source, size_t bytes, StreamHandle stream);
// cuMemsetD8.
void fill_device_bytes(DevicePtr destination, unsigned char value, size_t bytes);

// A non-blocking stream of the current context (cuStreamCreate), destroyed with the object.
class CudaStream {
 public:
  CudaStream();
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  StreamHandle get() const { return stream_; }
  void synchronize() const;

 private:
  StreamHandle stream_ = nullptr;
};

// cuStreamSynchronize.
void stream_synchronize(StreamHandle stream);

}  // namespace stax::runtime::cuda
