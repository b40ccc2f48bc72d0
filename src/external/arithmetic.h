// How a library plan computes a 16-bit dtype on the CPU it runs on. oneDNN 2.6 has bfloat16
// matmul and convolution kernels only on CPUs with AVX-512 (avx512_core and up); on an
// AVX2-only CPU (an AMD Zen 2, say) it refuses bfloat16 primitives altogether. A bfloat16 plan
// there converts its operands to float32, which is exact, runs the library's float32 kernel
// with the same epilogue, and rounds the result to bfloat16 once. Each product of two bfloat16
// values is exact in float32 (8-bit significands), and the native kernels accumulate in
// float32 and round once after the epilogue too, so the two differ only in the order of the
// float32 sums -- as two native kernels of different ISAs already do. The alternative, a Stax
// loop nest, computes the same sums but without the library's blocking and packing; the
// conversions cost O(MK + KN + MN) element copies against the product's O(MNK)
// multiply-adds, so the library path should stay the faster one (reasoned from those counts,
// not measured). Each plan reports which it took, and explain shows it with the library's
// refusal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ir/dtype.h"

namespace stax::external {

enum class Arithmetic : uint8_t {
  // The library computes the plan's dtype itself (or the plan makes no library call).
  Native,
  // bfloat16 operands converted to float32, the library's float32 kernel, the result rounded
  // to bfloat16 once.
  ThroughFloat32,
};

// "native", "through float32".
const char* arithmetic_name(Arithmetic arithmetic);

// The arithmetic a plan takes for `dtype`, from what the library refuses natively
// (`refusal(d)`: "" where it computes d itself): Native; for bfloat16 where float32 is native,
// ThroughFloat32; else nullopt. `why` gets the native refusal. One rule for the matmul,
// convolution and attention plans.
template <class Refusal>
std::optional<Arithmetic> arithmetic_for(DType dtype, Refusal&& refusal, std::string* why) {
  const std::string refused = refusal(dtype);
  if (refused.empty()) return Arithmetic::Native;
  if (why != nullptr) *why = refused;
  if (dtype == DType::BFloat16 && refusal(DType::Float32).empty()) {
    return Arithmetic::ThroughFloat32;
  }
  return std::nullopt;
}

}  // namespace stax::external
