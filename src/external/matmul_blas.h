// A matmul plan's product handed to the BLAS (blas_library.h) instead of oneDNN: which specs
// can be, and the call. Internal to src/external.
//
// What the BLAS computes is eager's float32 addmm as eager forms it: the bias copied into c,
// then c = a @ b + c (matmul.cpp's BiasThenSum form); without a bias (or with beta == 0)
// c = a @ b, c never read. Its accumulation order is the
// BLAS's own, as oneDNN's is oneDNN's: results agree with eager's within float32 summation
// error, not bit for bit.
#pragma once

#include <string>

#include "external/blas_library.h"
#include "external/matmul.h"

namespace stax::external::detail {

// Empty when the BLAS can compute `spec`'s product as eager does: float32, no post-ops, one
// matrix (a batch of one), alpha == 1 and, with a bias, beta == 1 (a BLAS skips the product
// when alpha == 0, and MKL rounds other scales unlike eager's fma(beta, bias, alpha * acc)),
// a and b each stored by rows or by columns, c by rows, and sizes within the BLAS's 32-bit
// range; otherwise why not.
std::string blas_refusal(const MatmulSpec& spec);

// Runs `spec`'s product through `blas` on `threads` threads; blas_refusal(spec) is empty.
void run_blas_product(const BlasLibrary& blas, const MatmulSpec& spec, const void* a, const void* b,
                      const void* bias, void* c, int threads);

}  // namespace stax::external::detail
