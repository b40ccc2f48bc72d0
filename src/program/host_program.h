// The host program IR (issue 14, point 1): what the wrapper of a compiled graph does, as data.
// The wrapper (Listing 8.1) checks its inputs, allocates buffers, runs kernel functions and
// external calls in order, turns an error code into PyTorch's message and frees each buffer
// after its last use. The passes of program/pipeline.cpp build it from the schedule and
// decide on it (which loops share a kernel function, where buffers live); host_printer.h only
// prints it. Each decision carries its reason for `stax explain`.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "index/expr.h"
#include "kernel/kernel_ir.h"
#include "lowering/loop_ir.h"
#include "program/arena_layout.h"
#include "scheduler/schedule.h"

namespace stax::program {

// One fused node of the schedule, in execution order: a loop nest lowered to kernel IR, or an
// external call.
struct Step {
  size_t fused = 0;  // index into Schedule::kernels
  bool external = false;
  kernel::Kernel loop;  // a loop step's kernel IR after the kernel passes
  // An external step's call and the buffer it writes.
  const lowering::ExternalCall* call = nullptr;
  std::string output;
  // A further result of another step's call (lowering::ResultOf): it runs nothing; the call
  // writes its buffer.
  bool result_only = false;
};

// Adjacent loop steps sharing one C++ function and one OpenMP parallel region.
struct KernelFunction {
  std::string name;  // kernel0, kernel1, ...
  // Its range's name in a tracer's timeline (stax_kernel_trace.h): "stax::kernel0 " and the
  // fused nodes it runs.
  std::string trace_name;
  std::vector<size_t> steps;  // indices into HostProgram::steps
  std::vector<std::string> params;
  bool checks = false;  // takes the error code
  bool parallel_region = false;
  std::string reason;  // why its steps share a function, or why it starts a new one
  // Parameters that may point at the same memory (an input and the buffer that writes it in
  // place, issue 16 point 6): passed without __restrict.
  std::set<std::string> aliased;
};

// A library call of the program: what the runtime builds a plan for when the program is
// loaded (the generated code names it by its index).
struct ExternalSite {
  std::string output;                                  // the buffer it writes
  std::shared_ptr<const lowering::ExternalCall> call;  // owned with the lowered graph's buffer
  // Over the size symbols where the call is (issue 33): the runtime binds the site to each
  // call's sizes (bind_external_site) before it builds a plan.
  std::vector<index::Expr> output_sizes;
  std::vector<index::Expr> output_strides;
  DType dtype = DType::Float32;
  std::string source;  // the graph node it computes, for errors
  // What the call applies to each result before storing it to `output` (the buffer of the
  // pointwise loop it absorbed, scheduler/epilogue_fusion.h).
  std::vector<scheduler::EpilogueOp> epilogue;
  // The buffers of the call's further results (lowering::ResultOf; result 1, 2, ...), passed
  // after its operands; "" for a result no node reads (the runtime gets a null pointer).
  std::vector<std::string> further_results;
  std::vector<std::vector<index::Expr>> further_sizes;  // their sizes and strides
  std::vector<std::vector<index::Expr>> further_strides;
  bool is_symbolic() const;
};

// The site at these values of the size symbols: its call and layouts constants.
ExternalSite bind_external_site(const ExternalSite& site,
                                const std::map<std::string, int64_t>& values);

// Statements of the wrapper after the input checks, in order.
struct Allocate {
  std::string buffer;
  // Its bytes as an expression over the size symbols (issue 33: what the wrapper allocates,
  // evaluated per call), and their value at the hints (what the passes weigh).
  index::Expr size;
  int64_t bytes = 0;
  // Allocated by the caller's allocator: a graph output, or an intermediate whose storage an
  // output takes in place (scheduler/in_place_reuse.h), allocated as that output.
  bool output = false;
  int slot = 0;  // output slot, or the intermediate's index in the live table
  int unit = 0;  // the call (or further result) it is allocated before, counted from 0
  // Its place in the program's arena (plan_arena.cpp); -1: allocated on its own. With size
  // symbols the offset at the hints; the wrapper evaluates HostProgram::arena's tree for
  // request `arena_request` at each call's sizes.
  int64_t arena_offset = -1;
  int arena_request = -1;
  // The released intermediate whose storage it takes (reuse_buffers.cpp), and its live slot;
  // "": fresh memory.
  std::string reuses;
  int reuse_slot = 0;
  // The storage is taken in place from a buffer its producer reads for the last time
  // (scheduler/in_place_reuse.h), not from the free pool. With `output`: an output taking an
  // intermediate that was allocated as it.
  bool in_place = false;
  // Issue 16, point 6: the position of the graph input whose memory the buffer is (copy_
  // writes it in place; `output` is set too, as it is never freed); -1 otherwise.
  int input = -1;
};
struct Free {
  std::string buffer;
  int slot = 0;  // in the live table
  int unit = 0;  // the call it is freed after
};
// The last use of a graph input: the wrapper tells its caller, which may free it.
struct ReleaseInput {
  std::string input;
  int index = 0;  // its position among the graph's inputs
};
struct CallKernel {
  size_t function = 0;
};
struct CallExternal {
  size_t site = 0;
  std::vector<std::string> operands;  // buffers: a, mat2, bias
};
using Statement = std::variant<Allocate, Free, ReleaseInput, CallKernel, CallExternal>;

// How the wrapper places intermediates (Section 7.5).
struct MemoryOptions {
  // One arena at fixed offsets, kept across calls (plan_arena.cpp); false: each intermediate
  // is allocated before its producer and freed after its last use.
  bool arena = true;
  // Without the arena: an allocation takes a released buffer of the same dtype and size where
  // that raises no peak (reuse_buffers.cpp).
  bool reuse = true;
};

struct HostProgram {
  const scheduler::Schedule* schedule = nullptr;
  // The size symbols the program's sizes are expressions over (issue 33; empty for a static
  // program): the wrapper reads them from its inputs' sizes and passes them to every kernel
  // function.
  index::SymbolTable symbols;
  std::vector<Step> steps;
  std::vector<KernelFunction> functions;
  std::vector<ExternalSite> externals;
  std::vector<Statement> body;
  std::vector<kernel::ErrorSite> errors;  // every distinct error code a kernel can set
  int num_intermediates = 0;              // entries of the live table
  std::vector<std::string> output_slots;  // the buffer of each output slot
  // Bytes of the arena holding every intermediate at a fixed offset (0: no arena); with size
  // symbols, at their hints.
  int64_t arena_bytes = 0;
  // The arena's tree (arena_layout.h) and the bytes of each of its requests as expressions:
  // what the wrapper of a symbolic program evaluates per call.
  ArenaLayout arena;
  std::vector<index::Expr> arena_sizes;
  std::vector<std::string> log;  // one line per decision (explain)
};

// What stax_graph_run returns besides 0: 1 for bad arguments (count, sizes, strides, dtype,
// thread count), kStatusOutOfMemory when an output or intermediate could not be allocated,
// kStatusKernelError when a kernel set its error code for an integer division by zero, and for
// an indirect index out of range kStatusIndexError where PyTorch raises IndexError
// (ir::IndexRule::index_error), kStatusIndexOutOfRange where it raises RuntimeError (the
// message is PyTorch's); kStatusExternalError when a library call failed (the runtime's
// message names the op and the shapes).
constexpr int kStatusOutOfMemory = 2;
constexpr int kStatusKernelError = 3;
constexpr int kStatusIndexError = 4;
constexpr int kStatusIndexOutOfRange = 5;
constexpr int kStatusExternalError = 6;

}  // namespace stax::program
