// The target description (issue 14, point 1): the one place that says what the machine a
// program is compiled for has: its ISA level and vector registers, the vector width of each
// dtype, its caches, its thread count, and the libraries it can call. Lowering (which products
// become library calls), the scheduler (the stack budget of local arrays) and the kernel passes
// (vector forms, tiles, accumulators, streaming stores) all read it; nothing device-specific
// lives outside it and the backend that prints code for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "runtime/cache_info.h"
#include "runtime/simd.h"
#include "target/cuda_device.h"

namespace stax::target {

enum class DeviceKind { Cpu, Cuda };

struct Target {
  runtime::SimdLevel simd = runtime::SimdLevel::Scalar;
  int num_threads = 1;         // P of Algorithm 8.1
  runtime::CacheSizes caches;  // tile sizes (Section 8.2), streaming stores
  // Whether the buffers kernels write are memory already mapped (the arena of intermediates,
  // outputs from the torch.compile bridge's output pool, or given by the caller) rather than
  // fresh allocations. Fresh pages are zeroed by the kernel at their first touch, which leaves
  // their lines in cache: an ordinary store then costs no extra traffic and a streaming store
  // adds a write. Measured here (64M-float add, 2 threads): streaming stores 40 ms vs 49 ms
  // into mapped pages, 116-122 ms vs 92-105 ms into fresh ones; through the bridge with pooled
  // outputs, 13-15 ms vs 20-21 ms (bench/MEMORY_BOUND.md). The bridge sets it (its large
  // outputs are pooled); the C++ API's run() allocates outputs afresh, hence the default.
  bool outputs_in_mapped_memory = false;
  // The libraries external calls may use, by name ("oneDNN matmul"); empty: none, every
  // contraction is a loop nest.
  std::vector<std::string> libraries = {};
  // What those libraries compute other than natively on this machine, as their plans report
  // it ("oneDNN matmul: bf16 through float32": no bfloat16 kernel on an AVX2-only CPU, see
  // external/arithmetic.h); empty where they compute every dtype they take natively. For
  // explain: each plan asks its library itself.
  std::vector<std::string> library_notes = {};
  // Issue 35: the kind of device the program runs on (last, so that the CPU's aggregate
  // initializers keep their order). A CUDA target reads `cuda`; the CPU fields describe the
  // host, which runs the launch plan and the library calls.
  DeviceKind device = DeviceKind::Cpu;
  CudaDevice cuda = {};

  // The vector registers of the SIMD level (x86-64: 16 YMM with AVX2, 32 ZMM with AVX-512;
  // none at the scalar level) and their width in bytes (0 at the scalar level).
  int vector_register_count() const;
  int64_t vector_register_bytes() const;
  // Lanes of one register for `dtype`: every dtype fills a whole register (its element size
  // divides the register width), so a bf16 loop has twice the lanes of an f32 one. 1 at the
  // scalar level.
  int64_t vector_lanes(DType dtype) const;
  // The largest per-iteration local array the scheduler keeps on a thread's stack: what the
  // stack of an OpenMP worker (often only the default 2-8 MiB, shared by the whole call chain)
  // holds comfortably. Not a cache size: a larger slice spills from L1 to L2, which still
  // beats a round trip through memory, but a deep stack can overflow.
  int64_t max_local_bytes() const { return 64 * 1024; }
  bool has_library(const std::string& name) const;
  // "avx512, 2 threads, L1d 48 KiB, L2 2048 KiB, LLC 105 MiB; lanes f32 16, bf16 32, ...;
  // libraries: oneDNN matmul" (then "; oneDNN matmul: bf16 through float32" and the other
  // library notes), for explain.
  std::string describe() const;
};

}  // namespace stax::target
