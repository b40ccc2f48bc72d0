// How closely a compiled result must match the eager oracle, per graph output, derived from
// the output's dtype and the sums that feed it.
//
// The base is PyTorch's assert_close default for the dtype (float32: rtol 1.3e-6 = 22 u,
// atol 1e-5): it covers the ulp-level differences of pointwise ops (SLEEF's u10 functions
// against the oracle's correctly rounded ones). A sum or mean adds its own rounding error:
// the oracle adds in double and rounds once, compiled code adds in float32 in blocks
// whose sums are added in double (kernel/cascade_blocking.h), whose error is that of the longest
// run of plain additions, n = cascade_error_chain(L) <= 144 additions whatever the length L.
// Modelling each addition's relative error as independent and uniform in [-u, u] (standard
// deviation u/sqrt(3)), a run of n additions whose partial sums grow to the run's sum S has an
// error of standard deviation (u/sqrt(3)) * sqrt(sum_k (k/n)^2) * S ~= u * sqrt(n) / 3 * S,
// and S is at most the whole sum for elements of one sign. Each sum or mean feeding the
// output (on any path from the inputs; amax/amin are exact) thus allows 4 standard
// deviations, 4 u sqrt(n) / 3 (16 u = 9.5e-7 for float32), added in quadrature to the base:
// the sources are independent, and a relative error passes unchanged through later sums,
// products and quotients (float32 output of one sum of any length: rtol 1.61e-6). Equal
// elements round alike, so their errors do not cancel; a block of 128 times 0.1 is 16 u off,
// still within the allowance.
// Two other reductions accumulate too. var, std, var_mean and logsumexp add their elements
// like a sum but not in the cascade (Welford's updates, a sum of exponentials): the same
// argument over all L additions gives 4 u sqrt(L) / 3. prod multiplies L factors and every
// rounding's relative error passes unchanged into the product: standard deviation
// u sqrt(L) / sqrt(3), allowance 4 u sqrt(L) / sqrt(3). u is the unit roundoff of the type the
// reduction accumulates in (float32 for float16, bfloat16 and float32; float64 for float64).
// A contraction (mm, bmm, addmm, baddbmm; issue 14) sums K products per output element. The
// oracle sums in double and rounds once (eager/contraction.cpp); a GEMM accumulates each
// output element in one chain along K (blocks of K added one after another into the same
// accumulator), so it is a plain sum of K terms, 4 u sqrt(K) / 3 as above, plus three
// roundings each at most u of the result (standard deviation u / sqrt(3) each, for elements of
// one sign): the products' (sum_k of u/sqrt(3) |p_k| in quadrature is at most u S / sqrt(3),
// none with FMAs), the scaling by alpha and the addition of beta * bias. In quadrature
// u^2 K / 9 + 3 u^2 / 3 = u^2 (K + 9) / 9, so the allowance is 4 u sqrt(K + 9) / 3 (float32
// with K = 768: 2.2e-6, rtol 2.6e-6 with the base). u is float32's for float16, bfloat16 and
// float32 (PyTorch and GEMM libraries accumulate those in float32), float64's for float64.
// A convolution (issue 15) sums C_in/groups * prod(kernel) products per output element (a
// transposed one at most that many), the oracle in double rounded once (eager/convolution.cpp):
// it is allowed as a contraction with that K.
// Reductions reached through tensor lists (cat, stack) count like any other argument.
// An op whose relative condition number exceeds 1 magnifies the errors that reach it (issue
// 32, point 4): exp(x) turns a relative error e of x into |x| e, so exp of a GEMM's result
// near 12 is 12 times the GEMM's allowance off. Each error source (an accumulation above, or
// a pointwise op that does not round like the oracle: exp, sin, gelu, ...; add, mul, div
// round alike) is followed forward through the graph with the largest product of the
// condition numbers on its paths (driver/condition_number.h, measured on the oracle's
// values, and only where atol does not already cover the magnified error). The output's rtol
// is the base times the largest such factor of a pointwise source, in quadrature with each
// accumulation's allowance times its factor. Factors below 1 are not credited (a relative
// error passes unchanged, at worst), and without the oracle's values every factor is 1.
// Only rtol grows: atol stays the dtype's floor for results near zero. So a dropped element
// of a sum of 1e6 values in [0, 1) (its largest, a relative change of 2e-6) is a mismatch,
// where a tolerance growing like sqrt(L) (1.3e-3) would let it pass.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace stax {

struct Tolerance {
  double rtol;
  double atol;
};

// The tolerance of a value of `dtype` computed from sums or means of these lengths (elements
// per output element). Integers and bool compare exactly.
Tolerance value_tolerance(DType dtype, const std::vector<int64_t>& sum_lengths);

// The tolerance of a value of the graph (from the sums on its paths from the inputs).
// `oracle_values`: the eager oracle's value of every graph value, by ValueRef::index
// (eager::run's `all_values`), which measures the condition numbers; without it, ops are
// taken not to magnify errors.
Tolerance graph_value_tolerance(const ir::Graph& graph, ir::ValueRef value,
                                const std::vector<Tensor>* oracle_values = nullptr);
// The tolerance of each graph output, in the order of graph.outputs().
std::vector<Tolerance> output_tolerances(const ir::Graph& graph,
                                         const std::vector<Tensor>* oracle_values = nullptr);

}  // namespace stax
