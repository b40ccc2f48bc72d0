// The device check of the CUDA target (issue 35; run by scripts/gpu_check.sh on a machine with
// an NVIDIA GPU): each program is partitioned, generated and compiled for the device the
// driver reports, run through its launch plan on the GPU with random inputs and outputs
// poisoned with NaN before the run, and compared with the eager interpreter on the host
// within the tolerance its dtypes and ops give (driver/tolerance.h). It also times each
// program (the mean of 50 runs after 5, stream-synchronized) and reports the bytes moved per
// second. Exit status 1 when any program fails, 2 without a GPU.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/cuda_codegen.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"
#include "lowering/lowering.h"
#include "runtime/cuda/cuda_jit.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/launch_plan.h"
#include "scheduler/schedule.h"

namespace {

using namespace stax;
namespace rc = stax::runtime::cuda;

struct Program {
  std::string name;
  std::string text;
  std::map<std::string, int64_t> symbols = {};  // values of a symbolic program's sizes
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<Program> programs() {
  const std::string ex = STAX_EXAMPLES_DIR;
  const std::string bench = STAX_BENCH_DIR;
  std::vector<Program> p;
  for (const char* e : {"example_7_1", "example_7_2"})
    p.push_back({e, read(ex + "/" + e + ".stax")});
  for (const char* b : {"example_7_2_large", "softmax", "layernorm", "gelu_tanh_bias", "column_sum",
                        "full_sum", "transpose_add"}) {
    p.push_back({b, read(bench + "/" + b + ".stax")});
  }
  const std::string softmax =
      "    m = amax(x, dim=[-1], keepdim=True)\n    d = sub(x, m)\n    e = exp(d)\n"
      "    s = sum(e, dim=[-1], keepdim=True)\n    y = div(e, s)\n    return y\n";
  p.push_back({"softmax_bf16_tail", "def f(x: bf16[257, 1000]):\n" + softmax});
  p.push_back({"softmax_f16_wide", "def f(x: f16[64, 5000]):\n" + softmax});
  p.push_back({"short_rows", "def f(x: f32[1000, 6]):\n    s = sum(x, dim=[-1])\n    return s\n"});
  p.push_back({"rows_of_3_tail", "def f(x: f32[1001, 3]):\n" + softmax});
  p.push_back({"once_per_row",
               "def f(x: f32[64, 128]):\n    s = sum(x, dim=[-1])\n    r = reciprocal(s)\n"
               "    return s, r\n"});
  p.push_back({"int_sum", "def f(x: i64[300, 77]):\n    s = sum(x, dim=[-1])\n    return s\n"});
  p.push_back({"example_7_2_32768x4096",
               "def f(x: f32[32768, 4096]):\n    e = exp(x)\n    s = sum(e, dim=[-1])\n"
               "    m = amax(e, dim=[-1])\n    return s, m\n"});
  p.push_back({"example_7_2_16384x1024",
               "def f(x: f32[16384, 1024]):\n    e = exp(x)\n    s = sum(e, dim=[-1])\n"
               "    m = amax(e, dim=[-1])\n    return s, m\n"});
  p.push_back({"symbolic_rows_s0_37", "def f(x: f32[s0, 256]):\n" + softmax, {{"s0", 37}}});
  p.push_back({"symbolic_rows_s0_5000", "def f(x: f32[s0, 256]):\n" + softmax, {{"s0", 5000}}});
  return p;
}

std::vector<int64_t> concrete(const std::vector<index::Expr>& sizes,
                              const std::map<std::string, int64_t>& symbols) {
  std::vector<int64_t> out;
  for (const auto& e : sizes) out.push_back(index::evaluate(e, symbols));
  return out;
}

bool check(const Program& p, const target::Target& target, const std::string& include_dir,
           std::ostream& log) {
  const ir::Graph graph = ir::parse_graph(p.text, p.name + ".stax");
  lowering::LoweringOptions lo;
  lo.device = lowering::Device::Gpu;
  const lowering::LoweredGraph lowered = lowering::lower(graph, lo);
  scheduler::ScheduleOptions so;
  so.device = lowering::Device::Gpu;
  const scheduler::Schedule schedule = scheduler::schedule(lowered, so);
  const codegen::CudaModule module = codegen::generate_cuda(schedule, target);
  if (!module.complete()) {
    log << p.name << ": FAIL no CUDA program: " << module.plan_refused << "\n";
    return false;
  }
  rc::CudaJitOptions jit;
  jit.compile.arch = target.cuda.arch();
  jit.compile.include_dirs = {include_dir};
  const rc::CudaJitResult compiled = rc::compile_cuda_cached(module.source, p.name + ".cu", jit);
  rc::LoadedCudaProgram program(module.plan, rc::load_cuda_module(compiled));

  std::vector<Tensor> inputs;
  std::vector<rc::DeviceBuffer> device_inputs;
  std::vector<rc::DevicePtr> input_ptrs;
  int64_t bytes_moved = 0;
  for (size_t k = 0; k < lowered.inputs.size(); ++k) {
    const auto& in = lowered.inputs[k];
    Tensor t = eager::random_tensor(in.dtype, concrete(in.sizes, p.symbols), 17 + k);
    device_inputs.emplace_back(std::max<size_t>(1, t.storage()->nbytes()));
    rc::copy_to_device(device_inputs.back().get(), t.storage()->data(), t.storage()->nbytes());
    input_ptrs.push_back(device_inputs.back().get());
    bytes_moved += static_cast<int64_t>(t.storage()->nbytes());
    inputs.push_back(std::move(t));
  }
  const std::vector<Tensor> expected = eager::run(graph, inputs);
  std::vector<rc::DeviceBuffer> device_outputs;
  std::vector<rc::DevicePtr> output_ptrs;
  for (const Tensor& e : expected) {
    device_outputs.emplace_back(std::max<size_t>(1, e.storage()->nbytes()));
    // NaN in every float dtype (and -1 in the integers): an element no thread writes shows.
    rc::fill_device_bytes(device_outputs.back().get(), 0xFF, e.storage()->nbytes());
    output_ptrs.push_back(device_outputs.back().get());
    bytes_moved += static_cast<int64_t>(e.storage()->nbytes());
  }
  program.run(input_ptrs, output_ptrs, p.symbols, nullptr);
  rc::context_synchronize();
  const std::vector<Tolerance> tolerances = output_tolerances(graph, &expected);
  bool ok = true;
  std::ostringstream errors;
  for (size_t k = 0; k < expected.size(); ++k) {
    Tensor got = Tensor::empty(expected[k].dtype(), expected[k].sizes());
    rc::copy_to_host(got.storage()->data(), output_ptrs[k], got.storage()->nbytes());
    const auto d = eager::compare(got, expected[k], tolerances[k].rtol, tolerances[k].atol);
    errors << " out" << k << " max abs err " << d.max_abs;
    if (!d.within_tolerance) {
      ok = false;
      errors << " (OUTSIDE rtol " << tolerances[k].rtol << " atol " << tolerances[k].atol
             << ", max rel err " << d.max_rel << ")";
    }
  }
  for (int w = 0; w < 5; ++w) program.run(input_ptrs, output_ptrs, p.symbols, nullptr);
  rc::context_synchronize();
  constexpr int kRuns = 50;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < kRuns; ++r) program.run(input_ptrs, output_ptrs, p.symbols, nullptr);
  rc::context_synchronize();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      kRuns;
  char timing[160];
  std::snprintf(timing, sizeof timing, " | %zu launch(es), %.2f us/run, %.1f GB/s",
                module.plan.launches.size(), us, static_cast<double>(bytes_moved) / us / 1e3);
  log << p.name << ": " << (ok ? "ok" : "FAIL") << errors.str() << timing << "\n";
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (!rc::cuda_driver_available(&why)) {
    std::cerr << "gpu_check: " << why << "\n";
    return 2;
  }
  rc::PrimaryContext context(0);
  context.make_current();
  const rc::CudaDeviceProperties props = rc::cuda_device_properties(0);
  target::Target t;
  t.device = target::DeviceKind::Cuda;
  t.cuda.name = props.name;
  t.cuda.compute_capability = props.compute_capability;
  t.cuda.sm_count = props.sm_count;
  t.cuda.registers_per_sm = props.registers_per_sm;
  t.cuda.max_threads_per_sm = props.max_threads_per_sm;
  t.cuda.max_threads_per_block = props.max_threads_per_block;
  t.cuda.shared_bytes_per_block_optin = props.shared_bytes_per_block_optin;
  t.cuda.l2_bytes = props.l2_bytes;
  t.cuda.offline = false;
  std::cout << "device: " << props.name << " (" << props.arch() << ", " << props.sm_count
            << " SMs), driver " << rc::cuda_driver_version() << "\n";
  const std::string only = argc > 1 ? argv[1] : "";
  int failed = 0;
  for (const Program& p : programs()) {
    if (!only.empty() && p.name != only) continue;
    try {
      failed += check(p, t, STAX_CUDA_KERNEL_INCLUDE_DIR, std::cout) ? 0 : 1;
    } catch (const std::exception& e) {
      std::cout << p.name << ": FAIL " << e.what() << "\n";
      ++failed;
    }
    std::cout.flush();
  }
  std::cout << (failed ? std::to_string(failed) + " program(s) failed\n" : "all programs ok\n");
  return failed ? 1 : 0;
}
