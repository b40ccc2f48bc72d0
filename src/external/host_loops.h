// The element loops a matmul plan runs itself, around or instead of the library call:
// writing c = beta * bias (or zeros) when there is no product to compute (K == 0, or
// alpha == 0 where eager skips the product), copying the bias into c before a library
// call whose sum post-op adds beta * c (matmul.cpp says why that form), and the epilogue of a
// product scaled by alpha == 0 (matmul_through_float32.h). Internal to
// src/external; float32 and bfloat16, the dtypes a plan exists for.
#pragma once

#include <cstdint>

#include "external/matmul.h"

namespace stax::external::detail {

// Rounds to the nearest bfloat16, ties to even; NaN stays a (quiet) NaN.
uint16_t float_to_bf16(float value);
float bf16_to_float(uint16_t bits);

// c = beta * bias where bias is given and beta != 0, else 0 (eager ignores the bias values
// when beta == 0, NaN included). The product is eager's `bias * beta` in the dtype: float32
// multiplies by float(beta); bfloat16 rounds beta to bfloat16 first, multiplies in float32
// and rounds once (probed on torch 2.13.0: addmm and baddbmm with K == 0).
void fill_scaled_bias(const MatmulSpec& spec, const void* bias, void* c, int num_threads);

// c = bias, element by element over c's layout (the bias broadcast by its strides).
void copy_bias(const MatmulSpec& spec, const void* bias, void* c, int num_threads);

// c = fma(beta, bias, 0 * product) where the bias is read (beta != 0), else 0 * product, in
// float32 and rounded once to c's dtype: eager's epilogue for alpha == 0 where it computes the
// product (inf or NaN there gives NaN). `product` holds a @ b in float32 at c's offsets; it may
// be c itself when c is float32.
void zero_scaled_product_epilogue(const MatmulSpec& spec, const float* product, const void* bias,
                                  void* c, int num_threads);

}  // namespace stax::external::detail
