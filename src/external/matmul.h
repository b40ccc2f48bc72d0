// Matrix products as external calls (issue 14, points 2 and 3): a plan for one call site of
// mm / bmm / addmm / baddbmm, built once when a graph is loaded (the oneDNN matmul primitive
// and everything it needs) and run many times. The library is oneDNN 2.6 (Debian's
// libdnnl-dev), chosen by measurement (bench/gemm/RESULTS.md, README "GEMM library"); it runs
// on the process's one OpenMP runtime, libgomp, shared with Stax's kernels and PyTorch.
//
// The plan computes what eager computes, bits included where the accumulation order allows
// (matmul.cpp says what eager does for each dtype and which oneDNN form reproduces it).
// Lowering asks supported() first; when it says no (a dtype or layout oneDNN has no fast
// implementation of), the product is a Stax loop nest and `why` is shown by `stax explain`.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "external/arithmetic.h"
#include "ir/dtype.h"

namespace stax::external {

// One operand as a batch of matrices: sizes {batch, rows, cols}, strides in elements (any
// non-negative strides; a stride of 0 broadcasts, e.g. a bias row over rows or batches).
struct MatrixLayout {
  std::array<int64_t, 3> sizes{};
  std::array<int64_t, 3> strides{};

  // Contiguous row-major {batch, rows, cols}.
  static MatrixLayout contiguous(int64_t batch, int64_t rows, int64_t cols);
  // The same matrices with rows and columns swapped (a view, no data moves): a transposed
  // operand such as a weight W[N, K] read as W^T[K, N].
  MatrixLayout transposed() const;
};

// One pointwise op applied to every element of a float32 product after eager's alpha/beta/
// bias epilogue, as eager applies it to addmm's result: each post-op rounds to float32 as the
// eager op does (post_ops.cpp says which oneDNN post-op computes each kind, how exactly, and
// which kinds are refused and why).
struct PostOp {
  enum class Kind : uint8_t {
    Relu,
    GeluErf,   // gelu(x) (approximate="none")
    GeluTanh,  // gelu(x, approximate="tanh")
    Tanh,
    Sigmoid,
    Silu,
    Exp,
    Abs,
    Square,  // x * x
    Sqrt,
    Linear,  // eager's x * alpha + beta: the product rounded, then the sum (mul and add);
             // alpha == 1 is no mul, beta == 0 no add
    Clip,    // clamp(x, alpha, beta)
    // With a tensor `operand` (t): x + t, x - t, x * t, x / t, maximum(x, t), minimum(x, t);
    // with operand_first, t - x and t / x.
    Add,
    Sub,
    Mul,
    Div,
    Maximum,
    Minimum,
  };
  Kind kind = Kind::Relu;
  double alpha = 0, beta = 0;           // Linear: alpha * x + beta; Clip: lo, hi
  std::optional<MatrixLayout> operand;  // the binary kinds: t as {batch, rows, cols} strides,
                                        // broadcast to c's sizes (size 1 or stride 0)
  DType operand_dtype = DType::Float32;
  bool operand_first = false;  // Sub, Div: t - x, t / x instead of x - t, x / t

  bool is_binary() const { return kind >= Kind::Add; }
  static const char* kind_name(Kind kind);  // "gelu_erf", "add", ...
};

// c[b] = alpha * (a[b] @ b[b]) + beta * bias[b]  (bias optional). Eager addmm/baddbmm
// semantics: beta == 0 ignores the bias values entirely, NaN and inf included.
struct MatmulSpec {
  DType dtype = DType::Float32;  // a, b, c and bias all have it
  MatrixLayout a, b, c;          // c is what Stax allocates: contiguous {batch, M, N} usually
  std::optional<MatrixLayout> bias;
  double alpha = 1.0, beta = 1.0;
  // Whether alpha == 0 skips the product: c = beta * bias even where a or b hold inf or NaN.
  // Otherwise 0 * (a @ b) is computed, NaN there, on every CPU. Eager's float32 and float64
  // addmm skip it (a BLAS call), its baddbmm of 400 or more products per matrix too (a BLAS
  // call; below that its own loop computes it), its 16-bit ones never (probed on torch
  // 2.13.0); lowering sets it accordingly (lower_contraction.cpp).
  bool alpha_zero_skips_product = false;
  // Applied in order to c's elements after the epilogue above (float32 only).
  std::vector<PostOp> post_ops;

  // "bf16 [2x128x768] @ [2x768x3072]^T -> [2x128x3072] + 0.5*bias[1x1x3072]" for errors and
  // explain: sizes, a layout note per operand (^T column-major, strided, broadcast batch),
  // then the post-ops: " then gelu_erf, add t[2x128x3072]".
  std::string describe() const;
};

// Thrown for anything the library refuses or fails at; the message names the op and shapes.
class LibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How a plan hands B to the library (matmul_weights_form.h): in place (Direct), or reordered
// on every run into the layout the library's kernel prefers (Packed), or the whole product
// to the BLAS where one is loaded (Blas: float32 without post-ops; blas_library.h). Measured
// (the default) times them once per shape and process where B's columns are contiguous;
// Direct, Packed and Blas force one form (tests and benchmarks: each form runs on every
// machine that has it); MeasuredWithoutBlas times the oneDNN forms only (before/after
// measurements of the BLAS).
enum class MatmulWeights : uint8_t { Measured, Direct, Packed, Blas, MeasuredWithoutBlas };

// The BLAS that float32 plans may hand their product to (MatmulWeights::Blas): its
// description ("oneMKL 2026 Update 2 (path, GNU OpenMP layer)"), or empty when none is loaded
// and then `why` (if not null) says why. Loads it on first use: where it is looked for is
// blas_library.h's STAX_BLAS_LIBRARY, then set_blas_library_path()'s path, then the loader's.
std::string blas_description(std::string* why = nullptr);
// A path to look for the BLAS at before the loader's path (the Python bridge passes its
// environment's lib/libmkl_rt.so.3); takes effect only before the BLAS is first looked for.
void set_blas_library_path(const std::string& path);

class MatmulPlan {
 public:
  // How plans of `dtype` multiply on this machine: Native where oneDNN has a kernel for it,
  // ThroughFloat32 for bfloat16 where it has only float32's (an AVX2-only CPU: arithmetic.h),
  // nullopt where it has neither; `why` (if not null) gets the library's refusal of the dtype.
  static std::optional<Arithmetic> arithmetic(DType dtype, std::string* why = nullptr);
  // Whether a library plan exists for the spec on this machine: the dtype is one oneDNN
  // multiplies on this CPU (float32, bfloat16; bfloat16 through float32 where it has no kernel
  // for it, with the float32 plan's refusals), the shapes agree, and the layout is one
  // oneDNN runs with an optimized kernel (one of the last two strides of a and b is 1, c's
  // columns contiguous, ...: decided by asking oneDNN which implementation it picks, and
  // refusing its reference one), and the post-ops are ones oneDNN computes as eager does
  // with a fast kernel (float32 products; kinds, operand layouts and chains: post_ops.cpp).
  // When false, `why` (if not null) says why.
  static bool supported(const MatmulSpec& spec, std::string* why);
  // Builds the library primitive once, for `num_threads` threads (0: omp_get_max_threads()).
  // Throws LibraryError when supported() is false or oneDNN fails, or when `weights` is
  // Packed and the library has no fast kernel for that form, or Blas and the BLAS cannot
  // compute the spec (none loaded, or matmul_blas.h's conditions). A Measured plan keeps its
  // measurement for the process and, when `measurement_dir` is not empty, in a small file
  // there that later processes on this machine read instead of measuring again.
  // `why_asked`: why a caller asks for Direct, Packed or Blas, for explain ("" : "asked for").
  static std::unique_ptr<MatmulPlan> create(const MatmulSpec& spec, int num_threads = 0,
                                            MatmulWeights weights = MatmulWeights::Measured,
                                            const std::string& measurement_dir = "",
                                            const std::string& why_asked = "");

  ~MatmulPlan();
  MatmulPlan(const MatmulPlan&) = delete;
  MatmulPlan& operator=(const MatmulPlan&) = delete;

  // Runs on `num_threads` threads of the process's OpenMP runtime (0: the caller's
  // omp_get_max_threads()), restoring the caller's omp max-threads setting after. c must not
  // overlap a, b or the bias (it may be written before the library reads them). oneDNN fixes a
  // primitive's thread count when it is built, so a count other than create()'s builds one more
  // primitive on its first use (kept). Thread-safe for concurrent calls of one plan. Throws
  // LibraryError on failure. `post_operands` holds the tensor of each binary post-op, in the
  // order of spec().post_ops, one pointer per binary post-op (none for the others); c must
  // not overlap them either.
  void run(const void* a, const void* b, const void* bias, void* c, int num_threads,
           std::span<const void* const> post_operands = {}) const;

  // "oneDNN 2.6.3 matmul brg:avx512_core_amx_bf16, bias added by the library" for explain;
  // "no library call: K == 0, c = beta * bias" for empty products; then the form and why.
  std::string implementation() const;
  // Whether run() reorders B into the library's layout before the product (a workspace of
  // B's size from the process's pool).
  bool packs_weights() const;
  // The form run() uses: Direct, Packed or Blas (never Measured).
  MatmulWeights weights_form() const;
  // How the plan multiplies: ThroughFloat32 for a bfloat16 spec where oneDNN has no bfloat16
  // kernel, and for one of alpha == 0 whose product eager computes (its float32 values are
  // scaled after the call: matmul_through_float32.h).
  Arithmetic arithmetic() const;
  const MatmulSpec& spec() const;

 private:
  struct State;  // matmul.cpp
  explicit MatmulPlan(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace stax::external
