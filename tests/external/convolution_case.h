// The convolution tests' shared pieces (test_convolution.cpp, test_convolution_formats.cpp):
// operands with their layouts, a direct-sum reference accumulating in double, specs by
// geometry, and check(), which runs a plan on 1 and 2 threads against the reference.
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "external/convolution.h"
#include "external/host_loops.h"

namespace stax::external::convolution_testing {

using detail::bf16_to_float;
using detail::float_to_bf16;
using Formats = ConvolutionPlan::Formats;

// One operand's storage: enough elements for its layout's largest offset.
struct Tensor {
  DType dtype;
  TensorLayout layout;
  std::vector<float> f32;
  std::vector<uint16_t> bf16;

  Tensor(DType dt, TensorLayout l) : dtype(dt), layout(std::move(l)) {
    int64_t extent = 1;
    for (size_t d = 0; d < layout.sizes.size(); ++d) {
      if (layout.sizes[d] == 0) extent = 0;
      if (extent > 0) extent += (layout.sizes[d] - 1) * layout.strides[d];
    }
    const size_t n = static_cast<size_t>(std::max<int64_t>(extent, 1));
    if (dt == DType::Float32) f32.assign(n, 0.0f);
    if (dt == DType::BFloat16) bf16.assign(n, 0);
  }
  size_t elements() const { return dtype == DType::Float32 ? f32.size() : bf16.size(); }
  void* data() { return dtype == DType::Float32 ? static_cast<void*>(f32.data()) : bf16.data(); }
  float at_offset(int64_t o) const {
    return dtype == DType::Float32 ? f32[o] : bf16_to_float(bf16[o]);
  }
  void set_offset(int64_t o, float v) {
    if (dtype == DType::Float32) {
      f32[o] = v;
    } else {
      bf16[o] = float_to_bf16(v);
    }
  }
  // Every stored element (gaps between strided elements included): normal random values, or
  // when `exact`, multiples of 1/8 in [-1, 1), whose products and sums of a few hundred terms
  // are exact in float32.
  void fill(std::mt19937& rng, bool exact = false) {
    std::normal_distribution<float> normal;
    std::uniform_int_distribution<int> eighths(-8, 7);
    for (size_t o = 0; o < elements(); ++o) {
      set_offset(static_cast<int64_t>(o), exact ? eighths(rng) / 8.0f : normal(rng));
    }
  }
  void fill_all(float v) {
    for (size_t o = 0; o < elements(); ++o) set_offset(static_cast<int64_t>(o), v);
  }
  bool operator==(const Tensor& other) const { return f32 == other.f32 && bf16 == other.bf16; }
};

// The three tensors of a convolution's geometry; which are read and which is written depends
// on the pass: forward reads input and weight and writes output, backward-data reads output
// (grad_output) and weight and writes input (grad_input), backward-weights reads output and
// input and writes weight (grad_weight).
struct Case {
  ConvolutionSpec spec;
  Tensor input, weight, output;
  std::optional<Tensor> bias;

  explicit Case(const ConvolutionSpec& s)
      : spec(s), input(s.dtype, s.input), weight(s.dtype, s.weight), output(s.dtype, s.output) {
    if (s.bias) bias.emplace(s.dtype, *s.bias);
  }
  Tensor& result() {
    return spec.pass == ConvolutionPass::Forward        ? output
           : spec.pass == ConvolutionPass::BackwardData ? input
                                                        : weight;
  }
  const Tensor& result() const { return const_cast<Case*>(this)->result(); }
  // Random read operands; the result NaN, so that every element must be written.
  void fill(uint32_t seed, bool exact = false) {
    std::mt19937 rng(seed);
    for (Tensor* t : {&input, &weight, &output}) {
      if (t != &result()) t->fill(rng, exact);
    }
    if (bias) bias->fill(rng, exact);
    result().fill_all(std::numeric_limits<float>::quiet_NaN());
  }
  // run()'s operands by pass (ConvolutionPlan::run).
  void run(const ConvolutionPlan& plan, int threads) {
    switch (spec.pass) {
      case ConvolutionPass::Forward:
        plan.run(input.data(), weight.data(), bias ? bias->data() : nullptr, output.data(),
                 threads);
        break;
      case ConvolutionPass::BackwardData:
        plan.run(output.data(), weight.data(), nullptr, input.data(), threads);
        break;
      case ConvolutionPass::BackwardWeights:
        plan.run(output.data(), input.data(), nullptr, weight.data(), threads);
        break;
    }
  }

  // Compares every result element with the pass's sums in double, within the bound the dtype
  // and the element's number of terms K allow: float32 accumulation (K + 2 roundings of the
  // magnitudes summed), plus for bfloat16 one rounding of the result (unit roundoff 2^-8).
  // One loop nest over the forward convolution's terms (n, o, c, output position, kernel
  // position) serves all passes: each term input * weight contributes to output (forward),
  // grad_output * weight to grad_input, grad_output * input to grad_weight. Spatial
  // dimensions are padded to three (size 1) so that it serves 1-D to 3-D. A reference holds
  // the result's elements by offset: the sum, the sum of magnitudes, the number of terms.
  struct Reference {
    std::vector<double> sum, magnitude;
    std::vector<int64_t> terms;
  };
  // Spatial sizes (or stride, padding, dilation) padded to three dimensions with `fill`.
  std::array<int64_t, 3> spatial3(const std::vector<int64_t>& v, int64_t fill) const {
    const int d = spec.spatial_dims();
    std::array<int64_t, 3> r{fill, fill, fill};
    for (int i = 0; i < d; ++i) r[3 - d + i] = v[i];
    return r;
  }
  // Strides over (n or o, c, z, y, x); a missing spatial dimension has size 1, stride 0.
  std::array<int64_t, 5> strides5(const TensorLayout& l) const {
    const int d = spec.spatial_dims();
    std::array<int64_t, 5> r{l.strides[0], l.strides[1], 0, 0, 0};
    for (int i = 0; i < d; ++i) r[5 - d + i] = l.strides[2 + i];
    return r;
  }
  Reference reference() const {
    const auto in = spatial3({spec.input.sizes.begin() + 2, spec.input.sizes.end()}, 1);
    const auto out = spatial3({spec.output.sizes.begin() + 2, spec.output.sizes.end()}, 1);
    const auto ker = spatial3({spec.weight.sizes.begin() + 2, spec.weight.sizes.end()}, 1);
    const auto stride = spatial3(spec.stride, 1), pad = spatial3(spec.padding, 0);
    const auto dil = spatial3(spec.dilation, 1);
    const int64_t batch = spec.output.sizes[0], c_out = spec.output.sizes[1];
    const int64_t c_per_group = spec.weight.sizes[1], o_per_group = c_out / spec.groups;
    const auto si = strides5(spec.input), sw = strides5(spec.weight), so = strides5(spec.output);
    const size_t n_offsets = result().elements();
    Reference ref{std::vector<double>(n_offsets, 0.0), std::vector<double>(n_offsets, 0.0),
                  std::vector<int64_t>(n_offsets, 0)};
    auto add = [&](int64_t offset, double term) {
      ref.sum[offset] += term;
      ref.magnitude[offset] += std::fabs(term);
      ++ref.terms[offset];
    };
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t o = 0; o < c_out; ++o) {
        const int64_t c0 = o / o_per_group * c_per_group;
        for (int64_t oz = 0; oz < out[0]; ++oz) {
          for (int64_t oy = 0; oy < out[1]; ++oy) {
            for (int64_t ox = 0; ox < out[2]; ++ox) {
              const int64_t out_offset =
                  n * so[0] + o * so[1] + oz * so[2] + oy * so[3] + ox * so[4];
              for (int64_t c = 0; c < c_per_group; ++c) {
                for (int64_t kz = 0; kz < ker[0]; ++kz) {
                  const int64_t iz = oz * stride[0] - pad[0] + kz * dil[0];
                  if (iz < 0 || iz >= in[0]) continue;
                  for (int64_t ky = 0; ky < ker[1]; ++ky) {
                    const int64_t iy = oy * stride[1] - pad[1] + ky * dil[1];
                    if (iy < 0 || iy >= in[1]) continue;
                    for (int64_t kx = 0; kx < ker[2]; ++kx) {
                      const int64_t ix = ox * stride[2] - pad[2] + kx * dil[2];
                      if (ix < 0 || ix >= in[2]) continue;
                      const int64_t in_offset =
                          n * si[0] + (c0 + c) * si[1] + iz * si[2] + iy * si[3] + ix * si[4];
                      const int64_t w_offset =
                          o * sw[0] + c * sw[1] + kz * sw[2] + ky * sw[3] + kx * sw[4];
                      switch (spec.pass) {
                        case ConvolutionPass::Forward:
                          add(out_offset, static_cast<double>(input.at_offset(in_offset)) *
                                              weight.at_offset(w_offset));
                          break;
                        case ConvolutionPass::BackwardData:
                          add(in_offset, static_cast<double>(output.at_offset(out_offset)) *
                                             weight.at_offset(w_offset));
                          break;
                        case ConvolutionPass::BackwardWeights:
                          add(w_offset, static_cast<double>(output.at_offset(out_offset)) *
                                            input.at_offset(in_offset));
                          break;
                      }
                    }
                  }
                }
              }
              if (bias) add(out_offset, bias->at_offset(o * bias->layout.strides[0]));
            }
          }
        }
      }
    }
    return ref;
  }
  void expect_matches_reference(const std::string& what) const {
    expect_matches(reference(), what);
  }
  // Compares the result with `ref`, the reference of operands equal to this case's.
  void expect_matches(const Reference& ref, const std::string& what) const {
    const double eps32 = std::ldexp(1.0, -24);
    const Tensor& r = result();
    const auto sr = strides5(r.layout);
    const auto& [sum, magnitude, terms] = ref;
    // Every element of the result by its logical index (n or o, c, z, y, x).
    const auto rs = r.layout.sizes;
    const auto extent = spatial3({rs.begin() + 2, rs.end()}, 1);
    int failures = 0;
    for (int64_t i0 = 0; i0 < rs[0]; ++i0) {
      for (int64_t i1 = 0; i1 < rs[1]; ++i1) {
        for (int64_t z = 0; z < extent[0]; ++z) {
          for (int64_t y = 0; y < extent[1]; ++y) {
            for (int64_t x = 0; x < extent[2]; ++x) {
              const int64_t offset = i0 * sr[0] + i1 * sr[1] + z * sr[2] + y * sr[3] + x * sr[4];
              double bound =
                  2.0 * static_cast<double>(terms[offset] + 2) * eps32 * magnitude[offset] + 1e-30;
              if (spec.dtype == DType::BFloat16)
                bound += std::ldexp(1.0, -8) * std::fabs(sum[offset]);
              const double got = r.at_offset(offset);
              if (!(std::fabs(got - sum[offset]) <= bound) && ++failures <= 3) {
                ADD_FAILURE() << what << " " << spec.describe() << " at [" << i0 << "," << i1 << ","
                              << z << "," << y << "," << x << "]: got " << got << ", want "
                              << sum[offset] << " +- " << bound;
              }
            }
          }
        }
      }
    }
    EXPECT_EQ(failures, 0) << what;
  }
};

// A convolution with the output sizes it gives; activations contiguous (NCHW) unless
// `channels_last`, the output in the input's layout as eager gives it.
inline ConvolutionSpec make_spec(DType dt, std::vector<int64_t> input, std::vector<int64_t> weight,
                                 std::vector<int64_t> stride, std::vector<int64_t> padding,
                                 std::vector<int64_t> dilation, int64_t groups, bool with_bias,
                                 bool channels_last = false) {
  ConvolutionSpec s;
  s.dtype = dt;
  s.stride = std::move(stride);
  s.padding = std::move(padding);
  s.dilation = std::move(dilation);
  s.groups = groups;
  std::vector<int64_t> output{input[0], input[1] == 0 ? 0 : weight[0]};
  for (size_t i = 0; i < s.stride.size(); ++i) {
    const int64_t span = s.dilation[i] * (weight[2 + i] - 1) + 1;
    output.push_back((input[2 + i] + 2 * s.padding[i] - span) / s.stride[i] + 1);
  }
  s.input = channels_last ? TensorLayout::channels_last(input) : TensorLayout::contiguous(input);
  s.output = channels_last ? TensorLayout::channels_last(output) : TensorLayout::contiguous(output);
  s.weight = TensorLayout::contiguous(weight);
  if (with_bias) s.bias = TensorLayout::contiguous({weight[0]});
  return s;
}

inline constexpr DType kDtypes[] = {DType::Float32, DType::BFloat16};

// The blocked format Formats::Blocked asks for on this CPU, as implementation() names it:
// "nChw16c" where oneDNN's blocked kernels block by 16 channels (AVX-512), "nChw8c" where by 8
// (AVX2). What Stax detects (ConvolutionPlan::blocked_channels), not what the test expects of
// the CPU.
inline std::string blocked_format() {
  return "nChw" + std::to_string(ConvolutionPlan::blocked_channels()) + "c";
}

inline constexpr ConvolutionPass kPasses[] = {
    ConvolutionPass::Forward, ConvolutionPass::BackwardData, ConvolutionPass::BackwardWeights};

// The spec for one pass: a backward pass has no bias (Stax sums grad_bias itself).
inline ConvolutionSpec for_pass(ConvolutionSpec spec, ConvolutionPass pass) {
  spec.pass = pass;
  if (pass != ConvolutionPass::Forward) spec.bias.reset();
  return spec;
}

inline void check(const ConvolutionSpec& spec, const std::string& what,
                  Formats formats = Formats::Automatic, uint32_t seed = 1,
                  std::vector<int> threads = {1, 2}) {
  std::string why;
  if (formats == Formats::Automatic) {
    ASSERT_TRUE(ConvolutionPlan::supported(spec, &why))
        << what << " " << spec.describe() << ": " << why;
  }
  auto plan = ConvolutionPlan::create(spec, threads.front(), formats);
  // Natively, or through float32 where Stax detects no kernel for the dtype (bfloat16 on an
  // AVX2-only CPU); the reference is the same either way.
  const bool empty = plan->implementation().rfind("no library call", 0) == 0;
  const Arithmetic expected =
      empty ? Arithmetic::Native : *ConvolutionPlan::arithmetic(spec.dtype, spec.pass);
  EXPECT_EQ(plan->arithmetic(), expected) << what << " " << plan->implementation();
  EXPECT_EQ(plan->implementation().find("bf16 through float32") != std::string::npos,
            expected == Arithmetic::ThroughFloat32)
      << what << " " << plan->implementation();
  // The operands depend on the seed only: one reference serves every thread count.
  std::optional<Case::Reference> reference;
  for (int t : threads) {
    Case c(spec);
    c.fill(seed);
    if (!reference) reference = c.reference();
    c.run(*plan, t);
    c.expect_matches(*reference,
                     what + " (" + std::to_string(t) + " threads, " + plan->implementation() + ")");
  }
}

// The convolution and both of its gradients.
inline void check_passes(const ConvolutionSpec& spec, const std::string& what,
                         Formats formats = Formats::Automatic, uint32_t seed = 1,
                         std::vector<int> threads = {1, 2}) {
  for (ConvolutionPass pass : kPasses) check(for_pass(spec, pass), what, formats, seed, threads);
}

}  // namespace stax::external::convolution_testing
