// The BLAS a float32 matrix product may be handed to instead of oneDNN: Intel MKL's sgemm,
// loaded at run time, never needed to build or run Stax. Either the MKL already in the
// process inside PyTorch's libtorch_cpu (the torch.compile bridge names it: eager's own
// float32 torch.mm, no second copy of MKL's code and buffers in memory), or MKL's single
// dynamic library libmkl_rt (PyPI's `mkl`, Debian's libmkl-rt) for C++ programs.
// Internal to src/external.
//
// Why a second library: oneDNN 2.6's float32 kernels read a B with contiguous columns
// (row-major B: GPT-2's Conv1D weights, the backward products dX = dY W and dW = dY^T X)
// 1.1-1.7x slower than eager's torch.mm, which is MKL's sgemm; packing B first closes only
// part of it (bench/gemm/RESULTS.md, "B in place or packed"). MKL 2026.2's sgemm on the same
// shapes measured 0.88-1.07x eager (Intel Xeon with AMX, 2 threads). Whether it is faster for
// a given product on a given CPU is the plan's measurement (matmul_weights_form.h), not a rule.
//
// Threads: MKL must run on libgomp, the process's one OpenMP runtime (shared with Stax's
// kernels, oneDNN and PyTorch). libmkl_rt is put on its GNU OpenMP layer; an MKL linked into
// another library is used only if its OpenMP calls resolve to the process's libgomp. Either
// way a library that cannot is not used, and why is reported.
#pragma once

#include <cstdint>
#include <string>

namespace stax::external::detail {

class BlasLibrary {
 public:
  // c = alpha * op(a) @ op(b) + beta * c, row-major, on `threads` threads (libgomp's):
  // op(x) is x, or x^T where `*_transposed`; ld* are the row strides of the matrices as
  // stored. beta == 0 never reads c. Sizes and leading dimensions must fit a 32-bit int
  // (MKL's LP64 interface): fits() says whether they do.
  void sgemm(bool a_transposed, bool b_transposed, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc, int threads) const;
  static bool fits(int64_t value);

  // "Intel(R) oneAPI Math Kernel Library Version 2026.2 (.../libmkl_rt.so.3, GNU OpenMP
  // layer)".
  const std::string& description() const { return description_; }

  struct Functions;  // blas_library.cpp

 private:
  friend const BlasLibrary* blas_library(std::string* why);
  BlasLibrary(const Functions* functions, std::string description)
      : functions_(functions), description_(std::move(description)) {}
  const Functions* functions_;
  std::string description_;
};

// The process's BLAS, loaded on first use, or nullptr (then `why`, if not null, says why).
// Where it is looked for, first found wins: the path in the environment variable
// STAX_BLAS_LIBRARY ("none" turns the BLAS off); the path given to set_blas_library_path()
// (matmul.h);
// the sonames libmkl_rt.so.3 and libmkl_rt.so.2 on the dynamic loader's path.
const BlasLibrary* blas_library(std::string* why = nullptr);

}  // namespace stax::external::detail
