// The driver API. On a machine without a usable driver (CI): cuda_driver_available() is false
// with a reason, and every driver call throws CudaError with that reason. On a machine with a
// GPU (the same binary): the device query gives sane values, and kernels compiled by NVRTC run
// in the primary context with results checked against the host.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "runtime/cuda/cuda_jit.h"
#include "runtime/cuda/driver_api.h"

namespace stax::runtime::cuda {
namespace {

using testing::kRowSumBlock;
using testing::kRowSumSource;
using testing::TempDir;
using testing::test_nvrtc;

// Expects `call` to throw CudaError whose message is `why`.
void expect_driver_error(const std::function<void()>& call, const std::string& why,
                         const char* what) {
  try {
    call();
    ADD_FAILURE() << what << " did not throw";
  } catch (const CudaError& error) {
    EXPECT_EQ(std::string(error.what()), why) << what;
  }
}

// Each test holds on both kinds of machine (nothing is skipped): with a driver, the GPU half;
// without one, that the call under test fails with the reason cuda_driver_available gave.
TEST(CudaDriver, WithoutADriverEveryCallSaysWhy) {
  std::string why;
  if (cuda_driver_available(&why)) {
    EXPECT_GE(cuda_device_count(), 1);  // a usable driver has a device
    return;
  }
  EXPECT_FALSE(why.empty());
  // A machine without libcuda.so.1 (CI) gets exactly the documented message.
  if (void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); handle == nullptr) {
    EXPECT_EQ(why.rfind("no CUDA driver: libcuda.so.1 could not be loaded (", 0), 0) << why;
    EXPECT_EQ(why.back(), ')') << why;
    expect_driver_error([] { cuda_driver_version(); }, why, "cuda_driver_version");
  } else {
    ::dlclose(handle);
  }
  if (why.find("CUDA_ERROR_NO_DEVICE") != std::string::npos) {
    EXPECT_EQ(cuda_device_count(), 0);
  } else {
    expect_driver_error([] { cuda_device_count(); }, why, "cuda_device_count");
  }
  expect_driver_error([] { cuda_device_properties(0); }, why, "cuda_device_properties");
  expect_driver_error([] { PrimaryContext context(0); }, why, "PrimaryContext");
  expect_driver_error([] { DeviceBuffer buffer(16); }, why, "DeviceBuffer");
  expect_driver_error([] { CudaModule module("not an image"); }, why, "CudaModule");
  expect_driver_error([] { CudaStream stream; }, why, "CudaStream");
  expect_driver_error([] { context_synchronize(); }, why, "context_synchronize");
  float host = 0;
  expect_driver_error([&] { copy_to_device(0, &host, sizeof host); }, why, "copy_to_device");
  expect_driver_error([&] { copy_to_host(&host, 0, sizeof host); }, why, "copy_to_host");
  // Asking again gives the same answer (the driver is probed once).
  std::string again;
  EXPECT_FALSE(cuda_driver_available(&again));
  EXPECT_EQ(again, why);
}

TEST(CudaDriver, DeviceQueryIsSane) {
  std::string why;
  if (!cuda_driver_available(&why)) {
    expect_driver_error([] { (void)cuda_device_properties(0); }, why, "cuda_device_properties");
    return;
  }
  EXPECT_GE(cuda_driver_version(), 11030);
  const int count = cuda_device_count();
  ASSERT_GE(count, 1);
  for (int index = 0; index < count; ++index) {
    const CudaDeviceProperties device = cuda_device_properties(index);
    SCOPED_TRACE(device.name + " " + device.arch());
    EXPECT_EQ(device.index, index);
    EXPECT_FALSE(device.name.empty());
    EXPECT_GE(device.compute_capability, 70);
    EXPECT_GT(device.sm_count, 0);
    EXPECT_GE(device.registers_per_sm, 32768);
    EXPECT_GE(device.registers_per_block, 32768);
    EXPECT_GE(device.max_threads_per_sm, 1024);
    EXPECT_EQ(device.max_threads_per_block, 1024);
    EXPECT_EQ(device.warp_size, 32);
    EXPECT_EQ(device.shared_bytes_per_block, 48 * 1024);
    EXPECT_GE(device.shared_bytes_per_block_optin, device.shared_bytes_per_block);
    EXPECT_GE(device.shared_bytes_per_sm, device.shared_bytes_per_block_optin);
    EXPECT_GE(device.l2_bytes, 1 << 20);
    EXPECT_GE(device.global_memory_bytes, int64_t{1} << 30);
    EXPECT_EQ(device.copy_bytes_per_second, 0);
  }
  EXPECT_THROW(cuda_device_properties(count), CudaError);
}

// Row sums of a rows x cols matrix of small integers (exact in float32).
std::vector<float> row_sum_input(int rows, int cols) {
  std::vector<float> x(static_cast<size_t>(rows) * cols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  return x;
}

std::vector<float> host_row_sums(const std::vector<float>& x, int rows, int cols) {
  std::vector<float> y(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    y[static_cast<size_t>(r)] =
        std::accumulate(x.begin() + static_cast<ptrdiff_t>(r) * cols,
                        x.begin() + static_cast<ptrdiff_t>(r + 1) * cols, 0.0f);
  }
  return y;
}

TEST(CudaDriver, RowSumRunsInThePrimaryContext) {
  std::string why;
  if (!cuda_driver_available(&why)) {
    expect_driver_error([] { PrimaryContext context(0); }, why, "PrimaryContext");
    return;
  }
  test_nvrtc();
  PrimaryContext context(0);
  const CudaDeviceProperties device = cuda_device_properties(0);
  TempDir cache;
  CudaJitOptions options;
  options.cache_dir = cache.path();
  options.compile.arch = device.arch();
  const CudaJitResult compiled = compile_cuda_cached(kRowSumSource, "row_sum.cu", options);
  const CudaModule module = load_cuda_module(compiled);
  const CudaFunction row_sum = module.function("row_sum");
  EXPECT_GT(row_sum.attribute(abi::CU_FUNC_ATTRIBUTE_NUM_REGS), 0);
  EXPECT_EQ(row_sum.attribute(abi::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            testing::kRowSumSharedBytes);
  EXPECT_THROW(module.function("no_such_kernel"), CudaError);

  const int rows = 300;
  const int cols = 1000;
  const std::vector<float> x = row_sum_input(rows, cols);
  DeviceBuffer x_device(x.size() * sizeof(float));
  DeviceBuffer y_device(static_cast<size_t>(rows) * sizeof(float));
  copy_to_device(x_device.get(), x.data(), x.size() * sizeof(float));
  fill_device_bytes(y_device.get(), 0xff, y_device.bytes());
  DevicePtr x_arg = x_device.get();
  DevicePtr y_arg = y_device.get();
  int cols_arg = cols;
  void* args[] = {&x_arg, &y_arg, &cols_arg};
  launch(row_sum, {static_cast<unsigned>(rows)}, {static_cast<unsigned>(kRowSumBlock)}, 0, nullptr,
         args);
  std::vector<float> y(static_cast<size_t>(rows));
  copy_to_host(y.data(), y_device.get(), y_device.bytes());
  EXPECT_EQ(y, host_row_sums(x, rows, cols));

  // The same on a stream of its own, with stream-ordered copies.
  CudaStream stream;
  std::vector<float> y_async(static_cast<size_t>(rows), -1.0f);
  fill_device_bytes(y_device.get(), 0, y_device.bytes());
  copy_to_device_async(x_device.get(), x.data(), x.size() * sizeof(float), stream.get());
  launch(row_sum, {static_cast<unsigned>(rows)}, {static_cast<unsigned>(kRowSumBlock)}, 0,
         stream.get(), args);
  copy_to_host_async(y_async.data(), y_device.get(), y_device.bytes(), stream.get());
  stream.synchronize();
  EXPECT_EQ(y_async, y);

  // A module of another entry is refused under this key.
  CudaJitResult foreign = compiled;
  foreign.key = std::string(32, '0');
  EXPECT_THROW(load_cuda_module(foreign), CudaError);
  // Images the driver refuses: named errors.
  try {
    CudaModule bad("this is neither PTX nor a cubin");
    ADD_FAILURE() << "a bad image loaded";
  } catch (const CudaError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("cuModuleLoadData failed: CUDA_ERROR_", 0), 0)
        << error.what();
  }
}

TEST(CudaDriver, DynamicSharedMemoryAbove48KiB) {
  std::string why;
  if (!cuda_driver_available(&why)) {
    expect_driver_error([] { (void)DeviceBuffer(64 * 1024); }, why, "DeviceBuffer");
    return;
  }
  test_nvrtc();
  PrimaryContext context(0);
  const CudaDeviceProperties device = cuda_device_properties(0);
  const int n = 16384;  // 64 KiB of floats
  const int64_t shared = int64_t{n} * 4;
  // Every architecture Stax targets (sm_80 and later) opts in to at least 163 KiB.
  ASSERT_GE(device.shared_bytes_per_block_optin, shared) << device.name;
  CudaCompileOptions options;
  options.arch = device.arch();
  const CudaCompileResult compiled = compile_cuda(
      "extern \"C\" __global__ void reverse(const float* x, float* y, int n) {\n"
      "  extern __shared__ float tile[];\n"
      "  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = x[i];\n"
      "  __syncthreads();\n"
      "  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = tile[n - 1 - i];\n"
      "}\n",
      "reverse.cu", options);
  const CudaModule module(compiled.image);
  std::vector<float> x(static_cast<size_t>(n));
  std::iota(x.begin(), x.end(), 0.0f);
  DeviceBuffer x_device(x.size() * 4);
  DeviceBuffer y_device(x.size() * 4);
  copy_to_device(x_device.get(), x.data(), x.size() * 4);
  DevicePtr x_arg = x_device.get();
  DevicePtr y_arg = y_device.get();
  int n_arg = n;
  void* args[] = {&x_arg, &y_arg, &n_arg};
  // Without raising the limit the launch fails, and the error says what to do.
  const CudaFunction plain = module.function("reverse");
  try {
    launch(plain, {1}, {1024}, static_cast<unsigned>(shared), nullptr, args);
    context_synchronize();
    ADD_FAILURE() << "a launch with 64 KiB of dynamic shared memory passed without opting in";
  } catch (const CudaError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("cuLaunchKernel(reverse, grid 1x1x1, block 1024x1x1, 65536 B dynamic "
                            "shared) failed: CUDA_ERROR_",
                            0),
              0)
        << message;
    EXPECT_NE(message.find("set_max_dynamic_shared_bytes"), std::string::npos) << message;
  }
  const CudaFunction opted_in = module.function("reverse", shared);
  EXPECT_EQ(opted_in.attribute(abi::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), shared);
  launch(opted_in, {1}, {1024}, static_cast<unsigned>(shared), nullptr, args);
  std::vector<float> y(x.size());
  copy_to_host(y.data(), y_device.get(), y.size() * 4);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(y[static_cast<size_t>(i)], x[static_cast<size_t>(n - 1 - i)]) << i;
}

}  // namespace
}  // namespace stax::runtime::cuda
