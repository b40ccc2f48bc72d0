// C entry points to stax::external::MatmulPlan for the GEMM measurement scripts (tools, not
// part of Stax): plan_vs_eager.py runs a plan once, bench/models/gemm_efficiency.py times it.
// Layouts are 6 int64 each: sizes {batch, rows, cols} then strides. Returns 0, or 1 after printing
// the error.
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "external/matmul.h"

namespace {

stax::external::MatrixLayout layout(const int64_t* x) {
  return stax::external::MatrixLayout{{x[0], x[1], x[2]}, {x[3], x[4], x[5]}};
}

stax::external::MatmulSpec spec_of(int bf16, const int64_t* a, const int64_t* b, const int64_t* c,
                                   const int64_t* bias, double alpha, double beta) {
  stax::external::MatmulSpec spec;
  spec.dtype = bf16 ? stax::DType::BFloat16 : stax::DType::Float32;
  spec.a = layout(a);
  spec.b = layout(b);
  spec.c = layout(c);
  if (bias != nullptr) spec.bias = layout(bias);
  spec.alpha = alpha;
  spec.beta = beta;
  return spec;
}

// `warmup` untimed runs of a plan, then `reps` timed ones, each run's nanoseconds into `ns`.
void time_runs(const stax::external::MatmulPlan& plan, const void* a, const void* b,
               const void* bias, void* c, int threads, int warmup, int reps, double* ns) {
  for (int i = 0; i < warmup; ++i) plan.run(a, b, bias, c, threads);
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    plan.run(a, b, bias, c, threads);
    ns[i] =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  }
}

}  // namespace

extern "C" int stax_plan_run(int bf16, const int64_t* a, const int64_t* b, const int64_t* c,
                             const int64_t* bias, double alpha, double beta, const void* a_data,
                             const void* b_data, const void* bias_data, void* c_data, int threads) {
  try {
    stax::external::MatmulPlan::create(spec_of(bf16, a, b, c, bias, alpha, beta), threads)
        ->run(a_data, b_data, bias_data, c_data, threads);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

// For bench/models/gemm_efficiency.py: builds the plan once, as a compiled graph does when it
// is loaded, then times `reps` runs after `warmup` untimed ones, each run's nanoseconds into
// `ns`.
// The same with the way B is handed to the library forced (`weights`: MatmulWeights's value,
// 0 measured, 1 in place, 2 packed; bench/gemm/weights_form.py); `implementation` (if not
// null) gets the plan's note, up to `capacity` bytes.
extern "C" int stax_plan_time_weights(int bf16, const int64_t* a, const int64_t* b,
                                      const int64_t* c, const void* a_data, const void* b_data,
                                      void* c_data, int threads, int weights, int warmup, int reps,
                                      double* ns, char* implementation, int capacity) {
  try {
    const auto plan =
        stax::external::MatmulPlan::create(spec_of(bf16, a, b, c, nullptr, 1.0, 0.0), threads,
                                           static_cast<stax::external::MatmulWeights>(weights));
    if (implementation != nullptr && capacity > 0) {
      std::snprintf(implementation, static_cast<size_t>(capacity), "%s",
                    plan->implementation().c_str());
    }
    time_runs(*plan, a_data, b_data, nullptr, c_data, threads, warmup, reps, ns);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

extern "C" int stax_plan_time(int bf16, const int64_t* a, const int64_t* b, const int64_t* c,
                              const int64_t* bias, double alpha, double beta, const void* a_data,
                              const void* b_data, const void* bias_data, void* c_data, int threads,
                              int warmup, int reps, double* ns) {
  try {
    const auto plan =
        stax::external::MatmulPlan::create(spec_of(bf16, a, b, c, bias, alpha, beta), threads);
    time_runs(*plan, a_data, b_data, bias_data, c_data, threads, warmup, reps, ns);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

// The same with post-ops (bench/gemm/post_ops_vs_eager.py): `n_post` post-ops given by kind
// (PostOp::Kind's value), alpha, beta, operand_first, and for the binary ones (in order) a
// layout of 6 int64 and a float32 pointer. Returns 0, 1 after printing an error, or 2 after
// printing supported()'s refusal.
extern "C" int stax_plan_run_post(const int64_t* a, const int64_t* b, const int64_t* c,
                                  const int64_t* bias, double alpha, double beta,
                                  const void* a_data, const void* b_data, const void* bias_data,
                                  void* c_data, int threads, int n_post, const int* kinds,
                                  const double* alphas, const double* betas,
                                  const int* operand_first, const int64_t* operand_layouts,
                                  const void* const* operand_data) {
  using stax::external::PostOp;
  stax::external::MatmulSpec spec = spec_of(0, a, b, c, bias, alpha, beta);
  int binaries = 0;
  for (int i = 0; i < n_post; ++i) {
    PostOp op;
    op.kind = static_cast<PostOp::Kind>(kinds[i]);
    op.alpha = alphas[i];
    op.beta = betas[i];
    op.operand_first = operand_first[i] != 0;
    if (op.is_binary()) op.operand = layout(operand_layouts + 6 * binaries++);
    spec.post_ops.push_back(op);
  }
  std::string why;
  if (!stax::external::MatmulPlan::supported(spec, &why)) {
    std::fprintf(stderr, "refused: %s\n", why.c_str());
    return 2;
  }
  try {
    stax::external::MatmulPlan::create(spec, threads)
        ->run(a_data, b_data, bias_data, c_data, threads, {operand_data, size_t(binaries)});
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
