// The eager interpreter on convolutions (issue 15): every case of convolution_torch_cases.inc
// (PyTorch 2.13.0's CPU results for 1-, 2- and 3-D convolutions, forward and transposed,
// strided, padded, dilated, grouped and depthwise, with and without a bias, empty inputs, the
// 16-bit floats and wrapping integers) and a few rules checked by hand: strided operands,
// padding that contributes no product, and a small case worked out in the comment.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "convolution_torch_cases.h"
#include "eager_test_util.h"
#include "ir/builder.h"

namespace stax::eager {
namespace {

using testing::ConvolutionCase;
using testing::make;
using testing::run1;
using testing::values;

// The comparison tolerance of driver/tolerance.h for a sum of K products (a contraction): the
// dtype's base rtol and 4 u sqrt(K + 9) / 3 in quadrature, u of the type PyTorch accumulates
// in (float32 for float16, bfloat16 and float32), atol the dtype's floor. Eager sums in double
// and rounds once; PyTorch accumulates in that type in its own order.
struct Tolerance {
  double rtol;
  double atol;
};
Tolerance tolerance(DType dtype, int64_t products) {
  const bool f64 = dtype == DType::Float64;
  const double base = f64                       ? 1e-7
                      : dtype == DType::Float32 ? 1.3e-6
                      : dtype == DType::Float16 ? 1e-3
                                                : 1.6e-2;
  const double u = std::ldexp(1.0, f64 ? -53 : -24);
  const double allowance = 4.0 * u * std::sqrt(static_cast<double>(products) + 9.0) / 3.0;
  return {std::sqrt(base * base + allowance * allowance), f64 ? 1e-7 : 1e-5};
}

// C_in/groups * prod(kernel).
int64_t products_per_output(const ConvolutionCase& c) {
  int64_t n = c.input_sizes[1] / c.groups;
  for (size_t d = 2; d < c.weight_sizes.size(); ++d) n *= c.weight_sizes[d];
  return n;
}

TEST(EagerConvolution, TorchCases) {
  const std::vector<ConvolutionCase>& cases = testing::convolution_cases();
  ASSERT_GE(cases.size(), 50u);
  for (const ConvolutionCase& c : cases) {
    SCOPED_TRACE(c.name + ":\n" + testing::program_text(c));
    const Tensor r = run1(testing::program_text(c), testing::make_operands(c));
    ASSERT_EQ(r.dtype(), c.dtype);
    ASSERT_EQ(r.sizes(), c.result_sizes);
    const size_t expected_count =
        is_floating(c.dtype) ? c.expected_floats.size() : c.expected_ints.size();
    const int64_t sampled = r.numel() == 0 ? 0 : (r.numel() - 1) / c.every + 1;
    ASSERT_EQ(static_cast<int64_t>(expected_count), sampled);
    const Tolerance tol = tolerance(c.dtype, products_per_output(c));
    for (size_t k = 0; k < expected_count; ++k) {
      const int64_t p = static_cast<int64_t>(k) * c.every;
      if (!is_floating(c.dtype)) {
        const int64_t got = detail::load_int(r, unravel_index(p, r.sizes()));
        EXPECT_EQ(got, c.expected_ints[k]) << "at " << p;
        continue;
      }
      const double got = r.get_flat(p);
      const double want = c.expected_floats[k];
      if (c.exact) {
        EXPECT_EQ(got, want) << "at " << p;
      } else {
        EXPECT_NEAR(got, want, tol.atol + tol.rtol * std::abs(want)) << "at " << p;
      }
    }
  }
}

Tensor eval(const std::string& inputs, const std::string& call, const std::vector<Tensor>& args) {
  return run1("def f(" + inputs + "):\n    r = " + call + "\n    return r\n", args);
}

TEST(EagerConvolution, WorkedExample) {
  // x = [1, 2, 3, 4], w = [1, 10], stride 2, padding 1, bias 100: the windows are
  // [pad, 1], [2, 3], [4, pad], so r = [100 + 10, 100 + 2 + 30, 100 + 4].
  const Tensor x = make(DType::Float32, {1, 1, 4}, {1, 2, 3, 4});
  const Tensor w = make(DType::Float32, {1, 1, 2}, {1, 10});
  const Tensor b = make(DType::Float32, {1}, {100});
  EXPECT_EQ(values(eval("x: f32[1, 1, 4], w: f32[1, 1, 2], b: f32[1]",
                        "convolution(x, w, b, [2], [1], [1], False, [0], 1)", {x, w, b})),
            (std::vector<double>{110, 132, 104}));
  // Transposed, the gradient of that convolution: input position i scatters x[i] * w[k] to
  // output i * 2 - 1 + k; with output_padding 1 the result is 2 * (4 - 1) - 2 + 2 + 1 = 7 wide:
  // [x0*10, x1*1, x1*10, x2*1, x2*10, x3*1, x3*10] = [10, 2, 20, 3, 30, 4, 40].
  EXPECT_EQ(values(eval("x: f32[1, 1, 4], w: f32[1, 1, 2]",
                        "convolution(x, w, None, [2], [1], [1], True, [1], 1)", {x, w})),
            (std::vector<double>{10, 2, 20, 3, 30, 4, 40}));
  // Dilation 3 reads x[0] and x[3]: 1 + 40.
  EXPECT_EQ(values(eval("x: f32[1, 1, 4], w: f32[1, 1, 2]",
                        "convolution(x, w, None, [1], [0], [3], False, [0], 1)", {x, w})),
            (std::vector<double>{41}));
}

TEST(EagerConvolution, StridedOperands) {
  // A channels-last input and a weight read through a transpose give the contiguous result.
  const ConvolutionCase* found = nullptr;
  for (const ConvolutionCase& c : testing::convolution_cases()) {
    if (c.name == "conv2d_groups.f32") found = &c;
  }
  ASSERT_NE(found, nullptr);
  const ConvolutionCase& c = *found;
  const std::vector<Tensor> operands = testing::make_operands(c);
  const Tensor expected = run1(testing::program_text(c), operands);
  // x [1, 4, 6, 6] stored as [1, 6, 6, 4] (channels last).
  const Tensor& x = operands[0];
  Tensor x_nhwc = Tensor::empty(DType::Float32, {1, 6, 6, 4});
  for (int64_t ch = 0; ch < 4; ++ch) {
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 6; ++j) x_nhwc.set({0, i, j, ch}, x.get({0, ch, i, j}));
    }
  }
  const Tensor x_cl = x_nhwc.as_strided({1, 4, 6, 6}, {144, 1, 24, 4}, 0);
  // w [6, 2, 3, 2] given as its transpose [6, 2, 2, 3] and transposed back in the graph.
  const Tensor& w = operands[1];
  Tensor w_t = Tensor::empty(DType::Float32, {6, 2, 2, 3});
  for (int64_t p = 0; p < w.numel(); ++p) {
    const std::vector<int64_t> i = unravel_index(p, w.sizes());
    w_t.set({i[0], i[1], i[3], i[2]}, w.get(i));
  }
  const Tensor r =
      run1(R"(def f(x: f32[1, 4, 6, 6] strides=[144, 1, 24, 4], wt: f32[6, 2, 2, 3], b: f32[6]):
    w = transpose(wt, 2, 3)
    r = convolution(x, w, b, [1, 1], [0, 1], [1, 1], False, [0, 0], 2)
    return r
)",
           {x_cl, w_t, operands[2]});
  EXPECT_EQ(values(r), values(expected));
}

TEST(EagerConvolution, PaddingContributesNoProduct) {
  // An inf weight tap that only meets padding leaves the output finite (oneDNN's rule; the
  // slow path's 0 * inf would give NaN), here for float64 as for every dtype.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const Tensor x = make(DType::Float64, {1, 1, 3}, {1, 1, 1});
  const Tensor w = make(DType::Float64, {1, 1, 3}, {kInf, 1, 1});
  EXPECT_EQ(values(eval("x: f64[1, 1, 3], w: f64[1, 1, 3]",
                        "convolution(x, w, None, [1], [1], [1], False, [0], 1)", {x, w})),
            (std::vector<double>{2, kInf, kInf}));
}

TEST(EagerConvolution, BuilderGraphRuns) {
  // The builder's convolution with a bias and without: the same node as the text format's.
  Graph g("conv");
  const Val x = ops::input(g, "x", DType::Float32, {1, 1, 4});
  const Val w = ops::input(g, "w", DType::Float32, {1, 1, 2});
  const Val b = ops::input(g, "b", DType::Float32, {1});
  const Val with_bias = ops::convolution(x, w, b, {2}, {1}, {1}, false, {0}, 1);
  const Val without = ops::convolution(x, w, std::nullopt, {2}, {1}, {1}, true, {1}, 1);
  ops::output(g, {with_bias, without});
  const std::vector<Tensor> r =
      run(g, {make(DType::Float32, {1, 1, 4}, {1, 2, 3, 4}),
              make(DType::Float32, {1, 1, 2}, {1, 10}), make(DType::Float32, {1}, {100})});
  EXPECT_EQ(values(r.at(0)), (std::vector<double>{110, 132, 104}));
  EXPECT_EQ(values(r.at(1)), (std::vector<double>{10, 2, 20, 3, 30, 4, 40}));
}

}  // namespace
}  // namespace stax::eager
