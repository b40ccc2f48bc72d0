// SIMD level names, widths, compiler flags and CPU detection.
#include "runtime/simd.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace stax::runtime {
namespace {

const SimdLevel kAllLevels[] = {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512};

TEST(Simd, NameParseRoundTrip) {
  for (SimdLevel level : kAllLevels) {
    EXPECT_EQ(parse_simd_level(simd_level_name(level)), level);
  }
  EXPECT_EQ(simd_level_name(SimdLevel::Avx512), "avx512");
  EXPECT_EQ(simd_level_name(SimdLevel::Avx2), "avx2");
  EXPECT_EQ(simd_level_name(SimdLevel::Scalar), "scalar");
  EXPECT_EQ(parse_simd_level("sse"), std::nullopt);
  EXPECT_EQ(parse_simd_level(""), std::nullopt);
  EXPECT_EQ(parse_simd_level("AVX2"), std::nullopt);
}

TEST(Simd, Widths) {
  EXPECT_EQ(simd_width(SimdLevel::Avx512, DType::Float32), 16);
  EXPECT_EQ(simd_width(SimdLevel::Avx2, DType::Float32), 8);
  EXPECT_EQ(simd_width(SimdLevel::Scalar, DType::Float32), 1);
  EXPECT_EQ(simd_width(SimdLevel::Avx2, DType::Float64), 4);
  EXPECT_EQ(simd_width(SimdLevel::Avx512, DType::Int64), 8);
  EXPECT_EQ(simd_width(SimdLevel::Avx2, DType::BFloat16), 16);
  EXPECT_EQ(simd_width(SimdLevel::Avx2, DType::Bool), 32);
  EXPECT_EQ(simd_width(SimdLevel::Scalar, DType::Int8), 1);
}

bool contains(const std::vector<std::string>& flags, const std::string& flag) {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

TEST(Simd, CompilerFlags) {
  EXPECT_TRUE(simd_compiler_flags(SimdLevel::Scalar).empty());
  const auto avx2 = simd_compiler_flags(SimdLevel::Avx2);
  EXPECT_TRUE(contains(avx2, "-mavx2"));
  EXPECT_TRUE(contains(avx2, "-mfma"));
  EXPECT_TRUE(contains(avx2, "-mf16c"));  // vector Half conversions (vcvtph2ps / vcvtps2ph)
  EXPECT_TRUE(contains(avx2, "-DSTAX_SIMD_AVX2"));
  const auto avx512 = simd_compiler_flags(SimdLevel::Avx512);
  for (const char* flag :
       {"-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mfma", "-DSTAX_SIMD_AVX512"}) {
    EXPECT_TRUE(contains(avx512, flag)) << flag;
  }
  // AVX512-BF16 only where this CPU has it, and never in the level's baseline.
  EXPECT_EQ(contains(avx512, "-mavx512bf16"), cpu_has_avx512_bf16());
  EXPECT_FALSE(contains(simd_compiler_flags(SimdLevel::Avx512, false), "-mavx512bf16"));
  EXPECT_FALSE(contains(simd_compiler_flags(SimdLevel::Avx2), "-mavx512bf16"));
}

TEST(Simd, DetectionAgreesWithCompilerBuiltins) {
  EXPECT_TRUE(cpu_supports(SimdLevel::Scalar));
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  // The builtins check CPUID only; ours also requires OS register-state support.
  if (!avx2) {
    EXPECT_FALSE(cpu_supports(SimdLevel::Avx2));
  }
  if (!avx512) {
    EXPECT_FALSE(cpu_supports(SimdLevel::Avx512));
  }
  EXPECT_EQ(cpu_supports(SimdLevel::Avx2), avx2);
  EXPECT_EQ(cpu_supports(SimdLevel::Avx512), avx512);
  EXPECT_EQ(cpu_has_avx512_bf16(), avx512 && __builtin_cpu_supports("avx512bf16"));
#endif
}

TEST(Simd, DetectReturnsWidestSupportedLevel) {
  const SimdLevel level = detect_simd_level();
  EXPECT_TRUE(cpu_supports(level));
  SimdLevel widest = SimdLevel::Scalar;
  if (cpu_supports(SimdLevel::Avx2)) widest = SimdLevel::Avx2;
  if (cpu_supports(SimdLevel::Avx512)) widest = SimdLevel::Avx512;
  EXPECT_EQ(level, widest);
  // The development machine has AVX2 + FMA but no AVX-512.
  if (cpu_supports(SimdLevel::Avx2) && !cpu_supports(SimdLevel::Avx512)) {
    EXPECT_EQ(simd_level_name(level), "avx2");
  }
  EXPECT_EQ(detect_simd_level(), level);  // cached, stable
}

}  // namespace
}  // namespace stax::runtime
