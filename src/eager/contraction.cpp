// Contractions of the eager interpreter (issue 14, point 3): mm, bmm, addmm, baddbmm, as
// out[b, i, j] = alpha * sum_k lhs[b, i, k] * rhs[b, k, j] + beta * bias[b, i, j]
// (ir/contraction_args.h reads the arguments). What torch 2.13.0 computes on CPU, probed:
// - Floating dtypes: each product and the sum over k in double, then alpha times the sum plus
//   beta times the bias in double, rounded once to the dtype. PyTorch accumulates float32,
//   bfloat16 and float16 in float32 (the 16-bit products exact there) and rounds once at the
//   end, bias included: bf16 addmm of [1, 2^-8] . [1, 1] + 2^-8 is 1 + 2^-7, not 1; alpha and
//   beta are taken as float32 values (1 + 2^-8 is not rounded to bfloat16 first). Summing in
//   double is the exact sum rounded once; the comparison tolerance (driver/tolerance.h)
//   covers float32 accumulation.
// - beta == 0 (after its conversion, contraction_args.h) ignores the bias: NaN and inf there do
//   not propagate, as PyTorch documents and does.
// - alpha == 0: the product is still computed and scaled, so NaN or inf in the factors give
//   NaN (IEEE 0 * inf), as torch's decompositions of addmm and baddbmm compute it. Eager
//   itself is not consistent there (probed): float32/float64 addmm and large baddbmm skip the
//   product (BLAS's rule), small baddbmm and 16-bit addmm propagate NaN, and bf16 baddbmm with
//   alpha = beta = 0 returns uninitialized memory; no one rule matches them all.
// - An empty contraction (k = 0) has a product of exactly 0, alpha not applied (PyTorch zeroes
//   the result, or copies beta * bias, without looking at alpha).
// - Integer dtypes: exact arithmetic modulo 2^64, then wrapped to the dtype, which is what
//   PyTorch's wrapping arithmetic in the dtype gives (two's complement products and sums are
//   the same modulo 2^width in any order): int8 [100] * 5 . [-100] is -80, int64 extremes wrap.
//   alpha and beta are the dtype's values (a float truncated toward zero: 2.7 is 2).
#include <cstdint>
#include <optional>
#include <vector>

#include "eager/ops.h"
#include "ir/contraction_args.h"
#include "ir/op_schema.h"

namespace stax::eager::detail {

namespace {

// An operand viewed as [batch, rows, cols] (mm's matrices get a batch dim of 1).
Tensor as_batched(const Tensor& t) {
  if (t.dim() == 3) return t;
  return t.as_strided({1, t.sizes()[0], t.sizes()[1]}, {0, t.strides()[0], t.strides()[1]},
                      t.offset());
}

// Every element of a [batch, rows, cols] view in row-major order.
template <typename T, typename Load>
std::vector<T> gather(const Tensor& t, Load load) {
  std::vector<T> out;
  out.reserve(static_cast<size_t>(t.numel()));
  std::vector<int64_t> index(3, 0);
  for (index[0] = 0; index[0] < t.sizes()[0]; ++index[0]) {
    for (index[1] = 0; index[1] < t.sizes()[1]; ++index[1]) {
      for (index[2] = 0; index[2] < t.sizes()[2]; ++index[2]) out.push_back(load(t, index));
    }
  }
  return out;
}

std::vector<double> gather_floats(const Tensor& t) {
  return gather<double>(t, [](const Tensor& x, const std::vector<int64_t>& i) { return x.get(i); });
}

std::vector<uint64_t> gather_ints(const Tensor& t) {
  return gather<uint64_t>(t, [](const Tensor& x, const std::vector<int64_t>& i) {
    return static_cast<uint64_t>(load_int(x, i));
  });
}

// Calls store(row-major result position, sum over k) for every result element, the sum in
// `Acc`; lhs is [batch, m, k] and rhs [batch, k, n], row-major.
template <typename Acc, typename Store>
void contract(const ir::ContractionArgs& a, const std::vector<Acc>& lhs,
              const std::vector<Acc>& rhs, Store store) {
  const size_t m = static_cast<size_t>(a.m), k = static_cast<size_t>(a.k);
  const size_t n = static_cast<size_t>(a.n);
  size_t position = 0;
  for (size_t b = 0; b < static_cast<size_t>(a.batch); ++b) {
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = 0; j < n; ++j) {
        Acc sum = 0;
        for (size_t p = 0; p < k; ++p) sum += lhs[(b * m + i) * k + p] * rhs[(b * k + p) * n + j];
        store(position++, sum);
      }
    }
  }
}

}  // namespace

Tensor eval_contraction(const Env& env, const ir::Node& node) {
  const ir::ContractionArgs a = ir::contraction_args(env.graph, node);
  const ir::TensorType& type = env.result_type(node);
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  if (out.numel() == 0) return out;
  const Tensor lhs = as_batched(env.tensor(node, a.lhs));
  const Tensor rhs = as_batched(env.tensor(node, a.rhs));
  const bool floating = is_floating(a.dtype);
  // beta == 0 in the type PyTorch computes in drops the bias (NaN and inf included).
  const bool use_bias =
      a.bias.has_value() && (floating ? scalar_to_float(a.beta, a.scalar_dtype) != 0.0
                                      : scalar_to_int(a.beta, a.scalar_dtype) != 0);
  std::optional<Tensor> bias;
  if (use_bias) {
    bias = as_batched(broadcast_to(env.tensor(node, *a.bias), type.sizes));
  }
  // The product term is exactly zero for an empty contraction, alpha not applied.
  const bool scale = a.k > 0;
  if (floating) {
    const double alpha = scalar_to_float(a.alpha, a.scalar_dtype);
    const double beta = scalar_to_float(a.beta, a.scalar_dtype);
    const std::vector<double> bias_values = bias ? gather_floats(*bias) : std::vector<double>{};
    contract<double>(a, gather_floats(lhs), gather_floats(rhs), [&](size_t o, double sum) {
      double r = scale ? alpha * sum : 0.0;
      if (bias) r += beta * bias_values[o];
      out.set_flat(static_cast<int64_t>(o), round_to(a.dtype, r));
    });
  } else {
    // Unsigned 64-bit arithmetic wraps (signed overflow would be undefined); the store wraps
    // to the dtype.
    const uint64_t alpha = static_cast<uint64_t>(scalar_to_int(a.alpha, a.scalar_dtype));
    const uint64_t beta = static_cast<uint64_t>(scalar_to_int(a.beta, a.scalar_dtype));
    const std::vector<uint64_t> bias_values = bias ? gather_ints(*bias) : std::vector<uint64_t>{};
    contract<uint64_t>(a, gather_ints(lhs), gather_ints(rhs), [&](size_t o, uint64_t sum) {
      uint64_t r = scale ? alpha * sum : 0;
      if (bias) r += beta * bias_values[o];
      store_int(out, unravel_index(static_cast<int64_t>(o), type.sizes), static_cast<int64_t>(r));
    });
  }
  return out;
}

}  // namespace stax::eager::detail
