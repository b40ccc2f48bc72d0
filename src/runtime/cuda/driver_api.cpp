// The CUDA driver API through dlopen("libcuda.so.1") and cuGetProcAddress.
#include "runtime/cuda/driver_api.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "runtime/shared_library.h"

namespace stax::runtime::cuda {

namespace {

using namespace abi;  // NOLINT: the CUDA names read as in CUDA code

constexpr const char* kDriverLibrary = "libcuda.so.1";

struct Driver {
  std::unique_ptr<SharedLibrary> library;
  std::string failure;     // why the driver is unusable; empty when it is usable
  bool no_device = false;  // cuInit said CUDA_ERROR_NO_DEVICE
  int version = 0;         // cuDriverGetVersion

  PFN_cuInit init = nullptr;
  PFN_cuDriverGetVersion driver_get_version = nullptr;
  PFN_cuGetErrorName get_error_name = nullptr;
  PFN_cuGetErrorString get_error_string = nullptr;
  PFN_cuDeviceGetCount device_get_count = nullptr;
  PFN_cuDeviceGet device_get = nullptr;
  PFN_cuDeviceGetName device_get_name = nullptr;
  PFN_cuDeviceGetAttribute device_get_attribute = nullptr;
  PFN_cuDeviceTotalMem device_total_mem = nullptr;
  PFN_cuDevicePrimaryCtxRetain primary_ctx_retain = nullptr;
  PFN_cuDevicePrimaryCtxRelease primary_ctx_release = nullptr;
  PFN_cuCtxSetCurrent ctx_set_current = nullptr;
  PFN_cuCtxGetCurrent ctx_get_current = nullptr;
  PFN_cuCtxSynchronize ctx_synchronize = nullptr;
  PFN_cuModuleLoadData module_load_data = nullptr;
  PFN_cuModuleUnload module_unload = nullptr;
  PFN_cuModuleGetFunction module_get_function = nullptr;
  PFN_cuModuleGetGlobal module_get_global = nullptr;
  PFN_cuFuncGetAttribute func_get_attribute = nullptr;
  PFN_cuFuncSetAttribute func_set_attribute = nullptr;
  PFN_cuLaunchKernel launch_kernel = nullptr;
  PFN_cuMemAlloc mem_alloc = nullptr;
  PFN_cuMemFree mem_free = nullptr;
  PFN_cuMemcpyHtoD memcpy_htod = nullptr;
  PFN_cuMemcpyDtoH memcpy_dtoh = nullptr;
  PFN_cuMemcpyHtoDAsync memcpy_htod_async = nullptr;
  PFN_cuMemcpyDtoHAsync memcpy_dtoh_async = nullptr;
  PFN_cuMemsetD8 memset_d8 = nullptr;
  PFN_cuStreamCreate stream_create = nullptr;
  PFN_cuStreamDestroy stream_destroy = nullptr;
  PFN_cuStreamSynchronize stream_synchronize = nullptr;

  // "CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)".
  std::string describe(CUresult result) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (get_error_name == nullptr || get_error_name(result, &name) != CUDA_SUCCESS) name = nullptr;
    if (get_error_string == nullptr || get_error_string(result, &text) != CUDA_SUCCESS) {
      text = nullptr;
    }
    std::string description = name != nullptr ? name : "CUDA error " + std::to_string(result);
    if (text != nullptr) description += std::string(" (") + text + ")";
    return description;
  }

  void check(CUresult result, const std::string& call) const {
    if (result != CUDA_SUCCESS) throw CudaError(call + " failed: " + describe(result));
  }
};

// Resolves every entry point of `driver` (whose library is open); the failure names the first
// missing one.
std::string resolve_entry_points(Driver& driver) {
  const SharedLibrary& library = *driver.library;
  if (!library.has_symbol("cuDriverGetVersion")) {
    return "the CUDA driver '" + library.path() + "' has no cuDriverGetVersion";
  }
  driver.driver_get_version = library.function<PFN_cuDriverGetVersion>("cuDriverGetVersion");
  if (driver.driver_get_version(&driver.version) != CUDA_SUCCESS) driver.version = 0;
  // Entry points at 12.0's ABI, or at the driver's own version when it is older (the
  // signatures used here did not change between 11.x and 12.0).
  const int abi_version =
      driver.version > 0 ? std::min(kDriverAbiVersion, driver.version) : kDriverAbiVersion;
  PFN_cuGetProcAddress_v2 get_proc_v2 = nullptr;
  PFN_cuGetProcAddress_v1 get_proc_v1 = nullptr;
  if (library.has_symbol("cuGetProcAddress_v2")) {
    get_proc_v2 = library.function<PFN_cuGetProcAddress_v2>("cuGetProcAddress_v2");
  } else if (library.has_symbol("cuGetProcAddress")) {
    get_proc_v1 = library.function<PFN_cuGetProcAddress_v1>("cuGetProcAddress");
  }
  auto lookup = [&](const char* name, const char* versioned_name) -> void* {
    void* address = nullptr;
    if (get_proc_v2 != nullptr) {
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      if (get_proc_v2(name, &address, abi_version, CU_GET_PROC_ADDRESS_DEFAULT, &status) ==
              CUDA_SUCCESS &&
          status == CU_GET_PROC_ADDRESS_SUCCESS && address != nullptr) {
        return address;
      }
    } else if (get_proc_v1 != nullptr) {
      if (get_proc_v1(name, &address, abi_version, CU_GET_PROC_ADDRESS_DEFAULT) == CUDA_SUCCESS &&
          address != nullptr) {
        return address;
      }
    }
    // No cuGetProcAddress, or it did not know the name: the versioned export.
    const char* exported = versioned_name != nullptr ? versioned_name : name;
    return library.has_symbol(exported) ? library.symbol(exported) : nullptr;
  };
  std::string missing;
  auto get = [&](auto& slot, const char* name, const char* versioned_name = nullptr) {
    void* address = lookup(name, versioned_name);
    if (address == nullptr && missing.empty()) missing = name;
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
  };
  get(driver.init, "cuInit");
  get(driver.get_error_name, "cuGetErrorName");
  get(driver.get_error_string, "cuGetErrorString");
  get(driver.device_get_count, "cuDeviceGetCount");
  get(driver.device_get, "cuDeviceGet");
  get(driver.device_get_name, "cuDeviceGetName");
  get(driver.device_get_attribute, "cuDeviceGetAttribute");
  get(driver.device_total_mem, "cuDeviceTotalMem", "cuDeviceTotalMem_v2");
  get(driver.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  get(driver.primary_ctx_release, "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2");
  get(driver.ctx_set_current, "cuCtxSetCurrent");
  get(driver.ctx_get_current, "cuCtxGetCurrent");
  get(driver.ctx_synchronize, "cuCtxSynchronize");
  get(driver.module_load_data, "cuModuleLoadData");
  get(driver.module_unload, "cuModuleUnload");
  get(driver.module_get_function, "cuModuleGetFunction");
  get(driver.module_get_global, "cuModuleGetGlobal", "cuModuleGetGlobal_v2");
  get(driver.func_get_attribute, "cuFuncGetAttribute");
  get(driver.func_set_attribute, "cuFuncSetAttribute");
  get(driver.launch_kernel, "cuLaunchKernel");
  get(driver.mem_alloc, "cuMemAlloc", "cuMemAlloc_v2");
  get(driver.mem_free, "cuMemFree", "cuMemFree_v2");
  get(driver.memcpy_htod, "cuMemcpyHtoD", "cuMemcpyHtoD_v2");
  get(driver.memcpy_dtoh, "cuMemcpyDtoH", "cuMemcpyDtoH_v2");
  get(driver.memcpy_htod_async, "cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2");
  get(driver.memcpy_dtoh_async, "cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2");
  get(driver.memset_d8, "cuMemsetD8", "cuMemsetD8_v2");
  get(driver.stream_create, "cuStreamCreate");
  get(driver.stream_destroy, "cuStreamDestroy", "cuStreamDestroy_v2");
  get(driver.stream_synchronize, "cuStreamSynchronize");
  if (!missing.empty()) {
    return "the CUDA driver '" + library.path() + "' (version " + std::to_string(driver.version) +
           ") has no " + missing + " (Stax needs a CUDA 11.3 or newer driver)";
  }
  return "";
}

Driver* load_driver() {
  auto driver = std::make_unique<Driver>();
  std::string error;
  driver->library = SharedLibrary::try_open(kDriverLibrary, &error);
  if (!driver->library) {
    driver->failure =
        std::string("no CUDA driver: ") + kDriverLibrary + " could not be loaded (" + error + ")";
    return driver.release();
  }
  driver->failure = resolve_entry_points(*driver);
  if (driver->failure.empty()) {
    const CUresult status = driver->init(0);
    if (status == CUDA_ERROR_NO_DEVICE) driver->no_device = true;
    if (status != CUDA_SUCCESS) {
      const int major = driver->version / 1000;
      const int minor = driver->version % 1000 / 10;
      driver->failure = "CUDA driver " + std::to_string(major) + "." + std::to_string(minor) +
                        " loaded from " + kDriverLibrary +
                        ", but cuInit failed: " + driver->describe(status);
    }
  }
  return driver.release();
}

// Loaded once, never unloaded (modules and memory may outlive any object of this file).
const Driver& driver_state() {
  static const Driver* const driver = load_driver();
  return *driver;
}

// The driver, usable; CudaError with the reason otherwise.
const Driver& driver() {
  const Driver& state = driver_state();
  if (!state.failure.empty()) throw CudaError(state.failure);
  return state;
}

std::string dims(Dim3 d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

}  // namespace

bool cuda_driver_available(std::string* why) {
  const Driver& state = driver_state();
  if (why != nullptr) *why = state.failure;
  return state.failure.empty();
}

int cuda_driver_version() {
  const Driver& state = driver_state();
  if (!state.library || state.driver_get_version == nullptr) throw CudaError(state.failure);
  return state.version;
}

int cuda_device_count() {
  const Driver& state = driver_state();
  if (state.no_device) return 0;
  const Driver& api = driver();
  int count = 0;
  api.check(api.device_get_count(&count), "cuDeviceGetCount");
  return count;
}

CudaDeviceProperties cuda_device_properties(int index) {
  const Driver& api = driver();
  CUdevice device = 0;
  api.check(api.device_get(&device, index), "cuDeviceGet(" + std::to_string(index) + ")");
  CudaDeviceProperties properties;
  properties.index = index;
  char name[256] = {};
  api.check(api.device_get_name(name, sizeof name - 1, device), "cuDeviceGetName");
  properties.name = name;
  auto attribute = [&](CUdevice_attribute which, const char* what) {
    int value = 0;
    api.check(api.device_get_attribute(&value, which, device),
              std::string("cuDeviceGetAttribute(") + what + ")");
    return value;
  };
  properties.compute_capability =
      attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR") * 10 +
      attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR");
  properties.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT");
  properties.registers_per_sm =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "MAX_REGISTERS_PER_SM");
  properties.registers_per_block =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "MAX_REGISTERS_PER_BLOCK");
  properties.max_threads_per_sm =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "MAX_THREADS_PER_SM");
  properties.max_threads_per_block =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK");
  properties.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "WARP_SIZE");
  properties.shared_bytes_per_block =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "MAX_SHARED_MEMORY_PER_BLOCK");
  properties.shared_bytes_per_block_optin = attribute(
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN");
  properties.shared_bytes_per_sm = attribute(
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "MAX_SHARED_MEMORY_PER_SM");
  properties.l2_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2_CACHE_SIZE");
  size_t total = 0;
  api.check(api.device_total_mem(&total, device), "cuDeviceTotalMem");
  properties.global_memory_bytes = static_cast<int64_t>(total);
  return properties;
}

PrimaryContext::PrimaryContext(int device_index) : index_(device_index) {
  const Driver& api = driver();
  api.check(api.device_get(&device_, device_index),
            "cuDeviceGet(" + std::to_string(device_index) + ")");
  api.check(api.primary_ctx_retain(&context_, device_),
            "cuDevicePrimaryCtxRetain(device " + std::to_string(device_index) + ")");
  const CUresult status = api.ctx_set_current(context_);
  if (status != CUDA_SUCCESS) {
    api.primary_ctx_release(device_);
    api.check(status, "cuCtxSetCurrent");
  }
}

PrimaryContext::~PrimaryContext() {
  if (context_ != nullptr) driver_state().primary_ctx_release(device_);
}

PrimaryContext::PrimaryContext(PrimaryContext&& other) noexcept
    : index_(other.index_),
      device_(other.device_),
      context_(std::exchange(other.context_, nullptr)) {}

void PrimaryContext::make_current() const {
  const Driver& api = driver();
  api.check(api.ctx_set_current(context_), "cuCtxSetCurrent");
}

void context_synchronize() {
  const Driver& api = driver();
  api.check(api.ctx_synchronize(), "cuCtxSynchronize");
}

int CudaFunction::attribute(CUfunction_attribute which) const {
  const Driver& api = driver();
  int value = 0;
  api.check(api.func_get_attribute(&value, which, handle),
            "cuFuncGetAttribute(" + name + ", " + std::to_string(static_cast<int>(which)) + ")");
  return value;
}

void CudaFunction::set_max_dynamic_shared_bytes(int64_t bytes) const {
  const Driver& api = driver();
  api.check(api.func_set_attribute(handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(bytes)),
            "cuFuncSetAttribute(" + name +
                ", MAX_DYNAMIC_SHARED_SIZE_BYTES = " + std::to_string(bytes) + ")");
}

CudaModule::CudaModule(const std::string& image) {
  const Driver& api = driver();
  api.check(api.module_load_data(&module_, image.data()), "cuModuleLoadData");
}

CudaModule::~CudaModule() {
  if (module_ != nullptr) driver_state().module_unload(module_);
}

CudaModule::CudaModule(CudaModule&& other) noexcept
    : module_(std::exchange(other.module_, nullptr)) {}

CudaModule& CudaModule::operator=(CudaModule&& other) noexcept {
  if (this != &other) {
    if (module_ != nullptr) driver_state().module_unload(module_);
    module_ = std::exchange(other.module_, nullptr);
  }
  return *this;
}

CudaFunction CudaModule::function(const std::string& name, int64_t max_dynamic_shared_bytes) const {
  const Driver& api = driver();
  CudaFunction function;
  function.name = name;
  api.check(api.module_get_function(&function.handle, module_, name.c_str()),
            "cuModuleGetFunction(" + name + ")");
  if (max_dynamic_shared_bytes > kDefaultDynamicSharedLimit) {
    function.set_max_dynamic_shared_bytes(max_dynamic_shared_bytes);
  }
  return function;
}

std::optional<std::pair<DevicePtr, size_t>> CudaModule::find_global(const std::string& name) const {
  const Driver& api = driver();
  DevicePtr address = 0;
  size_t bytes = 0;
  const CUresult status = api.module_get_global(&address, &bytes, module_, name.c_str());
  if (status == CUDA_ERROR_NOT_FOUND) return std::nullopt;
  api.check(status, "cuModuleGetGlobal(" + name + ")");
  return std::make_pair(address, bytes);
}

void launch(const CudaFunction& function, Dim3 grid, Dim3 block, unsigned shared_bytes,
            StreamHandle stream, void** args) {
  const Driver& api = driver();
  const CUresult status = api.launch_kernel(function.handle, grid.x, grid.y, grid.z, block.x,
                                            block.y, block.z, shared_bytes, stream, args, nullptr);
  if (status == CUDA_SUCCESS) return;
  std::string call = "cuLaunchKernel(" + function.name + ", grid " + dims(grid) + ", block " +
                     dims(block) + ", " + std::to_string(shared_bytes) + " B dynamic shared)";
  std::string message = call + " failed: " + api.describe(status);
  if (shared_bytes > kDefaultDynamicSharedLimit) {
    message +=
        "; more than 48 KiB of dynamic shared memory needs the function's limit raised "
        "first (CudaModule::function(name, bytes) or set_max_dynamic_shared_bytes)";
  }
  throw CudaError(message);
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  const Driver& api = driver();
  api.check(api.mem_alloc(&address_, bytes), "cuMemAlloc(" + std::to_string(bytes) + " B)");
}

DeviceBuffer::~DeviceBuffer() {
  if (address_ != 0) driver_state().mem_free(address_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : address_(std::exchange(other.address_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (address_ != 0) driver_state().mem_free(address_);
    address_ = std::exchange(other.address_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void copy_to_device(DevicePtr destination, const void* source, size_t bytes) {
  const Driver& api = driver();
  api.check(api.memcpy_htod(destination, source, bytes),
            "cuMemcpyHtoD(" + std::to_string(bytes) + " B)");
}

void copy_to_host(void* destination, DevicePtr source, size_t bytes) {
  const Driver& api = driver();
  api.check(api.memcpy_dtoh(destination, source, bytes),
            "cuMemcpyDtoH(" + std::to_string(bytes) + " B)");
}

void copy_to_device_async(DevicePtr destination, const void* source, size_t bytes,
                          StreamHandle stream) {
  const Driver& api = driver();
  api.check(api.memcpy_htod_async(destination, source, bytes, stream),
            "cuMemcpyHtoDAsync(" + std::to_string(bytes) + " B)");
}

void copy_to_host_async(void* destination, DevicePtr source, size_t bytes, StreamHandle stream) {
  const Driver& api = driver();
  api.check(api.memcpy_dtoh_async(destination, source, bytes, stream),
            "cuMemcpyDtoHAsync(" + std::to_string(bytes) + " B)");
}

void fill_device_bytes(DevicePtr destination, unsigned char value, size_t bytes) {
  const Driver& api = driver();
  api.check(api.memset_d8(destination, value, bytes),
            "cuMemsetD8(" + std::to_string(bytes) + " B)");
}

CudaStream::CudaStream() {
  const Driver& api = driver();
  api.check(api.stream_create(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

CudaStream::~CudaStream() {
  if (stream_ != nullptr) driver_state().stream_destroy(stream_);
}

void CudaStream::synchronize() const {
  stream_synchronize(stream_);
}

void stream_synchronize(StreamHandle stream) {
  const Driver& api = driver();
  api.check(api.stream_synchronize(stream), "cuStreamSynchronize");
}

}  // namespace stax::runtime::cuda
