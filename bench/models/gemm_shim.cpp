// C entry point for bench/models/gemm_efficiency.py (a measurement tool, not part of Stax):
// builds one stax::external::MatmulPlan for a spec, as a compiled graph does when it is loaded,
// then times `reps` runs of it after `warmup` untimed ones and writes each run's nanoseconds
// to `ns`. Layouts are 6 int64 each: sizes {batch, rows, cols} then strides. Returns 0, or 1
// after printing the error.
#include <chrono>
#include <cstdio>
#include <exception>

#include "external/matmul.h"

extern "C" int stax_plan_time(int bf16, const int64_t* a, const int64_t* b, const int64_t* c,
                              const int64_t* bias, double alpha, double beta, const void* a_data,
                              const void* b_data, const void* bias_data, void* c_data, int threads,
                              int warmup, int reps, double* ns) {
  using stax::external::MatrixLayout;
  auto layout = [](const int64_t* x) {
    return MatrixLayout{{x[0], x[1], x[2]}, {x[3], x[4], x[5]}};
  };
  stax::external::MatmulSpec spec;
  spec.dtype = bf16 ? stax::DType::BFloat16 : stax::DType::Float32;
  spec.a = layout(a);
  spec.b = layout(b);
  spec.c = layout(c);
  if (bias != nullptr) spec.bias = layout(bias);
  spec.alpha = alpha;
  spec.beta = beta;
  try {
    const auto plan = stax::external::MatmulPlan::create(spec, threads);
    for (int i = 0; i < warmup; ++i) plan->run(a_data, b_data, bias_data, c_data, threads);
    for (int i = 0; i < reps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      plan->run(a_data, b_data, bias_data, c_data, threads);
      ns[i] = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                  .count();
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
