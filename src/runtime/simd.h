// SIMD instruction-set levels targeted by generated kernels: names, vector widths, the
// compiler flags that select a level, and run-time CPU detection (cpuid + xgetbv).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace stax::runtime {

enum class SimdLevel { Scalar, Avx2, Avx512 };

// "scalar", "avx2", "avx512".
std::string_view simd_level_name(SimdLevel level);
// Inverse of simd_level_name (case-sensitive); nullopt for unknown names.
std::optional<SimdLevel> parse_simd_level(std::string_view name);

// Bytes of one vector register at `level` (64, 32; 0 for Scalar).
int simd_vector_bytes(SimdLevel level);
// Lanes of one vector of `dtype` at `level`: vector bytes / element size (Scalar: 1).
// float32: Avx512 16, Avx2 8, Scalar 1.
int simd_width(SimdLevel level, DType dtype);

// True when the running CPU and OS support `level`:
//   Avx512: AVX-512 F, BW, DQ, VL and the OS saves opmask/ZMM state (XCR0).
//   Avx2:   AVX2, FMA, F16C and the OS saves YMM state.
//   Scalar: always.
bool cpu_supports(SimdLevel level);
// Widest level the CPU supports, probing Avx512, then Avx2, then Scalar. Cached.
SimdLevel detect_simd_level();
// The levels this CPU runs, narrowest first (always contains Scalar): what differential tests
// and the fuzzer compile and run at.
std::vector<SimdLevel> runnable_simd_levels();

// Compiler flags for a kernel built at `level`: the -m ISA flags plus the macro
// (-DSTAX_SIMD_AVX512 / -DSTAX_SIMD_AVX2) that selects the level in stax_kernel.h. With
// `host_extensions`, also the flags of the running CPU's extensions that the kernel headers use
// without changing any result: AVX512-BF16 at the AVX-512 level (-mavx512bf16; its conversion
// gives the integer rounding's bits for every float but subnormals, which keep the integer
// rounding).
std::vector<std::string> simd_compiler_flags(SimdLevel level, bool host_extensions = true);

// Whether the running CPU has AVX512-BF16 (vcvtneps2bf16) on top of the AVX-512 level.
bool cpu_has_avx512_bf16();

}  // namespace stax::runtime
