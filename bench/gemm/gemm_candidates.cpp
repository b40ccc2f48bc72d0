// Candidate GEMM libraries for Stax's matrix products (issue 14, point 2), timed from one
// process by bench/gemm/gemm_libraries.py: oneDNN's matmul primitive (built once per shape,
// as Stax would build it when a graph is loaded) and the CBLAS sgemm / sbgemm of a library
// opened with dlopen (OpenBLAS, BLIS: each exports the same names, so each gets its own
// handle). Every function runs `iters` calls of one product and returns the median seconds
// per call. The product is the one a linear layer computes: C[M, N] = A[M, K] * W[N, K]^T
// (W row-major as PyTorch stores a weight), `batch` independent products for the batched
// shapes of attention (A [b, M, K], W [b, N, K]). dtype 0: float32; 1: bfloat16 inputs with
// float32 accumulation (oneDNN: a bfloat16 output, as eager's; sbgemm: a float32 output).
// Not part of Stax: a measurement tool, built by the Python script with the system compiler.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

double median_seconds(int iters, const std::function<void()>& call) {
  call();  // warm: first-touch, library initialization
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

template <class T>
std::vector<T> filled(int64_t n, bool bf16) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float x = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
    if constexpr (sizeof(T) == 2) {
      v[i] = to_bf16(x);
    } else {
      (void)bf16;
      v[i] = x;
    }
  }
  return v;
}

}  // namespace

extern "C" double stax_bench_dnnl(int dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
                                  int iters) {
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::data_type in_dt = dtype == 0 ? memory::data_type::f32 : memory::data_type::bf16;
  const memory::data_type out_dt = in_dt;
  const bool batched = batch > 1;
  const memory::dims a_dims = batched ? memory::dims{batch, m, k} : memory::dims{m, k};
  const memory::dims w_dims = batched ? memory::dims{batch, k, n} : memory::dims{k, n};
  const memory::dims c_dims = batched ? memory::dims{batch, m, n} : memory::dims{m, n};
  // W^T of a row-major [N, K] weight: strides (1, K), batch stride N * K.
  const memory::dims w_strides = batched ? memory::dims{n * k, 1, k} : memory::dims{1, k};
  const memory::desc a_md(a_dims, in_dt, batched ? memory::format_tag::abc : memory::format_tag::ab);
  const memory::desc w_md(w_dims, in_dt, w_strides);
  const memory::desc c_md(c_dims, out_dt, batched ? memory::format_tag::abc : memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_md, c_md), engine);
  const dnnl::matmul matmul(pd);
  const int64_t elem = dtype == 0 ? 4 : 2;
  std::vector<char> a(static_cast<size_t>(batch * m * k * elem));
  std::vector<char> w(static_cast<size_t>(batch * n * k * elem));
  std::vector<char> c(static_cast<size_t>(batch * m * n * elem));
  if (dtype == 0) {
    auto fa = filled<float>(batch * m * k, false), fw = filled<float>(batch * n * k, false);
    std::memcpy(a.data(), fa.data(), a.size());
    std::memcpy(w.data(), fw.data(), w.size());
  } else {
    auto fa = filled<uint16_t>(batch * m * k, true), fw = filled<uint16_t>(batch * n * k, true);
    std::memcpy(a.data(), fa.data(), a.size());
    std::memcpy(w.data(), fw.data(), w.size());
  }
  memory am(a_md, engine, a.data()), wm(w_md, engine, w.data()), cm(c_md, engine, c.data());
  return median_seconds(iters, [&] {
    matmul.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, cm}});
    stream.wait();
  });
}

// CBLAS from the library at `path` (dlopen, RTLD_LOCAL). `threads` is set through the library's
// own call when it has one (openblas_set_num_threads, bli_thread_set_num_threads). Returns -1
// when the library lacks the routine (sbgemm for dtype 1).
extern "C" double stax_bench_cblas(const char* path, int dtype, int64_t batch, int64_t m,
                                   int64_t n, int64_t k, int iters, int threads) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
  using SetThreads = void (*)(int);
  if (auto f = reinterpret_cast<SetThreads>(dlsym(lib, "openblas_set_num_threads"))) f(threads);
  if (auto f = reinterpret_cast<SetThreads>(dlsym(lib, "bli_thread_set_num_threads"))) {
    f(threads);
  }
  constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
  double seconds = -1;
  if (dtype == 0) {
    using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                           int, float, float*, int);
    auto sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cblas_sgemm"));
    if (sgemm != nullptr) {
      auto a = filled<float>(batch * m * k, false), w = filled<float>(batch * n * k, false);
      std::vector<float> c(static_cast<size_t>(batch * m * n));
      seconds = median_seconds(iters, [&] {
        for (int64_t b = 0; b < batch; ++b) {
          sgemm(kRowMajor, kNoTrans, kTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a.data() + b * m * k, static_cast<int>(k),
                w.data() + b * n * k, static_cast<int>(k), 0.0f, c.data() + b * m * n,
                static_cast<int>(n));
        }
      });
    }
  } else {
    using Sbgemm = void (*)(int, int, int, int, int, int, float, const uint16_t*, int,
                            const uint16_t*, int, float, float*, int);
    auto sbgemm = reinterpret_cast<Sbgemm>(dlsym(lib, "cblas_sbgemm"));
    if (sbgemm != nullptr) {
      auto a = filled<uint16_t>(batch * m * k, true), w = filled<uint16_t>(batch * n * k, true);
      std::vector<float> c(static_cast<size_t>(batch * m * n));
      seconds = median_seconds(iters, [&] {
        for (int64_t b = 0; b < batch; ++b) {
          sbgemm(kRowMajor, kNoTrans, kTrans, static_cast<int>(m), static_cast<int>(n),
                 static_cast<int>(k), 1.0f, a.data() + b * m * k, static_cast<int>(k),
                 w.data() + b * n * k, static_cast<int>(k), 0.0f, c.data() + b * m * n,
                 static_cast<int>(n));
        }
      });
    }
  }
  return seconds;
}
