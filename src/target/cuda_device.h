// The CUDA half of the target description (issue 35, point 1): what a GPU a program is
// compiled for has, for the GPU partition (lowering's cost model, the scheduler's element-count
// compatibility) and, later, the CUDA kernel passes (launch shapes from the SM count, register
// and shared-memory budgets, the copy bandwidth the benchmarks compare with). A device comes
// from the CUDA driver at run time, or offline from the table of architectures below, so that
// `stax explain --device cuda:sm_90` and CI work on a machine without a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stax::target {

struct CudaDevice {
  std::string name;            // "H100 SXM (offline table)"
  int compute_capability = 0;  // 90 for sm_90
  int sm_count = 0;            // streaming multiprocessors
  int registers_per_sm = 0;    // 32-bit registers
  int max_threads_per_sm = 0;  // resident threads
  int max_threads_per_block = 0;
  int64_t shared_bytes_per_block_optin = 0;  // with cudaFuncAttributeMaxDynamicSharedMemorySize
  int64_t l2_bytes = 0;
  // Copy bandwidth (read + write) in bytes per second, measured where the table says so.
  double copy_bytes_per_second = 0;
  bool offline = true;  // from the table, not from a driver

  std::string arch() const { return "sm_" + std::to_string(compute_capability); }
  // "sm_90 H100 SXM (offline table): 132 SMs, L2 50 MiB, 227 KiB shared per block, ..."
  std::string describe() const;
};

// The architectures the offline table knows ("sm_80", "sm_90", "sm_100").
std::vector<std::string> offline_cuda_architectures();
// The table's device of `arch`, or nullopt for one it does not know.
std::optional<CudaDevice> offline_cuda_device(const std::string& arch);

// A device named as the C++ API, the CLI and the bridge take it: "cpu", "cuda:sm_90" (offline,
// any machine), "cuda" or "cuda:N" (the driver's device N, at run time).
struct DeviceSpec {
  bool cuda = false;
  std::string arch;  // offline architecture, empty for a driver's device
  int index = 0;     // the driver's device index
};
// std::invalid_argument naming what is wrong and what is accepted.
DeviceSpec parse_device(const std::string& text);

}  // namespace stax::target
