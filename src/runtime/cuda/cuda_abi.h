// Stax's own declarations of the parts of the CUDA driver API and of NVRTC that the CUDA runtime
// calls, so that Stax builds without a CUDA SDK (issue 35, point 4): opaque handle types, the
// enumerators used (with the numeric values the CUDA and NVRTC headers document; these values
// are part of the libraries' stable ABI) and function pointer types. The functions themselves
// are resolved at run time from libcuda.so.1 (driver_api.cpp, through cuGetProcAddress at an
// explicit CUDA version) and from libnvrtc (nvrtc.cpp), both loaded with dlopen.
//
// The names follow the CUDA headers' so that the code reads like CUDA code, but they live in
// stax::runtime::cuda::abi and are distinct types from the SDK's: nothing here may be mixed
// with <cuda.h> in one translation unit without qualification.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stax::runtime::cuda::abi {

// --- Driver API (libcuda.so.1) ------------------------------------------------------------

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // 64-bit device address (the _v2 ABI)
using cuuint64_t = uint64_t;

struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;  // nullptr: the legacy default stream

// CUresult values Stax tests for; every other code is only named, via cuGetErrorName.
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;

enum CUdevice_attribute : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum CUfunction_attribute : int {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

// cuGetProcAddress flags and its symbol status (CUDA 12's cuGetProcAddress_v2).
inline constexpr cuuint64_t CU_GET_PROC_ADDRESS_DEFAULT = 0;
enum CUdriverProcAddressQueryResult : int {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

// cuStreamCreate flags.
inline constexpr unsigned CU_STREAM_DEFAULT = 0;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 1;

// The driver ABI Stax is written against: every entry point is requested at this version, so
// cuGetProcAddress returns the variant with the signature below (cuMemAlloc -> cuMemAlloc_v2,
// ...) whatever newer driver is installed.
inline constexpr int kDriverAbiVersion = 12000;

// Entry points, by their base names (the _v2 variants where CUDA 12.0 has them; the fallback
// names for dlsym are listed in driver_api.cpp).
using PFN_cuGetProcAddress_v2 = CUresult (*)(const char* symbol, void** pfn, int cuda_version,
                                             cuuint64_t flags,
                                             CUdriverProcAddressQueryResult* status);
using PFN_cuGetProcAddress_v1 = CUresult (*)(const char* symbol, void** pfn, int cuda_version,
                                             cuuint64_t flags);
using PFN_cuInit = CUresult (*)(unsigned flags);
using PFN_cuDriverGetVersion = CUresult (*)(int* version);
using PFN_cuGetErrorName = CUresult (*)(CUresult error, const char** name);
using PFN_cuGetErrorString = CUresult (*)(CUresult error, const char** text);
using PFN_cuDeviceGetCount = CUresult (*)(int* count);
using PFN_cuDeviceGet = CUresult (*)(CUdevice* device, int ordinal);
using PFN_cuDeviceGetName = CUresult (*)(char* name, int length, CUdevice device);
using PFN_cuDeviceGetAttribute = CUresult (*)(int* value, CUdevice_attribute attribute,
                                              CUdevice device);
using PFN_cuDeviceTotalMem = CUresult (*)(size_t* bytes, CUdevice device);
using PFN_cuDevicePrimaryCtxRetain = CUresult (*)(CUcontext* context, CUdevice device);
using PFN_cuDevicePrimaryCtxRelease = CUresult (*)(CUdevice device);
using PFN_cuCtxSetCurrent = CUresult (*)(CUcontext context);
using PFN_cuCtxGetCurrent = CUresult (*)(CUcontext* context);
using PFN_cuCtxSynchronize = CUresult (*)();
using PFN_cuModuleLoadData = CUresult (*)(CUmodule* module, const void* image);
using PFN_cuModuleUnload = CUresult (*)(CUmodule module);
using PFN_cuModuleGetFunction = CUresult (*)(CUfunction* function, CUmodule module,
                                             const char* name);
using PFN_cuModuleGetGlobal = CUresult (*)(CUdeviceptr* address, size_t* bytes, CUmodule module,
                                           const char* name);
using PFN_cuFuncGetAttribute = CUresult (*)(int* value, CUfunction_attribute attribute,
                                            CUfunction function);
using PFN_cuFuncSetAttribute = CUresult (*)(CUfunction function, CUfunction_attribute attribute,
                                            int value);
using PFN_cuLaunchKernel = CUresult (*)(CUfunction function, unsigned grid_x, unsigned grid_y,
                                        unsigned grid_z, unsigned block_x, unsigned block_y,
                                        unsigned block_z, unsigned shared_bytes, CUstream stream,
                                        void** kernel_params, void** extra);
using PFN_cuMemAlloc = CUresult (*)(CUdeviceptr* address, size_t bytes);
using PFN_cuMemFree = CUresult (*)(CUdeviceptr address);
using PFN_cuMemcpyHtoD = CUresult (*)(CUdeviceptr destination, const void* source, size_t bytes);
using PFN_cuMemcpyDtoH = CUresult (*)(void* destination, CUdeviceptr source, size_t bytes);
using PFN_cuMemcpyHtoDAsync = CUresult (*)(CUdeviceptr destination, const void* source,
                                           size_t bytes, CUstream stream);
using PFN_cuMemcpyDtoHAsync = CUresult (*)(void* destination, CUdeviceptr source, size_t bytes,
                                           CUstream stream);
using PFN_cuMemsetD8 = CUresult (*)(CUdeviceptr destination, unsigned char value, size_t count);
using PFN_cuStreamCreate = CUresult (*)(CUstream* stream, unsigned flags);
using PFN_cuStreamDestroy = CUresult (*)(CUstream stream);
using PFN_cuStreamSynchronize = CUresult (*)(CUstream stream);

// --- NVRTC (libnvrtc.so.13 / .so.12) -----------------------------------------------------

using nvrtcResult = int;
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;

inline constexpr nvrtcResult NVRTC_SUCCESS = 0;
inline constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;
inline constexpr nvrtcResult NVRTC_ERROR_BUILTIN_OPERATION_FAILURE = 7;

using PFN_nvrtcGetErrorString = const char* (*)(nvrtcResult result);
using PFN_nvrtcVersion = nvrtcResult (*)(int* major, int* minor);
using PFN_nvrtcGetNumSupportedArchs = nvrtcResult (*)(int* count);
using PFN_nvrtcGetSupportedArchs = nvrtcResult (*)(int* archs);
using PFN_nvrtcCreateProgram = nvrtcResult (*)(nvrtcProgram* program, const char* source,
                                               const char* name, int header_count,
                                               const char* const* headers,
                                               const char* const* include_names);
using PFN_nvrtcDestroyProgram = nvrtcResult (*)(nvrtcProgram* program);
using PFN_nvrtcCompileProgram = nvrtcResult (*)(nvrtcProgram program, int option_count,
                                                const char* const* options);
using PFN_nvrtcGetSize = nvrtcResult (*)(nvrtcProgram program, size_t* bytes);
using PFN_nvrtcGetBytes = nvrtcResult (*)(nvrtcProgram program, char* bytes);

}  // namespace stax::runtime::cuda::abi
