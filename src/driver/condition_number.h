// How much a pointwise op magnifies a relative error of its operand, for the comparison
// tolerance (driver/tolerance.h; issue 32, point 4).
//
// An operand x off by a relative error e gives f(x(1 + e)) ~= f(x) (1 + kappa e), kappa =
// |x f'(x) / f(x)| the op's relative condition number: exp multiplies e by |x|, log by
// 1 / |log x| (large near 1), sin by |x cot x|. The condition number depends on the values, so
// it is measured on the oracle's operand, element by element, and the largest counts. An
// element only needs the larger relative tolerance where the magnified error exceeds what the
// absolute tolerance already allows: |x f'(x)| e = kappa e |f(x)| <= atol + rtol |f(x)| holds
// with rtol = A e for the amplification A = kappa - atol / (e |f(x)|). So exp of very negative
// arguments (tiny results) or log just above 1 in float32 (an absolute error of e, below atol)
// magnifies nothing. An element whose exact result is 0 or not finite, or whose condition number is
// infinite (asin at 1), no rtol can cover: it is left to atol. Ops whose condition number is at
// most 1 everywhere (add and mul of one sign, div, sqrt, tanh, erf, ...) pass relative errors on
// unchanged and are not listed; neither are add and sub, whose cancellation the tolerance model
// excludes (sums of one sign, tolerance.h).
#pragma once

#include <cstddef>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace stax {

// Whether `node` may magnify a relative error of its tensor argument `arg` (a listed op).
bool may_magnify_error(const ir::Node& node, size_t arg);

// The factor (>= 1) by which `node` multiplies a relative error `operand_rtol` of its tensor
// argument `arg`, whose oracle value is `operand`, where the result's absolute tolerance
// `result_atol` does not already cover it. 1 where the op does not magnify errors.
double error_amplification(const ir::Node& node, size_t arg, const Tensor& operand,
                           double operand_rtol, double result_atol);

}  // namespace stax
