// The BLAS a float32 matrix product may be handed to instead of oneDNN: Intel MKL's single
// dynamic library (libmkl_rt), loaded at run time where it is installed (PyPI's `mkl`, which
// scripts/setup_python.sh installs into the virtual environment), never needed to build or
// run Stax. Internal to src/external.
//
// Why a second library: oneDNN 2.6's float32 kernels read a B with contiguous columns
// (row-major B: GPT-2's Conv1D weights, the backward products dX = dY W and dW = dY^T X)
// 1.1-1.7x slower than eager's torch.mm, which is MKL's sgemm; packing B first closes only
// part of it (bench/gemm/RESULTS.md, "B in place or packed"). MKL 2026.2's sgemm on the same
// shapes measured 0.88-1.07x eager (Intel Xeon with AMX, 2 threads). Whether it is faster for
// a given product on a given CPU is the plan's measurement (matmul_weights_form.h), not a rule.
//
// Threads: MKL runs on its GNU OpenMP layer, so its threads are libgomp's, the process's one
// OpenMP runtime (shared with Stax's kernels, oneDNN and PyTorch). A library that cannot be
// put on that layer (another part of the process loaded MKL on Intel's OpenMP first) is not
// used, and why is reported.
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

  // "oneMKL 2026 Update 2 (libmkl_rt.so.3, GNU OpenMP layer)".
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

// What a measured decision depends on: the BLAS's description, or "no BLAS".
std::string blas_identity();

}  // namespace stax::external::detail
