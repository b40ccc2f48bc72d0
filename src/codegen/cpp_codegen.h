// CPU code generation (Section 8): one C++ translation unit per graph, holding the kernels
// (one function per run of adjacent loops, sharing one OpenMP parallel region) and the
// wrapper function that checks inputs, allocates buffers, calls the kernels in order, turns
// a kernel's error code into PyTorch's message and frees each buffer after its last use
// (Section 8.5). Each loop is the kernel IR of its fused node after the passes of
// kernel/pipeline.cpp, printed by kernel/printer.h.
#pragma once

#include <string>
#include <vector>

#include "runtime/cache_info.h"
#include "runtime/simd.h"
#include "scheduler/schedule.h"

namespace stax::codegen {

// What stax_graph_run returns besides 0: 1 for bad arguments (count, sizes, strides, dtype,
// thread count), kStatusOutOfMemory when an output or intermediate could not be allocated,
// kStatusKernelError when a kernel set its error code for an integer division by zero, and for
// an indirect index out of range kStatusIndexError where PyTorch raises IndexError
// (ir::IndexRule::index_error), kStatusIndexOutOfRange where it raises RuntimeError; the
// message is PyTorch's.
constexpr int kStatusOutOfMemory = 2;
constexpr int kStatusKernelError = 3;
constexpr int kStatusIndexError = 4;
constexpr int kStatusIndexOutOfRange = 5;

struct CodegenOptions {
  runtime::SimdLevel simd = runtime::SimdLevel::Scalar;
  int num_threads = 1;         // P of Algorithm 8.1; the team size is the run-time count (any >= 1)
  runtime::CacheSizes caches;  // of the machine the code is generated for
  bool outputs_in_mapped_memory = false;  // kernel::TargetOptions
  // Keep the kernel IR after every pass in GeneratedModule::ir_log (explain --ir). The IR is
  // also printed to stderr when STAX_LOGS names `ir` (a comma-separated list).
  bool record_ir = false;
  // Verify the kernel IR after every pass (also on in debug builds, see kernel/verifier.h).
  bool verify_ir = false;
};

// How one fused node became a loop: its form (Section 8.3) per nest and its parallel depth.
struct LoopSummary {
  std::string fused_node;
  std::vector<std::string> nest_forms;  // "vectorized(W=8) over r0", "scalar"
  int parallel_depth = 0;
  std::vector<int64_t> loop_ranges;  // the loops Algorithm 8.1 looked at, outer to inner
};

struct KernelSummary {
  std::string name;  // kernel0, ...
  std::vector<LoopSummary> loops;
  bool parallel_region = false;
};

// Where the wrapper finds a graph output: a buffer it allocated through the caller's
// allocator (`slot`), or a view of input `input`.
struct OutputBinding {
  bool from_input = false;
  int index = 0;  // output slot, or input position
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

struct GeneratedModule {
  std::string source;
  std::string entry_point = "stax_graph_run";
  std::vector<KernelSummary> kernels;
  std::vector<OutputBinding> outputs;
  std::vector<int64_t> output_slot_bytes;
  CodegenOptions options;
  std::vector<std::string> ir_log;  // with record_ir: the kernel IR after each pass
};

GeneratedModule generate_cpp(const scheduler::Schedule& schedule, const CodegenOptions& options);

}  // namespace stax::codegen
