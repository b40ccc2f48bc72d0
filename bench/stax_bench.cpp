// Side-by-side benchmark of compiled graphs, in one run and as ratios (the machines are shared
// and noisy, so variants are timed round-robin and compared by medians):
//   - compile time of each graph (cold: a fresh cache directory; the precompiled kernel
//     header is built once beforehand, as it would be on any machine after first use),
//   - fused vs unfused (every buffer its own loop) run time,
//   - the widest SIMD level vs the scalar form,
//   - achieved memory traffic (input + output bytes per run) against a parallel copy of
//     64 MiB measured in the same run: how close a kernel gets to the bandwidth limit.
// The programs cover sizes that fit the last-level cache (16 MiB operands) and sizes that do
// not (dram_*: 64M elements and more), float32, bfloat16 and integer dtypes. A program that
// does not parse or compile (a dtype or op code generation lacks) is reported as
// "unsupported: <reason>" and the run goes on.
// Usage: stax_bench [--threads N] [--rounds R] FILE.stax...
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int64_t bytes_of(const stax::Tensor& t) {
  return t.numel() * static_cast<int64_t>(stax::dtype_size(t.dtype()));
}

void parallel_copy(float* dst, const float* src, int64_t n, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t chunk = 0; chunk < 64; ++chunk) {
    const int64_t lo = n * chunk / 64;
    const int64_t hi = n * (chunk + 1) / 64;
    std::memcpy(dst + lo, src + lo, static_cast<size_t>(hi - lo) * sizeof(float));
  }
}

// The first line of an error message, at most 160 characters.
std::string first_line(const std::string& message) {
  return message.substr(0, std::min<size_t>(message.find('\n'), 160));
}

// Compiles `graph` fused, unfused and scalar (throwing when any of them cannot be compiled),
// times the three round-robin and prints its row.
void run_program(const stax::ir::Graph& graph, const std::string& cache, int threads, int rounds,
                 double copy_gbs) {
  std::vector<stax::Tensor> inputs;
  uint64_t seed = 1;
  int64_t traffic = 0;
  for (auto ref : graph.inputs()) {
    const auto& v = graph.value(ref);
    stax::Tensor t =
        stax::eager::random_tensor_strided(v.type.dtype, v.type.sizes, v.type.strides, seed++);
    traffic += bytes_of(t);
    inputs.push_back(t);
  }
  stax::CompileOptions fused;
  fused.cache_dir = cache;
  fused.num_threads = threads;
  const auto t0 = Clock::now();
  const stax::CompiledGraph best = stax::compile(graph, fused);
  const double compile_s = seconds_since(t0);
  stax::CompileOptions unfused = fused;
  unfused.fuse = false;
  const stax::CompiledGraph plain = stax::compile(graph, unfused);
  stax::CompileOptions scalar = fused;
  scalar.simd = stax::runtime::SimdLevel::Scalar;
  const stax::CompiledGraph slow = stax::compile(graph, scalar);
  for (const auto& out : best.run(inputs)) traffic += bytes_of(out);

  std::vector<double> tb, tp, ts;
  for (int r = 0; r < rounds; ++r) {
    auto time = [&](const stax::CompiledGraph& g, std::vector<double>& into) {
      const auto s0 = Clock::now();
      g.run(inputs);
      into.push_back(seconds_since(s0));
    };
    time(best, tb);
    time(plain, tp);
    time(slow, ts);
  }
  const double b = median(tb), p = median(tp), s = median(ts);
  const double gbs = static_cast<double>(traffic) / b / 1e9;
  std::cout << std::left << std::setw(22) << graph.name() << std::right << std::fixed
            << std::setprecision(0) << std::setw(11) << compile_s * 1e3 << std::setw(12) << b * 1e6
            << std::setw(13) << p * 1e6 << std::setprecision(2) << std::setw(15) << p / b
            << std::setprecision(0) << std::setw(12) << s * 1e6 << std::setprecision(2)
            << std::setw(14) << s / b << std::setprecision(1) << std::setw(9) << gbs
            << std::setprecision(0) << std::setw(11) << 100.0 * gbs / copy_gbs << "%"
            << std::setprecision(1) << std::setw(11) << static_cast<double>(traffic) / (1 << 20)
            << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  int rounds = 15;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::stoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::stoi(argv[++i]);
    } else {
      files.push_back(a);
    }
  }
  const auto cache =
      std::filesystem::temp_directory_path() / ("stax-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(cache);

  // Warm the precompiled header for both levels with a trivial graph.
  for (auto level : {stax::runtime::detect_simd_level(), stax::runtime::SimdLevel::Scalar}) {
    stax::ir::Graph warm =
        stax::ir::parse_graph("def w(x: f32[4]):\n    y = neg(x)\n    return y\n");
    stax::CompileOptions o;
    o.cache_dir = cache.string();
    o.simd = level;
    o.num_threads = threads;
    stax::compile(warm, o);
  }

  // Copy bandwidth reference: 64 MiB read + 64 MiB written.
  const int64_t copy_n = int64_t{16} << 20;
  std::vector<float> src(static_cast<size_t>(copy_n), 1.0f), dst(static_cast<size_t>(copy_n));
  std::vector<double> copy_times;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    parallel_copy(dst.data(), src.data(), copy_n, threads);
    copy_times.push_back(seconds_since(t0));
  }
  const double copy_gbs = 2.0 * static_cast<double>(copy_n) * 4 / median(copy_times) / 1e9;
  std::cout << "threads " << threads << ", SIMD "
            << stax::runtime::simd_level_name(stax::runtime::detect_simd_level())
            << ", parallel copy bandwidth " << std::fixed << std::setprecision(1) << copy_gbs
            << " GB/s\n\n";
  std::cout << std::left << std::setw(22) << "program" << std::right << std::setw(11)
            << "compile ms" << std::setw(12) << "fused us" << std::setw(13) << "unfused us"
            << std::setw(15) << "unfused/fused" << std::setw(12) << "scalar us" << std::setw(14)
            << "scalar/simd" << std::setw(9) << "GB/s" << std::setw(12) << "of copy bw"
            << std::setw(11) << "MiB moved"
            << "\n";

  for (const auto& file : files) {
    std::string name = std::filesystem::path(file).stem().string();
    try {
      const stax::ir::Graph graph = stax::ir::parse_graph_file(file);
      name = graph.name();
      run_program(graph, cache.string(), threads, rounds, copy_gbs);
    } catch (const std::exception& e) {
      std::cout << std::left << std::setw(22) << name << " unsupported: " << first_line(e.what())
                << "\n";
    }
  }
  std::filesystem::remove_all(cache);
  return 0;
}
