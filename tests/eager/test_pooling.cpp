// The eager interpreter on pooling: every case of pooling_torch_cases.inc (PyTorch 2.13.0's
// CPU results for max_pool2d_with_indices, avg_pool2d and _adaptive_avg_pool2d over every
// dtype torch takes, with NaNs, infinities, ties, padding, dilation, ceil_mode,
// count_include_pad and divisor_override), compared exactly: the oracle computes what torch
// computes bit for bit. And the rules checked by hand: which index a NaN or a tie gives,
// windows of nothing but -inf, the divisors of clipped windows, a channels-last input.
// The backward ops likewise against torch's gradients (pooling_torch_cases.inc's backward
// cases: overlapping windows summed in torch's order, 16-bit sums rounded per addition), and
// by hand: the order and roundings of a bfloat16 sum, indices of -1 and out of the window,
// indices outside the plane refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "eager_test_util.h"
#include "pooling_torch_cases.h"

namespace stax::eager {
namespace {

using testing::make;
using testing::PoolingCase;
using testing::run_text;
using testing::values;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::nan("");

// Equal, NaN equal to NaN.
bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

TEST(EagerPooling, TorchCases) {
  const std::vector<PoolingCase>& cases = testing::pooling_cases();
  ASSERT_GE(cases.size(), 60u);
  for (const PoolingCase& c : cases) {
    const std::string program = testing::program_text(c);
    SCOPED_TRACE(c.name + ":\n" + program);
    const std::vector<Tensor> r = run_text(program, {testing::make_input(c)});
    const Tensor& out = r.at(0);
    ASSERT_EQ(out.dtype(), c.dtype);
    ASSERT_EQ(out.sizes(), c.result_sizes);
    if (is_floating(c.dtype)) {
      ASSERT_EQ(static_cast<int64_t>(c.expected_floats.size()), out.numel());
      for (int64_t p = 0; p < out.numel(); ++p) {
        const double want = c.expected_floats[static_cast<size_t>(p)];
        EXPECT_TRUE(same(out.get_flat(p), want))
            << "at " << p << ": " << out.get_flat(p) << ", torch " << want;
      }
    } else {
      ASSERT_EQ(static_cast<int64_t>(c.expected_ints.size()), out.numel());
      for (int64_t p = 0; p < out.numel(); ++p) {
        EXPECT_EQ(detail::load_int(out, unravel_index(p, out.sizes())),
                  c.expected_ints[static_cast<size_t>(p)])
            << "at " << p;
      }
    }
    if (c.op == "max_pool2d_with_indices") {
      EXPECT_EQ(testing::int64_values(r.at(1)), c.expected_indices);
    }
  }
}

// `v, i = max_pool2d_with_indices(x, ARGS)` over x of `type`.
std::pair<std::vector<double>, std::vector<int64_t>> max_pool(const std::string& type,
                                                              const std::string& args,
                                                              const Tensor& x) {
  const std::vector<Tensor> r =
      run_text("def f(x: " + type + "):\n    v, i = max_pool2d_with_indices(x, " + args +
                   ")\n    return v, i\n",
               {x});
  return {values(r.at(0)), testing::int64_values(r.at(1))};
}

std::vector<double> call(const std::string& type, const std::string& expr, const Tensor& x) {
  return values(
      testing::run1("def f(x: " + type + "):\n    r = " + expr + "\n    return r\n", {x}));
}

TEST(EagerPooling, MaxPoolNanAndTieRules) {
  // One 3x3 window. Two NaNs: the last (index 4) wins, as in torch's running maximum that
  // takes an element when it is greater or NaN; a NaN before an inf keeps its index.
  const std::string t = "f32[1, 1, 3, 3]";
  EXPECT_EQ(max_pool(t, "3", make(DType::Float32, {1, 1, 3, 3}, {1, kNan, 2, 3, kNan, 0, 0, 0, 0}))
                .second,
            (std::vector<int64_t>{4}));
  EXPECT_EQ(
      max_pool(t, "3", make(DType::Float32, {1, 1, 3, 3}, {kNan, kInf, kInf, 0, 0, 0, 0, 0, 0}))
          .second,
      (std::vector<int64_t>{0}));
  // Ties: the first maximum (index 1 of the three 5s).
  const auto tie =
      max_pool(t, "3", make(DType::Float32, {1, 1, 3, 3}, {1, 5, 2, 5, 5, 0, 0, 0, 5}));
  EXPECT_EQ(tie.first, (std::vector<double>{5}));
  EXPECT_EQ(tie.second, (std::vector<int64_t>{1}));
}

TEST(EagerPooling, WindowsOfOnlyTheLowestValue) {
  // Every element -inf, padded 3x3 windows: each index is the window's first position inside
  // the input (torch: [[0, 0, 1], [0, 0, 1], [3, 3, 4]]).
  const std::vector<double> all_ninf(9, -kInf);
  EXPECT_EQ(max_pool("f32[1, 1, 3, 3]", "3, 1, 1", make(DType::Float32, {1, 1, 3, 3}, all_ninf)),
            std::make_pair(std::vector<double>(9, -kInf),
                           std::vector<int64_t>{0, 0, 1, 0, 0, 1, 3, 3, 4}));
  // Dilated: the first position moves up by whole dilations (torch: [[4, 3, 4], [1, 0, 1],
  // [4, 3, 4]]).
  EXPECT_EQ(max_pool("f32[1, 1, 3, 3]", "2, 1, 1, 2", make(DType::Float32, {1, 1, 3, 3}, all_ninf))
                .second,
            (std::vector<int64_t>{4, 3, 4, 1, 0, 1, 4, 3, 4}));
  // A dilated window with no input position at all (positions -1 and 2 of a 2-wide input):
  // -inf and the position past the padding, outside the plane (torch: 2 * 2 + 2 = 6).
  EXPECT_EQ(
      max_pool("f32[1, 1, 2, 2]", "2, 1, 1, 3", make(DType::Float32, {1, 1, 2, 2}, {0, 1, 2, 3})),
      std::make_pair(std::vector<double>{-kInf}, std::vector<int64_t>{6}));
  // Integers start from the dtype's lowest value.
  EXPECT_EQ(max_pool("i8[1, 1, 2, 2]", "2, 1, 1",
                     make(DType::Int8, {1, 1, 2, 2}, {-128, -128, -128, -128}))
                .second,
            (std::vector<int64_t>{0, 0, 1, 0, 0, 1, 2, 2, 3}));
}

TEST(EagerPooling, AvgPoolDivisors) {
  // x = 1..5 in a row of a 1x5 plane, kernel 1x2, stride 2, padding (0, 1), ceil_mode: the
  // windows are [pad, 1], [2, 3], [4, 5] (a fourth would start at 5, in the right padding,
  // and is dropped). count_include_pad divides by 2 everywhere (the padding counts), without
  // it the first window divides by 1.
  const Tensor x = make(DType::Float32, {1, 1, 5}, {1, 2, 3, 4, 5});
  const std::string t = "f32[1, 1, 5]";
  EXPECT_EQ(call(t, "avg_pool2d(x, [1, 2], [1, 2], [0, 1], True, True)", x),
            (std::vector<double>{0.5, 2.5, 4.5}));
  EXPECT_EQ(call(t, "avg_pool2d(x, [1, 2], [1, 2], [0, 1], True, False)", x),
            (std::vector<double>{1, 2.5, 4.5}));
  // Without padding, ceil_mode's last window [5, pad] hangs over the input's end: 5 / 1
  // either way (count_include_pad counts only the padding, of which there is none).
  EXPECT_EQ(call(t, "avg_pool2d(x, [1, 2], [1, 2], 0, True, True)", x),
            (std::vector<double>{1.5, 3.5, 5}));
  // A kernel of 3, stride 3, padding 1, ceil_mode: [pad, 1, 2], [3, 4, 5]; a third window
  // would start at 5, in the right padding, and is dropped.
  EXPECT_EQ(call(t, "avg_pool2d(x, [1, 3], [1, 3], [0, 1], True, True)", x),
            (std::vector<double>{1, 4}));
  // A ceil_mode window past the right padding: kernel 4, stride 3, padding 2 over 8 elements
  // gives windows from -2, 1, 4 and 7; the last, [7, 11), is clipped to the padded input
  // [-2, 10) for count_include_pad (divisor 3) and to the input for the sum (9 alone).
  const Tensor y = make(DType::Float32, {1, 1, 8}, {1, 2, 3, 4, 5, 6, 7, 9});
  EXPECT_EQ(call("f32[1, 1, 8]", "avg_pool2d(x, [1, 4], [1, 3], [0, 2], True, True)", y),
            (std::vector<double>{0.75, 3.5, 6.75, 3}));
  EXPECT_EQ(call("f32[1, 1, 8]", "avg_pool2d(x, [1, 4], [1, 3], [0, 2], True, False)", y),
            (std::vector<double>{1.5, 3.5, 6.75, 9}));
  // divisor_override replaces the count; i64 divides truncating toward zero, -1 wraps.
  EXPECT_EQ(call(t, "avg_pool2d(x, [1, 2], [1, 2], [0, 1], True, True, -4)", x),
            (std::vector<double>{-0.25, -1.25, -2.25}));
  const Tensor i = make(DType::Int64, {1, 1, 4}, {7, 6, -7, 0});
  EXPECT_EQ(call("i64[1, 1, 4]", "avg_pool2d(x, [1, 2], divisor_override=-3)", i),
            (std::vector<double>{-4, 2}));
  Tensor lowest = Tensor::empty(DType::Int64, {1, 1, 1});
  detail::store_int(lowest, {0, 0, 0}, std::numeric_limits<int64_t>::min());
  const Tensor r = testing::run1(
      "def f(x: i64[1, 1, 1]):\n    r = avg_pool2d(x, 1, divisor_override=-1)\n    return r\n",
      {lowest});
  EXPECT_EQ(testing::int64_values(r), (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
}

TEST(EagerPooling, AdaptiveWindows) {
  // 5 -> 3 along W: windows [0, 2), [1, 4), [3, 5).
  const Tensor x = make(DType::Float64, {1, 1, 5}, {1, 2, 3, 4, 6});
  EXPECT_EQ(call("f64[1, 1, 5]", "_adaptive_avg_pool2d(x, [1, 3])", x),
            (std::vector<double>{1.5, 3, 5}));
  // 2 -> 3: windows [0, 1), [0, 2), [1, 2).
  const Tensor y = make(DType::Float32, {1, 1, 2}, {1, 2});
  EXPECT_EQ(call("f32[1, 1, 2]", "_adaptive_avg_pool2d(x, [1, 3])", y),
            (std::vector<double>{1, 1.5, 2}));
}

TEST(EagerPooling, ChannelsLastInput) {
  // A strided (channels-last) input gives the contiguous input's results.
  for (const PoolingCase& c : testing::pooling_cases()) {
    if (c.input_sizes.size() != 4 || c.input_sizes[0] == 0) continue;
    const Tensor x = testing::make_input(c);
    const int64_t ch = c.input_sizes[1], h = c.input_sizes[2], w = c.input_sizes[3];
    const std::vector<int64_t> strides = {h * w * ch, 1, w * ch, ch};
    Tensor cl = Tensor::empty_strided(c.dtype, c.input_sizes, strides);
    for (int64_t p = 0; p < x.numel(); ++p) {
      const std::vector<int64_t> i = unravel_index(p, c.input_sizes);
      if (is_floating(c.dtype)) {
        cl.set(i, x.get(i));
      } else {
        detail::store_int(cl, i, detail::load_int(x, i));
      }
    }
    const std::string type = std::string(dtype_name(c.dtype)) + ir::format_sizes(c.input_sizes) +
                             " strides=" + ir::format_sizes(strides);
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> a = run_text(testing::program_text(c), {x});
    const std::vector<Tensor> b = run_text(testing::program_text(c, type), {cl});
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      const std::vector<double> va = values(a[k]), vb = values(b[k]);
      ASSERT_EQ(va.size(), vb.size());
      for (size_t e = 0; e < va.size(); ++e) EXPECT_TRUE(same(va[e], vb[e])) << e;
    }
  }
}

// Compares `out` with a case's expected floats or ints exactly (NaN equal to NaN).
void expect_case_values(const PoolingCase& c, const Tensor& out) {
  ASSERT_EQ(out.dtype(), c.dtype);
  ASSERT_EQ(out.sizes(), c.result_sizes);
  if (is_floating(c.dtype)) {
    ASSERT_EQ(static_cast<int64_t>(c.expected_floats.size()), out.numel());
    for (int64_t p = 0; p < out.numel(); ++p) {
      const double want = c.expected_floats[static_cast<size_t>(p)];
      EXPECT_TRUE(same(out.get_flat(p), want))
          << "at " << p << ": " << out.get_flat(p) << ", torch " << want;
    }
  } else {
    ASSERT_EQ(static_cast<int64_t>(c.expected_ints.size()), out.numel());
    for (int64_t p = 0; p < out.numel(); ++p) {
      EXPECT_EQ(detail::load_int(out, unravel_index(p, out.sizes())),
                c.expected_ints[static_cast<size_t>(p)])
          << "at " << p;
    }
  }
}

TEST(EagerPoolingBackward, TorchCases) {
  const std::vector<PoolingCase>& cases = testing::pooling_backward_cases();
  ASSERT_GE(cases.size(), 50u);
  for (const PoolingCase& c : cases) {
    const std::string program = testing::backward_program_text(c);
    SCOPED_TRACE(c.name + ":\n" + program);
    const std::vector<Tensor> r =
        run_text(program, {testing::make_input(c), testing::make_grad(c)});
    expect_case_values(c, r.at(0));
  }
}

std::vector<double> max_backward(const std::string& args, const Tensor& g, const Tensor& x,
                                 const Tensor& i) {
  const auto type = [](const Tensor& t) {
    return std::string(dtype_name(t.dtype())) + ir::format_sizes(t.sizes());
  };
  return values(testing::run1("def f(g: " + type(g) + ", x: " + type(x) + ", i: " + type(i) +
                                  "):\n    r = max_pool2d_with_indices_backward(g, x, " + args +
                                  ", i)\n    return r\n",
                              {g, x, i}));
}

TEST(EagerPoolingBackward, MaxScatterOrderAndRounding) {
  // Four outputs all pick position 0 of a 1x4 plane: bfloat16 sums in output order, rounded
  // after each addition. 256 + 1 rounds to 256 (ties to even), and again, then + 2 gives 258:
  // a float sum rounded once would be 260.
  const Tensor x = make(DType::BFloat16, {1, 1, 1, 4}, {0, 0, 0, 0});
  const Tensor g = make(DType::BFloat16, {1, 1, 1, 4}, {256, 1, 1, 2});
  const Tensor i = make(DType::Int64, {1, 1, 1, 4}, {0, 0, 0, 0});
  EXPECT_EQ(max_backward("[1, 1], [1, 1], [0, 0], [1, 1], False", g, x, i),
            (std::vector<double>{258, 0, 0, 0}));
  // -1 is skipped; an index outside the output's window but inside the plane takes the
  // gradient (as eager adds it).
  const Tensor j = make(DType::Int64, {1, 1, 1, 4}, {-1, 3, 3, 0});
  EXPECT_EQ(max_backward("[1, 1], [1, 1], [0, 0], [1, 1], False", g, x, j),
            (std::vector<double>{2, 0, 0, 2}));
  // Outside the plane eager writes out of bounds: refused.
  for (double bad : {4.0, -2.0}) {
    const Tensor k = make(DType::Int64, {1, 1, 1, 4}, {0, bad, 0, 0});
    try {
      max_backward("[1, 1], [1, 1], [0, 0], [1, 1], False", g, x, k);
      ADD_FAILURE() << "no error for index " << bad;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("max_pool2d_with_indices_backward: index " +
                                           std::to_string(static_cast<int64_t>(bad)) +
                                           " outside the input plane of 1x4"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(EagerPoolingBackward, AvgAndAdaptiveShares) {
  // avg: 1 / 3 rounded once to float32, added twice where two windows of 3 (stride 2) meet.
  const Tensor x = make(DType::Float32, {1, 1, 1, 5}, {0, 0, 0, 0, 0});
  const Tensor g = make(DType::Float32, {1, 1, 1, 2}, {1, 1});
  const float third = 1.0f / 3.0f;
  EXPECT_EQ(values(testing::run1("def f(g: f32[1, 1, 1, 2], x: f32[1, 1, 1, 5]):\n    r = "
                                 "avg_pool2d_backward(g, x, [1, 3], [1, 2], [0, 0], False, True, "
                                 "None)\n    return r\n",
                                 {g, x})),
            (std::vector<double>{third, third, third + third, third, third}));
  // adaptive 5 -> 2: windows [0, 3) and [2, 5); bfloat16 shares 1 / 1 / 3 rounded per
  // division; position 2 takes both.
  const Tensor xb = make(DType::BFloat16, {1, 1, 5}, {0, 0, 0, 0, 0});
  const Tensor gb = make(DType::BFloat16, {1, 1, 2}, {1, 2});
  const std::vector<double> r =
      values(testing::run1("def f(g: bf16[1, 1, 2], x: bf16[1, 1, 5]):\n    r = "
                           "_adaptive_avg_pool2d_backward(g, x)\n    return r\n",
                           {gb, xb}));
  using detail::round_to;
  const double a = round_to(DType::BFloat16, 1.0 / 3.0), b = round_to(DType::BFloat16, 2.0 / 3.0);
  EXPECT_EQ(r, (std::vector<double>{a, a, round_to(DType::BFloat16, a + b), b, b}));
}

}  // namespace
}  // namespace stax::eager
