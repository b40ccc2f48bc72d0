// How much a fused epilogue saves (issue 14, point 3): a linear layer (float32, bias row)
// followed by GELU or by a residual add, run as one oneDNN matmul with the op as a post-op,
// against the matmul then a separate oneDNN pass over its output (eltwise / binary
// primitive, in place). 2 threads; per shape the fastest of 30 interleaved runs of each (the
// minimum: the machine is shared, and interference only adds time).
// A measurement tool, not part of Stax (src/external/post_ops.cpp says which post-ops Stax
// hands to oneDNN: gelu is not among them, its accuracy differs from eager's).
//
// Build and run (a few seconds):
//   g++ -std=c++20 -O2 -fopenmp bench/gemm/post_ops_bench.cpp -ldnnl -o /tmp/post_ops_bench
//   flock /tmp/bench.lock /tmp/post_ops_bench
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// The fastest of 30 runs of each, interleaved (one of each in turn) after 5 warm-ups each, so
// that load from other processes falls on both alike.
std::pair<double, double> best_ms(const std::function<void()>& first,
                                  const std::function<void()>& second) {
  for (int i = 0; i < 5; ++i) {
    first();
    second();
  }
  auto time = [](const std::function<void()>& run) {
    const auto start = std::chrono::steady_clock::now();
    run();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  double a = 1e30, b = 1e30;
  for (int i = 0; i < 30; ++i) {
    a = std::min(a, time(first));
    b = std::min(b, time(second));
  }
  return {a, b};
}

int main() {
  omp_set_num_threads(2);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::printf("%-16s %-10s %10s %10s %8s\n", "M x K x N", "epilogue", "fused ms", "split ms",
              "saved");
  for (auto [m, k, n] : {std::array<int64_t, 3>{8, 768, 3072},
                         {32, 768, 3072},
                         {128, 768, 3072},
                         {512, 768, 3072},
                         {512, 3072, 768},
                         {256, 1024, 4096}}) {
    std::vector<float> a(m * k, 0.5f), w(n * k, 0.25f), bias(n, 1.0f), c(m * n), r(m * n, 1.0f);
    const memory::desc ad({m, k}, dt::f32, tag::ab), wd({k, n}, dt::f32, tag::ba),
        bd({1, n}, dt::f32, tag::ab), cd({m, n}, dt::f32, tag::ab);
    memory am(ad, engine, a.data()), wm(wd, engine, w.data()), bm(bd, engine, bias.data()),
        cm(cd, engine, c.data()), rm(cd, engine, r.data());
    dnnl::matmul plain(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, wd, bd, cd), engine));
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, cm}};
    for (const char* epilogue : {"gelu_erf", "add"}) {
      const bool gelu = epilogue[0] == 'g';
      dnnl::post_ops ops;
      if (gelu) {
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0, 0);
      } else {
        ops.append_binary(dnnl::algorithm::binary_add, cd);
      }
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      dnnl::matmul fused(
          dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, wd, bd, cd), attr, engine));
      auto fused_args = args;
      if (!gelu) fused_args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, rm);
      dnnl::primitive pass;
      std::unordered_map<int, memory> pass_args;
      if (gelu) {
        pass = dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(
            dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::eltwise_gelu_erf, cd, 0, 0),
            engine));
        pass_args = {{DNNL_ARG_SRC, cm}, {DNNL_ARG_DST, cm}};
      } else {
        pass = dnnl::binary(dnnl::binary::primitive_desc(
            dnnl::binary::desc(dnnl::algorithm::binary_add, cd, cd, cd), engine));
        pass_args = {{DNNL_ARG_SRC_0, cm}, {DNNL_ARG_SRC_1, rm}, {DNNL_ARG_DST, cm}};
      }
      const auto [fused_ms, split_ms] = best_ms(
          [&] {
            fused.execute(stream, fused_args);
            stream.wait();
          },
          [&] {
            plain.execute(stream, args);
            pass.execute(stream, pass_args);
            stream.wait();
          });
      std::printf("%4ldx%4ldx%4ld   %-10s %10.3f %10.3f %7.1f%%\n", long(m), long(k), long(n),
                  epilogue, fused_ms, split_ms, 100.0 * (split_ms - fused_ms) / split_ms);
    }
  }
}
