// What a contraction node (issue 14: mm, bmm, addmm, baddbmm) computes, read from its
// arguments: out[b, i, j] = alpha * sum_k lhs[b, i, k] * rhs[b, k, j] + beta * bias[b, i, j],
// with the bias (addmm's and baddbmm's `self`) expanded to the result's sizes. mm and addmm
// have no batch dim (batch = 1, `batched` false). Type inference, the eager interpreter,
// lowering and the comparison tolerance all read contraction nodes through
// contraction_args, so they never disagree on which argument is which or on what eager
// refuses: ranks other than 2 (3 for bmm/baddbmm), inner sizes that differ, batch sizes that
// differ, operands of different dtypes (the bias included), bool (PyTorch has no bool matrix
// product), a bias that does not expand to the result (expand's rule: the bias may have fewer
// dims, and size 1 where the result has more; not more dims), and an alpha or beta that does
// not convert to the computation type without overflow. Each refusal is a GraphError naming the
// op and the operands' sizes, in torch 2.13.0's words where they are clear.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace stax::ir {

struct ContractionArgs {
  DType dtype = DType::Float32;  // of every operand and of the result
  bool batched = false;          // bmm, baddbmm
  int64_t batch = 1;
  int64_t m = 0;   // rows of the result
  int64_t k = 0;   // the contracted (inner) size
  int64_t n = 0;   // columns of the result
  size_t lhs = 0;  // argument positions of the factors: lhs is [batch,] m x k, rhs [batch,] k x n
  size_t rhs = 1;
  std::optional<size_t> bias;  // addmm/baddbmm's `self`, which expands to the result's sizes
  // alpha and beta, default 1. PyTorch converts them to the type it computes in (checked:
  // values that overflow it are refused): the dtype for integers (floats truncate toward zero),
  // float32 for float16/bfloat16/float32, float64 for float64. beta == 0 after that conversion
  // (so also beta = 1e-50 for float32) ignores the bias, NaN and inf included.
  Scalar alpha = Scalar(int64_t{1});
  Scalar beta = Scalar(int64_t{1});
  // The type alpha and beta are converted to (above).
  DType scalar_dtype = DType::Float32;

  std::vector<int64_t> result_sizes() const;
};

// Reads and checks a contraction node's arguments (GraphError on what eager refuses).
ContractionArgs contraction_args(const Graph& graph, const Node& node);

}  // namespace stax::ir
