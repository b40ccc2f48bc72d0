// Python-semantics index helpers of generated CUDA kernels: the index printer
// (index::to_cpp) spells a floordiv or mod whose dividend may be negative as stax_floordiv /
// stax_mod, unqualified, as it does for the CPU (stax_kernel_legacy.h).
// Included by stax_cuda.cuh; not meant to be included directly.
#pragma once

#include "stax_cuda_ops.cuh"

STAX_DEVICE stax::i64 stax_floordiv(stax::i64 a, stax::i64 b) {
  return stax::op_floordiv(a, b);
}
STAX_DEVICE stax::i64 stax_mod(stax::i64 a, stax::i64 b) {
  return stax::op_remainder(a, b);
}
