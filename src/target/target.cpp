// The target description (see target.h).
#include "target/target.h"

#include <algorithm>
#include <sstream>

namespace stax::target {

int Target::vector_register_count() const {
  return simd == runtime::SimdLevel::Avx512 ? 32 : simd == runtime::SimdLevel::Avx2 ? 16 : 0;
}

int64_t Target::vector_register_bytes() const {
  return simd == runtime::SimdLevel::Avx512 ? 64 : simd == runtime::SimdLevel::Avx2 ? 32 : 0;
}

int64_t Target::vector_lanes(DType dtype) const {
  const int64_t bytes = vector_register_bytes();
  if (bytes == 0) return 1;
  return bytes / static_cast<int64_t>(dtype_size(dtype));
}

bool Target::has_library(const std::string& name) const {
  return std::find(libraries.begin(), libraries.end(), name) != libraries.end();
}

std::string Target::describe() const {
  std::ostringstream out;
  if (device == DeviceKind::Cuda) {
    out << "cuda " << cuda.describe() << "; libraries: ";
    if (libraries.empty()) out << "none";
    for (size_t k = 0; k < libraries.size(); ++k) out << (k ? ", " : "") << libraries[k];
    return out.str();
  }
  out << runtime::simd_level_name(simd) << ", " << num_threads << " threads, L1d "
      << caches.l1d_bytes / 1024 << " KiB, L2 " << caches.l2_bytes / 1024 << " KiB, LLC "
      << caches.llc_bytes / (1024 * 1024) << " MiB; vector lanes";
  for (DType d : {DType::Float32, DType::BFloat16, DType::Float64, DType::Int64, DType::UInt8}) {
    out << (d == DType::Float32 ? " " : ", ") << dtype_name(d) << " " << vector_lanes(d);
  }
  out << "; libraries: ";
  if (libraries.empty()) out << "none";
  for (size_t k = 0; k < libraries.size(); ++k) out << (k ? ", " : "") << libraries[k];
  for (const std::string& note : library_notes) out << "; " << note;
  return out.str();
}

}  // namespace stax::target
