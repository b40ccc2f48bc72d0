// The eager interpreter against PyTorch: every pointwise op of issue 6 over every dtype class,
// on edge values (signed zeros, +-inf, NaN, the integer extremes, out-of-range casts, Python
// scalars and 0-dim tensors of other dtypes). The expected dtypes and values in
// pointwise_torch_cases.inc come from torch 2.13.0's CPU eager results
// (tests/eager/gen/gen_pointwise_cases.py). Results are compared bit for bit (a NaN matches a
// NaN, -0.0 does not match +0.0), except for ops built on libm transcendental functions, where
// PyTorch's vectorized SLEEF kernels and the C library may differ by an ulp of float (one ulp
// of a 16-bit result once rounded), and where PyTorch's own approximations (its polynomial erf
// in gelu, SLEEF's f64 sqrt and erfinv) are off by more: those are compared within 16 ulps of
// f32/f64 or 1 ulp of f16/bf16, relative to max(|expected|, 1) (gelu(-3) cancels 1 + erf, so
// torch's absolute erf error of ~1e-7 shows up unscaled).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "eager/ops.h"
#include "eager_test_util.h"
#include "ir/graph.h"
#include "pointwise_torch_cases.h"

namespace stax::eager {
namespace {

using testing::InputCase;
using testing::make_input;
using testing::Num;
using testing::torch_cases;
using testing::TorchCase;

double ulp_of(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 0x1p-52;
    case DType::Float16:
      return 0x1p-10;
    case DType::BFloat16:
      return 0x1p-7;
    default:
      return 0x1p-23;
  }
}

std::string describe(const TorchCase& c) {
  return c.call + " over (" + c.signature + ")";
}

TEST(PointwiseTorch, EveryOpMatchesPyTorch) {
  ASSERT_GT(torch_cases().size(), 1000u);
  for (const TorchCase& c : torch_cases()) {
    const std::string text = "def g(" + c.signature + "):\n    r = " + c.call + "\n    return r\n";
    std::vector<Tensor> inputs;
    for (const InputCase& in : c.inputs) inputs.push_back(make_input(in));
    Tensor r;
    try {
      r = testing::run1(text, inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << describe(c) << ": " << e.what();
      continue;
    }
    ASSERT_EQ(r.dtype(), c.result) << describe(c) << ": got " << dtype_name(r.dtype());
    ASSERT_EQ(r.numel(), static_cast<int64_t>(c.expected.size())) << describe(c);
    for (size_t k = 0; k < c.expected.size(); ++k) {
      const std::vector<int64_t> index =
          r.dim() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(k)};
      const Num& e = c.expected[k];
      if (!is_floating(r.dtype())) {
        EXPECT_EQ(detail::load_int(r, index), e.i) << describe(c) << " at " << k;
        continue;
      }
      const double got = r.get(index);
      if (std::isnan(e.f)) {
        EXPECT_TRUE(std::isnan(got)) << describe(c) << " at " << k << ": " << got;
      } else if (c.exact || std::isinf(e.f)) {
        EXPECT_TRUE(got == e.f && std::signbit(got) == std::signbit(e.f))
            << describe(c) << " at " << k << ": got " << got << ", torch " << e.f;
      } else {
        const double ulps = r.dtype() == DType::Float16 || r.dtype() == DType::BFloat16 ? 1 : 16;
        const double tolerance = ulps * ulp_of(r.dtype()) * std::max(std::abs(e.f), 1.0);
        EXPECT_NEAR(got, e.f, tolerance) << describe(c) << " at " << k;
      }
    }
  }
}

}  // namespace
}  // namespace stax::eager
