// The offline table of CUDA architectures (see cuda_device.h).
#include "target/cuda_device.h"

#include <sstream>
#include <stdexcept>

namespace stax::target {

namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

// One data-center part per architecture, with the limits of its compute capability (CUDA C++
// Programming Guide, "Technical Specifications per Compute Capability") and the part's SM count
// and L2 (NVIDIA's architecture white papers). Copy bandwidth: sm_90's is measured on an H100
// 80GB HBM3 (1 GiB copy_, read + write, ../shared/designs/gpu-backend.md section 3.2); the
// others are the datasheet's memory bandwidth, which a copy reaches about 90% of.
std::vector<CudaDevice> table() {
  std::vector<CudaDevice> t;
  CudaDevice a100;
  a100.name = "A100 SXM (offline table)";
  a100.compute_capability = 80;
  a100.sm_count = 108;
  a100.registers_per_sm = 65536;
  a100.max_threads_per_sm = 2048;
  a100.max_threads_per_block = 1024;
  a100.shared_bytes_per_block_optin = 163 * kKiB;
  a100.l2_bytes = 40 * kMiB;
  a100.copy_bytes_per_second = 2.0e12;
  t.push_back(a100);
  CudaDevice h100 = a100;
  h100.name = "H100 SXM (offline table)";
  h100.compute_capability = 90;
  h100.sm_count = 132;
  h100.shared_bytes_per_block_optin = 227 * kKiB;
  h100.l2_bytes = 50 * kMiB;
  h100.copy_bytes_per_second = 3.0e12;
  t.push_back(h100);
  CudaDevice b200 = h100;
  b200.name = "B200 (offline table)";
  b200.compute_capability = 100;
  b200.sm_count = 148;
  b200.l2_bytes = 126 * kMiB;
  b200.copy_bytes_per_second = 8.0e12;
  t.push_back(b200);
  return t;
}

}  // namespace

std::string CudaDevice::describe() const {
  std::ostringstream out;
  out << arch() << " " << name << ": " << sm_count << " SMs, L2 " << l2_bytes / kMiB << " MiB, "
      << shared_bytes_per_block_optin / kKiB << " KiB shared per block, " << registers_per_sm
      << " registers and " << max_threads_per_sm << " threads per SM, copy "
      << copy_bytes_per_second / 1e12 << " TB/s";
  return out.str();
}

std::vector<std::string> offline_cuda_architectures() {
  std::vector<std::string> out;
  for (const CudaDevice& d : table()) out.push_back(d.arch());
  return out;
}

std::optional<CudaDevice> offline_cuda_device(const std::string& arch) {
  for (const CudaDevice& d : table()) {
    if (d.arch() == arch) return d;
  }
  return std::nullopt;
}

DeviceSpec parse_device(const std::string& text) {
  auto known = [] {
    std::string out;
    for (const std::string& a : offline_cuda_architectures()) out += (out.empty() ? "" : ", ") + a;
    return out;
  };
  DeviceSpec spec;
  if (text == "cpu") return spec;
  if (text.rfind("cuda", 0) != 0 || (text.size() > 4 && text[4] != ':')) {
    throw std::invalid_argument("device '" + text +
                                "': expected cpu, cuda, cuda:N or cuda:<arch> (" + known() + ")");
  }
  spec.cuda = true;
  if (text.size() <= 5) {
    if (text.size() == 5) throw std::invalid_argument("device 'cuda:': name an index or an arch");
    return spec;
  }
  const std::string rest = text.substr(5);
  if (rest.rfind("sm_", 0) == 0) {
    if (!offline_cuda_device(rest)) {
      throw std::invalid_argument("device '" + text + "': architecture " + rest +
                                  " is not in the offline table (" + known() + ")");
    }
    spec.arch = rest;
    return spec;
  }
  if (rest.empty() || rest.size() > 3 ||
      rest.find_first_not_of("0123456789") != std::string::npos) {
    throw std::invalid_argument("device '" + text +
                                "': expected a device index (cuda:0) or an architecture (" +
                                known() + ")");
  }
  spec.index = std::stoi(rest);
  return spec;
}

}  // namespace stax::target
