// A matmul plan computed by a float32 plan of the same layouts (matmul.cpp's ThroughFloat32
// form), in two cases:
// - bfloat16 where oneDNN has no bfloat16 matmul on this CPU (arithmetic.h): a, b and the bias
//   are widened to float32, the float32 plan computes the spec's epilogue, and its result is
//   narrowed to bfloat16 once -- what a native kernel computes, up to the order of the sums.
// - alpha == 0 where eager computes the product (MatmulSpec::alpha_zero_skips_product false),
//   on every CPU: the float32 plan computes a @ b alone, and Stax's epilogue gives
//   fma(beta, bias, 0 * (a @ b)), NaN where the product is inf or NaN. A zero output scale is
//   not handed to the library: oneDNN's GEMM-based float32 kernel (its only one without
//   AVX-512) skips the product for it as a BLAS does, giving beta * bias where eager's
//   baddbmm gives NaN (measured on an AMD Zen 2; its AVX-512 kernels multiply by the scale).
// Internal to src/external.
#pragma once

#include <span>
#include <string>

#include "external/matmul.h"

namespace stax::external::detail {

// The spec of the float32 plan: `spec`'s layouts in float32; with `product_only` (alpha == 0)
// the product a @ b alone (alpha 1, no bias, no post-ops).
MatmulSpec float32_spec(const MatmulSpec& spec, bool product_only);

// Runs `spec` through `plan32`, the plan of float32_spec(spec, product_only): widens the
// bfloat16 operands into buffers of the process's pool, runs it, narrows its result or applies
// the alpha == 0 epilogue. The caller has set the thread count.
void run_through_float32(const MatmulSpec& spec, const MatmulPlan& plan32, bool product_only,
                         const void* a, const void* b, const void* bias, void* c, int threads,
                         std::span<const void* const> post_operands);

}  // namespace stax::external::detail
