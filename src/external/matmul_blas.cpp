// A matmul plan's product through the BLAS (matmul_blas.h).
#include "external/matmul_blas.h"

#include <algorithm>
#include <optional>

#include "external/host_loops.h"

namespace stax::external::detail {

namespace {

// A matrix as the BLAS takes it: stored row by row (op(x) = x), or column by column (as the
// rows of x^T: op(x) = x^T), with the stride between those rows or columns.
struct BlasOperand {
  bool transposed = false;
  int64_t leading = 1;
};

std::optional<BlasOperand> blas_operand(const MatrixLayout& layout) {
  const int64_t rows = layout.sizes[1], cols = layout.sizes[2];
  const int64_t row_stride = layout.strides[1], col_stride = layout.strides[2];
  if (cols == 1 || col_stride == 1) {
    const int64_t leading = rows == 1 ? std::max<int64_t>(cols, 1) : row_stride;
    if (leading >= std::max<int64_t>(cols, 1)) return BlasOperand{false, leading};
  }
  if (rows == 1 || row_stride == 1) {
    const int64_t leading = cols == 1 ? std::max<int64_t>(rows, 1) : col_stride;
    if (leading >= std::max<int64_t>(rows, 1)) return BlasOperand{true, leading};
  }
  return std::nullopt;
}

}  // namespace

std::string blas_refusal(const MatmulSpec& spec) {
  if (spec.dtype != DType::Float32) return "the BLAS multiplies float32 only here";
  if (!spec.post_ops.empty()) return "post-ops: the BLAS has no epilogue to apply them in";
  if (spec.c.sizes[0] != 1) return "a batch of products: batched products stay oneDNN's";
  // A BLAS skips the product when alpha == 0; where the op does not (matmul.h), inf and NaN
  // in a or b must give NaN.
  if (spec.alpha == 0.0) return "alpha == 0: the BLAS would skip the product";
  // Eager's epilogue is fma(beta, bias, float(alpha * acc)) (matmul.cpp); MKL 2026 rounds
  // alpha * acc + beta * c otherwise unless alpha == 1 and beta is 0 or 1 (measured on exact
  // products: 230-530 of 1320 elements differ by a rounding).
  const bool with_bias = spec.bias && spec.beta != 0.0;
  if (spec.alpha != 1.0 || (with_bias && spec.beta != 1.0)) {
    return "alpha or beta other than 1: the BLAS rounds that epilogue unlike eager";
  }
  const auto a = blas_operand(spec.a), b = blas_operand(spec.b), c = blas_operand(spec.c);
  if (!a || !b) return "an operand stored neither by rows nor by columns";
  if (!c || c->transposed) return "c not stored by rows";
  for (int64_t value :
       {spec.c.sizes[1], spec.c.sizes[2], spec.a.sizes[2], a->leading, b->leading, c->leading}) {
    if (!BlasLibrary::fits(value)) return "a size above the BLAS's 32-bit range";
  }
  return "";
}

void run_blas_product(const BlasLibrary& blas, const MatmulSpec& spec, const void* a, const void* b,
                      const void* bias, void* c, int threads) {
  const BlasOperand oa = *blas_operand(spec.a), ob = *blas_operand(spec.b);
  const BlasOperand oc = *blas_operand(spec.c);
  const bool with_bias = spec.bias && spec.beta != 0.0;
  if (with_bias) copy_bias(spec, bias, c, threads);
  blas.sgemm(oa.transposed, ob.transposed, spec.c.sizes[1], spec.c.sizes[2], spec.a.sizes[2],
             static_cast<float>(spec.alpha), static_cast<const float*>(a), oa.leading,
             static_cast<const float*>(b), ob.leading,
             with_bias ? static_cast<float>(spec.beta) : 0.0f, static_cast<float*>(c), oc.leading,
             threads);
}

}  // namespace stax::external::detail
