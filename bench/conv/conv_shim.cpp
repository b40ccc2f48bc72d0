// C entry points to stax::external::ConvolutionPlan for bench/conv/conv_shapes.py (a tool, not
// part of Stax): builds a plan once for a 2-D convolution (or one of its gradients) with given
// formats, times runs.
// Layouts are 8 int64 each: sizes then strides of a 4-D tensor. Returns null / 1 after
// printing the error.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "external/convolution.h"

namespace {

using stax::external::ConvolutionPlan;
using stax::external::TensorLayout;

TensorLayout layout(const int64_t* x, int rank) {
  return TensorLayout{std::vector<int64_t>(x, x + rank),
                      std::vector<int64_t>(x + rank, x + 2 * rank)};
}

}  // namespace

// `formats`: ConvolutionPlan::Formats as a number; `pass`: ConvolutionPass as a number (the
// layouts are the forward convolution's). `params`: stride, padding, dilation (2 each),
// groups. Writes the plan's implementation() into `implementation` (a C string).
extern "C" void* stax_conv_create(int bf16, int formats, const int64_t* input,
                                  const int64_t* weight, const int64_t* bias, const int64_t* output,
                                  const int64_t* params, int threads, char* implementation,
                                  int implementation_size, int pass) {
  try {
    stax::external::ConvolutionSpec spec;
    spec.dtype = bf16 ? stax::DType::BFloat16 : stax::DType::Float32;
    spec.input = layout(input, 4);
    spec.weight = layout(weight, 4);
    if (bias != nullptr) spec.bias = layout(bias, 1);
    spec.output = layout(output, 4);
    spec.stride = {params[0], params[1]};
    spec.padding = {params[2], params[3]};
    spec.dilation = {params[4], params[5]};
    spec.groups = params[6];
    spec.pass = static_cast<stax::external::ConvolutionPass>(pass);
    auto plan =
        ConvolutionPlan::create(spec, threads, static_cast<ConvolutionPlan::Formats>(formats));
    std::snprintf(implementation, implementation_size, "%s", plan->implementation().c_str());
    return plan.release();
  } catch (const std::exception& e) {
    std::snprintf(implementation, implementation_size, "%s", e.what());
    return nullptr;
  }
}

// Times `reps` runs after `warmup` untimed ones, each run's nanoseconds into `ns`; the
// buffers in ConvolutionPlan::run's order for the plan's pass.
extern "C" int stax_conv_time(void* plan, const void* input, const void* weight, const void* bias,
                              void* output, int threads, int warmup, int reps, double* ns) {
  try {
    const auto& p = *static_cast<ConvolutionPlan*>(plan);
    for (int i = 0; i < warmup; ++i) p.run(input, weight, bias, output, threads);
    for (int i = 0; i < reps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      p.run(input, weight, bias, output, threads);
      ns[i] = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                  .count();
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

extern "C" void stax_conv_destroy(void* plan) {
  delete static_cast<ConvolutionPlan*>(plan);
}
