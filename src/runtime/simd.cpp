// SIMD levels: name tables, widths, compiler flags and CPU feature detection.
#include "runtime/simd.h"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define STAX_X86 1
#endif

namespace stax::runtime {

std::string_view simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::Scalar:
      return "scalar";
    case SimdLevel::Avx2:
      return "avx2";
    case SimdLevel::Avx512:
      return "avx512";
  }
  return "?";
}

std::optional<SimdLevel> parse_simd_level(std::string_view name) {
  for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    if (simd_level_name(level) == name) return level;
  }
  return std::nullopt;
}

int simd_vector_bytes(SimdLevel level) {
  switch (level) {
    case SimdLevel::Scalar:
      return 0;
    case SimdLevel::Avx2:
      return 32;
    case SimdLevel::Avx512:
      return 64;
  }
  return 0;
}

int simd_width(SimdLevel level, DType dtype) {
  if (level == SimdLevel::Scalar) return 1;
  return simd_vector_bytes(level) / static_cast<int>(dtype_size(dtype));
}

namespace {

#ifdef STAX_X86
struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// cpuid(leaf, subleaf); all-zero registers when the leaf is not implemented.
CpuidRegs cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return CpuidRegs{};
  return r;
}

// XCR0: which register states the OS saves on context switches. Only valid with OSXSAVE.
uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool has_bit(unsigned reg, int bit) {
  return (reg >> bit) & 1u;
}

struct CpuFeatures {
  bool avx2 = false;    // AVX2 + FMA + F16C + OS YMM state
  bool avx512 = false;  // AVX-512 F/BW/DQ/VL + OS opmask/ZMM state
  bool avx512_bf16 = false;
};

CpuFeatures probe_cpu() {
  CpuFeatures f;
  const CpuidRegs leaf1 = cpuid(1, 0);
  const bool osxsave = has_bit(leaf1.ecx, 27);
  const bool avx = has_bit(leaf1.ecx, 28);
  const bool fma = has_bit(leaf1.ecx, 12);
  const bool f16c = has_bit(leaf1.ecx, 29);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;    // SSE + AVX state
  const bool os_zmm = (xcr0 & 0xE6) == 0xE6;  // + opmask, ZMM_Hi256, Hi16_ZMM
  if (cpuid(0, 0).eax < 7) return f;
  const CpuidRegs leaf7 = cpuid(7, 0);
  const bool avx2 = has_bit(leaf7.ebx, 5);
  f.avx2 = avx2 && fma && f16c && os_ymm;
  const bool avx512f = has_bit(leaf7.ebx, 16);
  const bool avx512dq = has_bit(leaf7.ebx, 17);
  const bool avx512bw = has_bit(leaf7.ebx, 30);
  const bool avx512vl = has_bit(leaf7.ebx, 31);
  f.avx512 = f.avx2 && os_zmm && avx512f && avx512dq && avx512bw && avx512vl;
  // Leaf 7 subleaf 1, EAX bit 5: AVX512_BF16 (subleaf 1 exists when leaf 7's EAX is >= 1).
  f.avx512_bf16 = f.avx512 && cpuid(7, 0).eax >= 1 && has_bit(cpuid(7, 1).eax, 5);
  return f;
}
#endif

#ifdef STAX_X86
const CpuFeatures& cpu_features() {
  static const CpuFeatures features = probe_cpu();
  return features;
}
#endif

}  // namespace

bool cpu_supports(SimdLevel level) {
  if (level == SimdLevel::Scalar) return true;
#ifdef STAX_X86
  return level == SimdLevel::Avx2 ? cpu_features().avx2 : cpu_features().avx512;
#else
  return false;
#endif
}

bool cpu_has_avx512_bf16() {
#ifdef STAX_X86
  return cpu_features().avx512_bf16;
#else
  return false;
#endif
}

SimdLevel detect_simd_level() {
  static const SimdLevel level = [] {
    for (SimdLevel l : {SimdLevel::Avx512, SimdLevel::Avx2}) {
      if (cpu_supports(l)) return l;
    }
    return SimdLevel::Scalar;
  }();
  return level;
}

std::vector<SimdLevel> runnable_simd_levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel l : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    if (cpu_supports(l)) levels.push_back(l);
  }
  return levels;
}

std::vector<std::string> simd_compiler_flags(SimdLevel level, bool host_extensions) {
  switch (level) {
    case SimdLevel::Scalar:
      return {};
    case SimdLevel::Avx2:
      return {"-mavx2", "-mfma", "-mf16c", "-DSTAX_SIMD_AVX2"};
    case SimdLevel::Avx512: {
      std::vector<std::string> flags = {
          "-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl",
          "-mavx2",    "-mfma",      "-mf16c",     "-DSTAX_SIMD_AVX512"};
      if (host_extensions && cpu_has_avx512_bf16()) flags.push_back("-mavx512bf16");
      return flags;
    }
  }
  return {};
}

}  // namespace stax::runtime
