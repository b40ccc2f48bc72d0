// The C++ API of Stax: compile a graph (lowering, scheduling, code generation, JIT) and run
// it on tensors; or stop after code generation to explain or emit what would run.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/cpp_codegen.h"
#include "codegen/cuda_codegen.h"
#include "external/matmul.h"
#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "lowering/lowering.h"
#include "program/log_topics.h"
#include "runtime/shared_library.h"
#include "runtime/tensor.h"
#include "scheduler/schedule.h"

namespace stax {

namespace driver {
class ExternalPlans;
}

// Bad arguments to a compiled graph: wrong count, dtype, size, stride.
class InputError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct CompileOptions {
  // Issue 35: "cpu", or a CUDA device (target/cuda_device.h): "cuda:sm_90" compiles for an
  // architecture of the offline table on any machine. On a CUDA target, lowering and the
  // scheduler make the GPU partition (analyze, explain); no CUDA kernel is generated yet.
  std::string device = "cpu";
  std::optional<runtime::SimdLevel> simd;     // default: the widest the CPU supports
  int num_threads = 0;                        // default: all hardware threads
  std::optional<runtime::CacheSizes> caches;  // default: the running machine's
  bool outputs_in_mapped_memory = false;      // kernel::TargetOptions (streaming stores)
  std::string cache_dir;                      // default: see runtime::JitOptions
  bool fuse = true;
  bool localize = true;  // per-outer-iteration local arrays (scheduler::BufferPlan)
  // Section 7.5: the kernel order of least simulated peak (scheduler/memory_order.h), and
  // intermediates at fixed offsets of one arena kept across calls (program/plan_arena.cpp).
  bool reorder_for_memory = true;
  bool memory_arena = true;
  // Without the arena: Section 7.5's free pool (program/reuse_buffers.cpp).
  bool reuse_buffers = true;
  // A loop writing its result into the storage of an intermediate it reads for the last time,
  // at the element written (scheduler/in_place_reuse.h).
  bool in_place_reuse = true;
  bool record_ir = false;  // keep the kernel IR after every pass (explain --ir)
  // Run contractions through the machine's library where it computes them (issue 14); false:
  // every contraction is a Stax loop nest (what differential tests compare the library with).
  bool external_libraries = true;
  // Run the graph passes (graph_passes/graph_passes.h) before lowering; false: the graph is
  // lowered as written (what before/after measurements of a pass compare).
  bool graph_passes = true;
  // Intermediates around library convolutions stored channels last where the library runs
  // in place on that layout (lowering/channels_last.h); false: row-major.
  bool channels_last_intermediates = true;
  // Library matrix products whose B has contiguous columns time B in place against B packed
  // into the library's layout, once per shape, and keep the faster (matmul_weights_form.h);
  // false keeps B in place unmeasured (what before/after measurements compare).
  bool measure_matmul_weights = true;
  // Measured products may also be handed to the BLAS (external/blas_library.h) where it is
  // faster; false keeps every product on oneDNN (before/after measurements).
  bool matmul_blas = true;
  // Keep the analysis (the lowered graph, the schedule, the generated source, the logs) once
  // the program is loaded, for explain, source() and freeze_parameters' weight sites; false
  // frees it (a few MiB per training graph; CompiledGraph::compilation() then throws), what
  // running needs stays.
  bool keep_analysis = true;
  // The topics the C++ side prints to stderr (program/log_topics.h); none given: the ones
  // STAX_LOGS names. torch.compile's options={"logs": ...} arrive here.
  std::optional<std::vector<std::string>> logs;
  // Issue 33: a graph with size symbols keeps the programs of at most this many sizes (the
  // symbols' hints always among them); a call at other sizes compiles theirs in place of the
  // one used least recently.
  int max_symbolic_sizes = 8;
  // Issue 33: false makes compile() throw index::SymbolicSizesRefused where a stage refuses a
  // graph's size symbols, instead of compiling it per size (the torch.compile bridge binds the
  // sizes itself then, per region, within Dynamo's recompile limit).
  bool per_size_programs = true;
};

// CompileOptions::logs, or STAX_LOGS's topics where it is not set.
program::LogTopics log_topics(const CompileOptions& options);

// Everything known about a graph before the C++ compiler runs.
struct Compilation {
  lowering::LoweredGraph lowered;
  scheduler::Schedule schedule;  // points into `lowered`
  codegen::GeneratedModule module;
  // A CUDA target (issue 35): its kernels, and `module` holds only the target and symbols.
  std::optional<codegen::CudaModule> cuda;
};

// Where library plans keep what they measured on this machine (external/measurement_cache.h):
// library-plans/ in the kernel cache directory that `options` resolves to.
std::string library_plan_dir(const CompileOptions& options);
// How the library plans of a program compiled with `options` hand B over: measured (with or
// without the BLAS) or in place.
external::MatmulWeights matmul_weights(const CompileOptions& options);

std::shared_ptr<const Compilation> analyze(const ir::Graph& graph,
                                           const CompileOptions& options = {});
// The same from a lowered graph (e.g. one built directly in tests).
std::shared_ptr<const Compilation> analyze_lowered(lowering::LoweredGraph lowered,
                                                   const CompileOptions& options = {});

// A graph output's layout at one call's sizes (codegen::OutputBinding evaluated there): a
// buffer of output slot `index`, or a view of input `index`.
struct OutputLayout {
  bool from_input = false;
  int index = 0;
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};
// One input of a call as the caller lays it out (run_into of a program over size symbols).
struct InputLayout {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};
// What a call at given sizes needs beside its inputs: its outputs' layouts and the bytes of
// each output slot; `inputs`, the layouts the program reads its inputs in, where asked for
// (CompiledGraph::layout_at).
struct CallLayout {
  std::vector<OutputLayout> outputs;
  std::vector<int64_t> slot_bytes;
  std::vector<InputLayout> inputs;
};
// The module's outputs at these values of its size symbols (none for a static module).
CallLayout call_layout(const codegen::GeneratedModule& module,
                       const std::map<std::string, int64_t>& values);

// Where a compile's time went (issue 34, point 4): the front end (graph passes, lowering,
// scheduling, kernel passes, code generation), the C++ compiler (or the JIT cache's lookup
// on a hit) with loading, and building the library plans.
struct CompileTimes {
  double front_end_s = 0;
  double cxx_compile_s = 0;
  double library_plans_s = 0;
};

// Options of one run of a compiled graph.
struct RunOptions {
  // Threads of every parallel region: any count >= 1 (more than the cores, or than at
  // compile time, included; a team has at most STAX_MAX_THREADS = 1024, stax_kernel.h);
  // 0 runs with the compile-time count (CompileOptions::num_threads).
  int num_threads = 0;
  // Called with an input's position after the last statement that reads it (issue 16,
  // point 5), on the calling thread: the caller may free the input then, unless an output is a
  // view of it. A caller that gives up its inputs to the run (the torch.compile bridge, for the
  // activations a backward graph reads) frees each as early as the program allows.
  std::function<void(size_t input)> on_input_released = nullptr;
};

// A compiled graph. For a graph with size symbols (issue 33) run() takes inputs of any sizes
// the symbols' facts allow; each call reads the symbols' values from its inputs
// (ir::sizes_of_call). Where every stage takes the symbols (takes_every_size()) one program
// serves every size: its wrapper reads the symbols and its kernels loop to them. Otherwise
// (a stage refused them: index::SymbolicSizesRefused, whose message per_size_reason() keeps)
// each size runs its own program, compiled at the first call with it
// (CompileOptions::max_symbolic_sizes are kept). The other members (run_into, input_types,
// outputs, ...) are at the symbols' hints.
class CompiledGraph {
 public:
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const { return run(inputs, {}); }
  // Throws InputError for a negative thread count.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options) const;
  // Runs with memory the caller owns (the torch.compile bridge hands over PyTorch tensors):
  // input_data[i] is element 0 of input i, laid out with the compiled sizes and strides
  // (input_types(); the caller guarantees the layout, which this cannot see);
  // output_slots[k] holds at least output_slot_bytes()[k] bytes, 64-byte aligned, and
  // receives slot k. Outputs that are views of inputs (OutputBinding::from_input) need no
  // slot. Throws InputError for wrong counts, null or misaligned pointers.
  void run_into(const std::vector<const void*>& input_data, const std::vector<void*>& output_slots,
                const RunOptions& options = {}) const;
  // run_into where a null output_slots[k] is taken from the process's pool
  // (runtime::process_block_pool()) at the statement that first writes slot k instead of
  // before the run (issue 32, point 4): a backward graph's gradients then take memory as the
  // activations it reads are released, as eager's do, instead of all of them beside all of
  // those. On return output_slots[k] holds the block, at least output_slot_bytes()[k] bytes,
  // which the caller now owns (it goes back with process_block_pool().give); on failure every
  // block taken is given back before the exception leaves.
  void run_into_pooled(const std::vector<const void*>& input_data, std::vector<void*>& output_slots,
                       const RunOptions& options = {}) const;
  // Issue 33: run_into and run_into_pooled with each input's sizes and strides as the caller
  // has them, for a graph with size symbols at any sizes its facts allow (a static graph takes
  // these too: its wrapper checks them). The symbols' values are read from the sizes
  // (ir::symbol_values_of_call); the output slots are those of layout_at(values) (their bytes
  // in *slot_bytes where given). A graph compiled per size runs the program of these sizes.
  // Throws InputError naming the input and dimension whose size or stride breaks the program.
  void run_into(const std::vector<const void*>& input_data,
                const std::vector<InputLayout>& input_layouts,
                const std::vector<void*>& output_slots, const RunOptions& options = {}) const;
  void run_into_pooled(const std::vector<const void*>& input_data,
                       const std::vector<InputLayout>& input_layouts,
                       std::vector<void*>& output_slots, const RunOptions& options = {},
                       std::vector<int64_t>* slot_bytes = nullptr) const;
  // The symbols' values a call with these input sizes gives (none for a static graph); throws
  // InputError naming the dimension or symbol that breaks the graph's facts, or the value int64
  // cannot count at these sizes.
  std::map<std::string, int64_t> symbol_values(
      const std::vector<std::vector<int64_t>>& input_sizes) const;
  // A call's layout at these values of the size symbols (checked as symbol_values checks
  // them), the layouts the program reads its inputs in included: what a caller allocating
  // the outputs (the torch.compile bridge) plans a size with.
  CallLayout layout_at(const std::map<std::string, int64_t>& values) const;
  // Where a call's inputs give each size symbol (ir::symbol_sources): the bridge reads the
  // symbols' values from its tensors' sizes by the same rule.
  std::map<std::string, ir::SymbolSource> symbol_sources() const;
  const std::vector<ir::TensorType>& input_types() const { return input_types_; }
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<int64_t>& output_slot_bytes() const { return layout_.slot_bytes; }
  const std::vector<OutputLayout>& outputs() const { return layout_.outputs; }
  // Throws std::logic_error when compiled with CompileOptions::keep_analysis = false.
  const Compilation& compilation() const;
  // What running reads of the compilation, kept whatever keep_analysis says: the inputs' and
  // outputs' layouts, the entry point, the target, the library call sites (what an
  // ahead-of-time package holds, package/program_json.h).
  const Compilation& runtime_compilation() const;
  bool analysis_kept() const { return analysis_kept_; }
  int64_t arena_bytes() const { return compilation_->module.arena_bytes; }
  // The library plans of the loaded program, by call site: freeze_parameters packs weights
  // into their slots (frozen_weights.h).
  const driver::ExternalPlans& external_plans() const { return *externals_; }
  const std::string& source() const { return compilation().module.source; }
  bool cache_hit() const { return cache_hit_; }
  // Of the program at the hints (a symbolic graph compiled per size: of that one); zero for a
  // program loaded from a package.
  const CompileTimes& compile_times() const { return times_; }
  const std::string& library_path() const { return library_path_; }
  bool is_symbolic() const { return symbolic_ != nullptr; }
  // Whether one program serves every size of a symbolic graph (false for a static graph).
  bool takes_every_size() const;
  // Why a symbolic graph is compiled per size: the stage that refused its symbols ("" when
  // one program takes every size, or for a static graph).
  std::string per_size_reason() const;
  // The sizes whose programs a symbolic graph compiled per size holds now (empty for a static
  // graph and where one program takes every size).
  std::vector<std::map<std::string, int64_t>> compiled_sizes() const;

 private:
  struct SymbolicPrograms;
  friend CompiledGraph compile(const ir::Graph& graph, const CompileOptions& options);
  // The program of a symbolic graph compiled per size at these values; null at the hints (this
  // one).
  std::shared_ptr<const CompiledGraph> program_for(
      const std::map<std::string, int64_t>& values) const;
  // The symbols' values these inputs give; InputError naming what breaks.
  std::map<std::string, int64_t> symbol_values(const std::vector<Tensor>& inputs) const;
  // Checks values against the facts and int64 extents (ir::check_extents_at), remembering
  // the last values checked: a call at sizes met before skips the walk over the graph.
  void check_values(const std::map<std::string, int64_t>& values) const;
  std::shared_ptr<SymbolicPrograms> symbolic_;
  // run_into's and run_into_pooled's call of the entry: `alloc` gives slot k's memory;
  // `layouts`, the inputs' sizes and strides (null: the compiled ones).
  void run_entry(const std::vector<const void*>& input_data,
                 const std::vector<InputLayout>* layouts,
                 void* (*alloc)(void* ctx, int64_t slot, int64_t nbytes), void* alloc_ctx,
                 const RunOptions& options) const;
  // run_into_pooled's body over the slot bytes a call needs.
  void run_pooled_entry(const std::vector<const void*>& input_data,
                        const std::vector<InputLayout>* layouts,
                        const std::vector<int64_t>& slot_bytes, std::vector<void*>& output_slots,
                        const RunOptions& options) const;
  friend CompiledGraph compile_lowered(lowering::LoweredGraph, const CompileOptions&);
  friend CompiledGraph load_compiled(std::shared_ptr<const Compilation>,
                                     std::shared_ptr<runtime::SharedLibrary>, const std::string&,
                                     const ir::Graph*, const CompileOptions&);
  friend void attach_library(CompiledGraph&, std::shared_ptr<runtime::SharedLibrary>,
                             const std::string&, const CompileOptions&);
  std::shared_ptr<const Compilation> compilation_;
  std::shared_ptr<void> library_;                           // keeps the shared object loaded
  std::shared_ptr<const driver::ExternalPlans> externals_;  // the library plans, by call site
  void* entry_ = nullptr;
  std::vector<ir::TensorType> input_types_;
  CallLayout layout_;  // at the symbols' hints for a symbolic program
  std::vector<std::string> input_names_;
  bool runnable_ = true;
  bool analysis_kept_ = true;
  std::string not_runnable_reason_;
  bool cache_hit_ = false;
  std::string library_path_;
  CompileTimes times_;
  friend CompiledGraph lower_and_compile(const ir::Graph&, const CompileOptions&);
};

CompiledGraph compile(const ir::Graph& graph, const CompileOptions& options = {});
// What lowering needs of the options: the target's libraries.
lowering::LoweringOptions lowering_options(const CompileOptions& options);
// The graph passes (graph_passes/graph_passes.h; their decisions head the lowering log), then
// lowering.
lowering::LoweredGraph lower_graph(const ir::Graph& graph, const CompileOptions& options);
CompiledGraph compile_lowered(lowering::LoweredGraph lowered, const CompileOptions& options = {});

// Issue 34: a program from its parts, without lowering or compiling (an ahead-of-time
// package, package/package.h): the run-time half of its compilation
// (CompiledGraph::runtime_compilation()), its compiled library, loaded, and for a program over
// size symbols the graph it was compiled from (the size checks of each call read it; one
// program must take every size). `options` gives what loading decides: how matrix products
// hand B over and where they keep what they measure.
CompiledGraph load_compiled(std::shared_ptr<const Compilation> runtime_half,
                            std::shared_ptr<runtime::SharedLibrary> library,
                            const std::string& library_path, const ir::Graph* symbolic_graph,
                            const CompileOptions& options);
// The loading half of compile_lowered and load_compiled: the entry point, the process pool,
// the program's registration and its library plans.
void attach_library(CompiledGraph& out, std::shared_ptr<runtime::SharedLibrary> library,
                    const std::string& library_path, const CompileOptions& options);

}  // namespace stax
