// CPU code generation (Section 8): one C++ translation unit per graph. The host program
// (program/host_program.h: kernel functions, external calls, allocations, releases, error
// dispatch) is built by the passes of program/pipeline.cpp, each loop being the kernel IR of
// its fused node after the passes of kernel/pipeline.cpp, and printed by
// program/host_printer.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lowering/loop_ir.h"
#include "program/host_program.h"
#include "program/log_topics.h"
#include "runtime/cache_info.h"
#include "runtime/simd.h"
#include "scheduler/schedule.h"
#include "target/target.h"

namespace stax::codegen {

// The wrapper's status codes (program/host_program.h).
using program::kStatusExternalError;
using program::kStatusIndexError;
using program::kStatusIndexOutOfRange;
using program::kStatusKernelError;
using program::kStatusOutOfMemory;

// The target (ISA, threads, caches, libraries: target/target.h) plus what to record.
struct CodegenOptions : target::Target {
  // Keep the kernel IR after every pass in GeneratedModule::ir_log (explain --ir).
  bool record_ir = false;
  // Printed to stderr: the kernel IR after every pass (`ir`), the host program after every
  // pass (`program`).
  program::LogTopics logs;
  // Verify the kernel IR after every pass (also on in debug builds, see kernel/verifier.h).
  bool verify_ir = false;
  // Where intermediates live (program/host_program.h).
  program::MemoryOptions memory;
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
// allocator (`slot`), or a view of input `input`. Its layout is over the program's size
// symbols (issue 33; constants for a static program): the runtime evaluates it per call.
struct OutputBinding {
  bool from_input = false;
  int index = 0;  // output slot, or input position
  DType dtype = DType::Float32;
  std::vector<index::Expr> sizes;
  std::vector<index::Expr> strides;
  index::Expr offset;
};

struct GeneratedModule {
  std::string source;
  std::string entry_point = "stax_graph_run";
  std::vector<KernelSummary> kernels;
  std::vector<OutputBinding> outputs;
  std::vector<index::Expr> output_slot_bytes;  // over the size symbols, as the outputs
  // The size symbols the program takes (empty for a static program): the wrapper reads them
  // from its inputs' sizes, the runtime evaluates the outputs' layouts at them.
  index::SymbolTable symbols;
  // Bytes of the intermediates' arena (plan_arena.cpp; 0: none), one block per concurrent call;
  // with size symbols, at their hints (a call's arena is the tree evaluated at its sizes).
  int64_t arena_bytes = 0;
  CodegenOptions options;
  std::vector<std::string> ir_log;  // with record_ir: the kernel IR after each pass
  // The library calls, by site index: the runtime builds a plan for each when it loads the
  // program, and the wrapper calls them through its StaxExternalFn.
  std::vector<program::ExternalSite> externals;
  std::vector<std::string> program_log;  // the host program's decisions, for explain
  // Where the wrapper puts each buffer it allocates ("arena offset 4096", "output slot 0",
  // "reuses buf2", "own allocation"), for explain's buffer events.
  std::map<std::string, std::string> buffer_placement;
};

GeneratedModule generate_cpp(const scheduler::Schedule& schedule, const CodegenOptions& options);

}  // namespace stax::codegen
