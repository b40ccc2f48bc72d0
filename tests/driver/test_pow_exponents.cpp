// pow by the exponents eager PyTorch treats specially (issue 13, point 4): compiled code at
// every SIMD level against the eager interpreter and against torch 2.13.0's values, for
// pow.Tensor_Scalar (pow(x, 0.5): eager's pow_tensor_scalar kernel takes sqrt, rsqrt,
// reciprocal and products for 0.5, -0.5, -1, 2, 3, -2, except in float16) and for
// pow.Tensor_Tensor with a constant exponent tensor (pow(x, full_like(x, 0.5)): elementwise pow,
// whatever the exponent's values), over the special values +-0, +-inf, NaN, negatives and a
// subnormal. The two differ exactly there: torch.pow(-inf, 0.5) is NaN, torch.pow(-inf,
// full_like(x, 0.5)) is inf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"

namespace stax {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

const std::vector<double> kValues = {0.0,  -0.0, kInf,  -kInf, kNaN, -2.0,
                                     -0.5, 2.0,  1e-40, -1.0,  1.0,  3.0};
const std::vector<std::string> kExponents = {
    "0.5", "-0.5", "2", "3", "-1", "-2", "1", "0", "0.3333333333333333"};

// Bitwise equality, NaN equal to NaN (the sign of zero counts).
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// One graph per dtype: outputs s<k> = pow(x, e_k) and t<k> = pow(x, full_like(x, e_k)).
ir::Graph pow_graph(const std::string& dtype, int64_t n) {
  std::string text = "def f(x: " + dtype + "[" + std::to_string(n) + "]):\n";
  std::string outputs;
  for (size_t k = 0; k < kExponents.size(); ++k) {
    const std::string e = kExponents[k], i = std::to_string(k);
    text += "    s" + i + " = pow(x, " + e + ")\n";
    text += "    c" + i + " = full_like(x, " + e + ")\n";
    text += "    t" + i + " = pow(x, c" + i + ")\n";
    outputs += std::string(outputs.empty() ? "" : ", ") + "s" + i + ", t" + i;
  }
  return ir::parse_graph(text + "    return " + outputs + "\n", "pow.stax");
}

// torch 2.13.0 eager at the special values (x ** e for the listed x; s: scalar exponent,
// t: the exponent as a tensor):
//   torch.pow(tensor([-0., -inf]), 0.5)                -> [-0., nan]
//   torch.pow(tensor([-0., -inf]), full_like(x, 0.5))  -> [0., inf]
//   torch.pow(tensor([-0., -inf]), -0.5)               -> [-inf, nan]
//   torch.pow(tensor([-0., -inf]), full_like(x, -0.5)) -> [inf, 0.]
// and in float16 the scalar exponent behaves as the tensor one ([0., inf], [inf, 0.]).
struct Literal {
  size_t exponent;  // into kExponents
  bool scalar;
  double x, expected;
};

std::vector<Literal> torch_literals(bool float16) {
  const double s_neg_zero = float16 ? 0.0 : -0.0, s_neg_inf = float16 ? kInf : kNaN;
  const double r_neg_zero = float16 ? kInf : -kInf, r_neg_inf = float16 ? 0.0 : kNaN;
  return {
      {0, true, -0.0, s_neg_zero}, {0, true, -kInf, s_neg_inf}, {0, false, -0.0, 0.0},
      {0, false, -kInf, kInf},     {1, true, -0.0, r_neg_zero}, {1, true, -kInf, r_neg_inf},
      {1, false, -0.0, kInf},      {1, false, -kInf, 0.0},      {4, false, -0.0, -kInf},
      {5, true, -kInf, 0.0},       {7, false, kNaN, 1.0},       {2, false, -kInf, kInf},
  };
}

TEST(PowExponents, CompiledMatchesEagerAndTorchAtSpecialValues) {
  for (const std::string dtype : {"f32", "f64", "bf16", "f16"}) {
    // Three copies: vector bodies and a tail at every level.
    const int64_t n = 3 * static_cast<int64_t>(kValues.size());
    const ir::Graph g = pow_graph(dtype, n);
    const DType d = g.value(g.inputs()[0]).type.dtype;
    Tensor x = Tensor::empty(d, {n});
    for (int64_t p = 0; p < n; ++p) x.set_flat(p, kValues[static_cast<size_t>(p) % kValues.size()]);
    const std::vector<Tensor> expected = eager::run(g, {x});
    const std::vector<Tolerance> tolerances = output_tolerances(g);
    for (const Literal& l : torch_literals(dtype == "f16")) {
      for (size_t v = 0; v < kValues.size(); ++v) {
        if (!same(kValues[v], l.x)) continue;
        const Tensor& out = expected[2 * l.exponent + (l.scalar ? 0 : 1)];
        EXPECT_TRUE(same(out.get_flat(static_cast<int64_t>(v)), l.expected))
            << "eager " << dtype << ": pow(" << l.x << ", " << kExponents[l.exponent]
            << (l.scalar ? "" : " as a tensor") << ") = " << out.get_flat(static_cast<int64_t>(v));
      }
    }
    for (auto simd : runtime::runnable_simd_levels()) {
      CompileOptions options;
      options.simd = simd;
      options.num_threads = 1;
      const std::vector<Tensor> got = compile(g, options).run({x});
      ASSERT_EQ(got.size(), expected.size());
      for (size_t o = 0; o < got.size(); ++o) {
        const std::string where = dtype + " " + std::string(runtime::simd_level_name(simd)) +
                                  ": pow(x, " + kExponents[o / 2] + (o % 2 ? " as a tensor" : "") +
                                  ")";
        EXPECT_TRUE(eager::compare(got[o], expected[o], tolerances[o].rtol, tolerances[o].atol)
                        .within_tolerance)
            << where;
        // Special values are exact: infinities, NaN and the sign of zero.
        for (int64_t p = 0; p < n; ++p) {
          const double e = expected[o].get_flat(p), a = got[o].get_flat(p);
          if (std::isinf(e) || std::isnan(e) || e == 0.0) {
            EXPECT_TRUE(same(a, e))
                << where << " at x = " << x.get_flat(p) << ": " << a << ", eager " << e;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace stax
