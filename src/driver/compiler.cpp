// compile() and CompiledGraph::run(): the host side of the generated wrapper's ABI.
#include "driver/compiler.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <list>
#include <mutex>
#include <thread>

#include "driver/external_calls.h"
#include "driver/memory_stats.h"
#include "driver/profile.h"
#include "graph_passes/bind_sizes.h"
#include "graph_passes/graph_passes.h"
#include "ir/index_rule.h"
#include "ir/symbolic_shapes.h"
#include "program/pipeline.h"
#include "runtime/block_pool.h"
#include "runtime/jit.h"
#include "stax_kernel_abi.h"

namespace stax {

namespace {

using EntryFn = int (*)(const StaxTensorArg*, int64_t, void**, StaxAllocFn, void*, StaxExternalFn,
                        void*, StaxReleaseFn, void*, int, char*, int64_t);

// RunOptions::on_input_released behind the wrapper's C callback.
void release_input(void* ctx, int64_t input) {
  (*static_cast<const std::function<void(size_t)>*>(ctx))(static_cast<size_t>(input));
}

StaxReleaseFn release_fn(const RunOptions& options) {
  return options.on_input_released ? &release_input : nullptr;
}

void* release_ctx(const RunOptions& options) {
  return options.on_input_released
             ? const_cast<std::function<void(size_t)>*>(&options.on_input_released)
             : nullptr;
}

struct OutputAllocator {
  std::vector<std::shared_ptr<Storage>> storages;
};

void* allocate_output(void* ctx, int64_t /*slot*/, int64_t nbytes) {
  auto* a = static_cast<OutputAllocator*>(ctx);
  // Every element of an output is written by a kernel, so skip the zero-fill of Storage.
  const size_t rounded = (static_cast<size_t>(std::max<int64_t>(nbytes, 1)) + 63) / 64 * 64;
  void* data = std::aligned_alloc(64, rounded);
  if (data == nullptr) return nullptr;
  try {
    a->storages.push_back(std::make_shared<Storage>(data, static_cast<size_t>(nbytes),
                                                    [](void* p) { std::free(p); }));
  } catch (...) {
    std::free(data);
    return nullptr;
  }
  return data;
}

// Output slots the caller allocated before the run (CompiledGraph::run_into).
void* caller_slot(void* ctx, int64_t slot, int64_t /*nbytes*/) {
  return static_cast<void* const*>(ctx)[slot];
}

void check_thread_count(int num_threads) {
  if (num_threads < 0) {
    throw InputError("num_threads must be at least 1 (or 0 for the compile-time count), got " +
                     std::to_string(num_threads));
  }
}

// Maps the generated wrapper's status to the exception callers see.
void throw_on_status(int status, const char* err) {
  if (status == codegen::kStatusIndexError) throw ir::IndexError(err);
  if (status == codegen::kStatusIndexOutOfRange) throw std::out_of_range(err);
  if (status == codegen::kStatusExternalError) throw external::LibraryError(err);
  if (status == codegen::kStatusOutOfMemory || status == codegen::kStatusKernelError) {
    throw std::runtime_error(err);
  }
  if (status != 0) throw InputError(err);
}

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace

target::Target make_target(const CompileOptions& options) {
  target::Target t;
  t.simd = options.simd.value_or(runtime::detect_simd_level());
  t.num_threads = resolve_threads(options.num_threads);
  t.caches = options.caches.value_or(runtime::detect_cache_sizes());
  t.outputs_in_mapped_memory = options.outputs_in_mapped_memory;
  const target::DeviceSpec device = target::parse_device(options.device);
  if (device.cuda) {
    if (device.arch.empty()) {
      throw std::invalid_argument(
          "device '" + options.device +
          "': Stax does not load the CUDA driver yet (issue 35, point 4); name an architecture "
          "to compile for offline (cuda:sm_80, cuda:sm_90, cuda:sm_100)");
    }
    t.device = target::DeviceKind::Cuda;
    t.cuda = *target::offline_cuda_device(device.arch);
    return t;  // no library on the GPU yet: every product is a loop nest
  }
  if (options.external_libraries) {
    t.libraries.push_back(driver::kMatmulLibrary);
    t.libraries.push_back(driver::kConvolutionLibrary);
    t.library_notes = driver::library_arithmetic_notes();
  }
  return t;
}

std::shared_ptr<const Compilation> analyze_lowered(lowering::LoweredGraph lowered,
                                                   const CompileOptions& options) {
  auto c = std::make_shared<Compilation>();
  c->lowered = std::move(lowered);
  codegen::CodegenOptions co;
  static_cast<target::Target&>(co) = make_target(options);
  co.record_ir = options.record_ir;
  co.logs = log_topics(options);
  co.memory.arena = options.memory_arena;
  co.memory.reuse = options.reuse_buffers;
  scheduler::ScheduleOptions so;
  so.fuse = options.fuse;
  so.localize = options.localize;
  so.reorder_for_memory = options.reorder_for_memory;
  so.in_place_reuse = options.in_place_reuse;
  so.max_local_bytes = co.max_local_bytes();
  so.vector_lanes = co.vector_lanes(DType::Float32);
  if (co.has_library(driver::kMatmulLibrary)) so.epilogue_check = &driver::library_runs_epilogue;
  if (co.device == target::DeviceKind::Cuda) so.device = lowering::Device::Gpu;
  c->schedule = scheduler::schedule(c->lowered, so);
  if (co.device == target::DeviceKind::Cuda) {
    // The GPU partition and its CUDA kernels (issue 35, point 3); the host side of a CUDA
    // program (launch plan, device arena) is not built yet: explain shows them.
    c->module.options = co;
    c->module.symbols = c->lowered.symbols;
    c->cuda = codegen::generate_cuda(c->schedule, co, options.record_ir);
    return c;
  }
  c->module = codegen::generate_cpp(c->schedule, co);
  return c;
}

program::LogTopics log_topics(const CompileOptions& options) {
  return options.logs ? program::LogTopics(*options.logs) : program::LogTopics::from_environment();
}

lowering::LoweringOptions lowering_options(const CompileOptions& options) {
  lowering::LoweringOptions lo;
  // Section 6.6's cost model takes the device's values: on the GPU a transcendental read
  // twice is inlined (Example 7.2).
  if (make_target(options).device == target::DeviceKind::Cuda) lo.device = lowering::Device::Gpu;
  if (make_target(options).has_library(driver::kMatmulLibrary)) {
    lo.library_for = &driver::library_for;
    lo.channels_last_output_for = &driver::channels_last_output_for;
  }
  lo.channels_last_intermediates = options.channels_last_intermediates;
  return lo;
}

lowering::LoweredGraph lower_graph(const ir::Graph& graph, const CompileOptions& options) {
  if (!options.graph_passes) return lowering::lower(graph, lowering_options(options));
  graph_passes::GraphPassOptions go;
  if (make_target(options).has_library(driver::kMatmulLibrary)) {
    go.attention_blocks = &driver::runtime_attention_blocks;
  }
  if (log_topics(options).enabled("graph_passes")) {
    go.after_pass = [](const std::string& pass, const ir::Graph& g) {
      std::cerr << "stax: graph after " << pass << ":\n" << ir::print_graph(g);
    };
  }
  graph_passes::GraphPassResult passed = graph_passes::run_graph_passes(graph, go);
  lowering::LoweredGraph lowered = lowering::lower(passed.graph, lowering_options(options));
  lowered.log.insert(lowered.log.begin(), passed.log.begin(), passed.log.end());
  return lowered;
}

std::string library_plan_dir(const CompileOptions& options) {
  runtime::JitOptions jit;
  jit.cache_dir = options.cache_dir;
  return (std::filesystem::path(runtime::resolve_cache_dir(jit)) / "library-plans").string();
}

external::MatmulWeights matmul_weights(const CompileOptions& options) {
  if (!options.measure_matmul_weights) return external::MatmulWeights::Direct;
  return options.matmul_blas ? external::MatmulWeights::Measured
                             : external::MatmulWeights::MeasuredWithoutBlas;
}

std::shared_ptr<const Compilation> analyze(const ir::Graph& graph, const CompileOptions& options) {
  return analyze_lowered(lower_graph(graph, options), options);
}

CallLayout call_layout(const codegen::GeneratedModule& module,
                       const std::map<std::string, int64_t>& values) {
  CallLayout layout;
  auto at = [&](const std::vector<index::Expr>& exprs) {
    std::vector<int64_t> out;
    for (const index::Expr& e : exprs) out.push_back(index::evaluate(e, values));
    return out;
  };
  for (const codegen::OutputBinding& b : module.outputs) {
    layout.outputs.push_back({b.from_input, b.index, b.dtype, at(b.sizes), at(b.strides),
                              index::evaluate(b.offset, values)});
  }
  layout.slot_bytes = at(module.output_slot_bytes);
  return layout;
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

// compile_lowered after lowering `graph`, the lowering counted in the front end's time.
CompiledGraph lower_and_compile(const ir::Graph& graph, const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  lowering::LoweredGraph lowered = lower_graph(graph, options);
  const double lowering_s = seconds_since(start);
  CompiledGraph out = compile_lowered(std::move(lowered), options);
  out.times_.front_end_s += lowering_s;
  return out;
}

CompiledGraph compile_lowered(lowering::LoweredGraph lowered, const CompileOptions& options) {
  CompiledGraph out;
  if (make_target(options).device == target::DeviceKind::Cuda) {
    throw std::invalid_argument("device '" + options.device +
                                "': Stax makes the GPU partition and kernels of a graph (stax "
                                "explain --device, emit --device) but cannot run them yet: the "
                                "launch plan is not built (issue 35, point 4)");
  }
  auto start = std::chrono::steady_clock::now();
  out.compilation_ = analyze_lowered(std::move(lowered), options);
  out.times_.front_end_s = seconds_since(start);
  // The layouts a caller without sizes (run_into) gives: the symbols' hints.
  const std::map<std::string, int64_t> hints = index::hint_values(out.compilation_->module.symbols);
  for (const auto& in : out.compilation_->lowered.inputs) {
    out.input_types_.push_back(
        {in.dtype,
         index::values_at_hints(in.sizes, out.compilation_->module.symbols),
         index::values_at_hints(in.strides, out.compilation_->module.symbols),
         {},
         {}});
    out.input_names_.push_back(in.name);
  }
  out.layout_ = call_layout(out.compilation_->module, hints);
  runtime::JitOptions jit;
  jit.simd = out.compilation_->module.options.simd;
  jit.cache_dir = options.cache_dir;
  start = std::chrono::steady_clock::now();
  runtime::JitResult r = runtime::compile_and_load(out.compilation_->module.source, jit);
  out.times_.cxx_compile_s = seconds_since(start);
  out.cache_hit_ = r.cache_hit;
  start = std::chrono::steady_clock::now();
  attach_library(out, r.library, r.library_path, options);
  out.times_.library_plans_s = seconds_since(start);
  if (!options.keep_analysis) {
    // What running reads: the inputs' and outputs' layouts, the entry point, the options.
    auto kept = std::make_shared<Compilation>();
    kept->lowered.name = out.compilation_->lowered.name;
    kept->lowered.inputs = out.compilation_->lowered.inputs;
    kept->lowered.outputs = out.compilation_->lowered.outputs;
    const codegen::GeneratedModule& module = out.compilation_->module;
    kept->module.entry_point = module.entry_point;
    kept->module.outputs = module.outputs;
    kept->module.output_slot_bytes = module.output_slot_bytes;
    kept->module.symbols = module.symbols;
    kept->module.arena_bytes = module.arena_bytes;
    kept->module.options = module.options;
    kept->module.externals = module.externals;
    out.compilation_ = std::move(kept);
    out.analysis_kept_ = false;
  }
  if (!runtime::cpu_supports(jit.simd)) {
    out.runnable_ = false;
    out.not_runnable_reason_ = "compiled for SIMD level " +
                               std::string(runtime::simd_level_name(jit.simd)) +
                               ", which this CPU does not support";
  }
  return out;
}

void attach_library(CompiledGraph& out, std::shared_ptr<runtime::SharedLibrary> library,
                    const std::string& library_path, const CompileOptions& options) {
  out.library_path_ = library_path;
  out.entry_ = library->symbol(out.compilation_->module.entry_point);
  out.library_ = library;
  // The program's arena and large scratch blocks come from the process's pool, shared with
  // the other programs and the outputs (runtime/block_pool.h).
  library->function<void (*)(void* (*)(int64_t, int), void (*)(void*))>("stax_use_process_pool")(
      &runtime::process_pool_take, &runtime::process_pool_give);
  // Its kernels' ranges go to the tracer the runtime has now, if any (driver/profile.h).
  library->function<void (*)(void (*)(const char*, int))>("stax_set_trace")(&driver::trace_kernel);
  driver::register_program(out.library_, library_path, out.compilation_->module.arena_bytes,
                           library->function<driver::MemoryHeldFn>("stax_memory_held"));
  // The library primitives are built now, once, not on every call.
  out.externals_ = std::make_shared<const driver::ExternalPlans>(
      out.compilation_->module.externals, out.compilation_->module.options.num_threads,
      matmul_weights(options), library_plan_dir(options), out.compilation_->module.symbols);
}

const Compilation& CompiledGraph::runtime_compilation() const {
  return *compilation_;
}

const Compilation& CompiledGraph::compilation() const {
  if (!analysis_kept_) {
    throw std::logic_error(
        "this program was compiled without keeping its analysis (CompileOptions::keep_analysis "
        "= false; torch.compile keeps it under stax.explain, a debug_dir, the fusion, schedule, "
        "ir and output_code logs, and freeze_parameters)");
  }
  return *compilation_;
}

// The programs of a graph with size symbols, by the sizes they were compiled for, the least
// recently used first. Shared by the copies of one CompiledGraph.
struct CompiledGraph::SymbolicPrograms {
  ir::Graph graph;
  CompileOptions options;
  std::map<std::string, int64_t> hints;
  // Why the graph is compiled per size (the message of the stage that refused its symbols);
  // "": one program takes every size, `programs` stays empty.
  std::string per_size_reason;
  std::mutex mutex;
  std::list<std::pair<std::map<std::string, int64_t>, std::shared_ptr<const CompiledGraph>>>
      programs;
  // The values check_values passed last, the most recent at the back.
  std::list<std::map<std::string, int64_t>> checked;
};

namespace {
// How many checked values a graph remembers: a decoder meets each length once, a padded
// batch a few bucket sizes again and again.
constexpr size_t kCheckedValuesKept = 16;
}  // namespace

CompiledGraph load_compiled(std::shared_ptr<const Compilation> runtime_half,
                            std::shared_ptr<runtime::SharedLibrary> library,
                            const std::string& library_path, const ir::Graph* symbolic_graph,
                            const CompileOptions& options) {
  CompiledGraph out;
  out.compilation_ = std::move(runtime_half);
  out.analysis_kept_ = false;
  const index::SymbolTable& symbols = out.compilation_->module.symbols;
  for (const auto& in : out.compilation_->lowered.inputs) {
    out.input_types_.push_back({in.dtype,
                                index::values_at_hints(in.sizes, symbols),
                                index::values_at_hints(in.strides, symbols),
                                {},
                                {}});
    out.input_names_.push_back(in.name);
  }
  out.layout_ = call_layout(out.compilation_->module, index::hint_values(symbols));
  if (!symbols.empty()) {
    if (symbolic_graph == nullptr) {
      throw std::invalid_argument("load_compiled: a program over size symbols needs its graph");
    }
    auto symbolic = std::make_shared<CompiledGraph::SymbolicPrograms>();
    symbolic->graph = *symbolic_graph;
    symbolic->options = options;
    symbolic->hints = index::hint_values(symbols);
    out.symbolic_ = std::move(symbolic);
  }
  attach_library(out, std::move(library), library_path, options);
  return out;
}

CompiledGraph compile(const ir::Graph& graph, const CompileOptions& options) {
  if (!graph.is_symbolic()) return lower_and_compile(graph, options);
  if (options.max_symbolic_sizes < 1) {
    throw std::invalid_argument("CompileOptions::max_symbolic_sizes must be at least 1, got " +
                                std::to_string(options.max_symbolic_sizes));
  }
  std::map<std::string, int64_t> hints;
  for (const auto& [name, facts] : graph.size_symbols()) hints.emplace(name, facts.hint);
  auto symbolic = std::make_shared<CompiledGraph::SymbolicPrograms>();
  symbolic->graph = graph;
  symbolic->options = options;
  symbolic->hints = hints;
  // Issue 33: one program for every size where every stage takes the symbols.
  try {
    CompiledGraph out = lower_and_compile(graph, options);
    out.symbolic_ = std::move(symbolic);
    return out;
  } catch (const index::SymbolicSizesRefused& refused) {
    if (!options.per_size_programs) throw;
    symbolic->per_size_reason = refused.what();
  }
  // Else the program at the hints (what a caller without sizes, run_into, gets), and one per
  // further size as calls meet it.
  CompiledGraph out = compile(graph_passes::bind_sizes(graph, hints), options);
  out.symbolic_ = std::move(symbolic);
  return out;
}

bool CompiledGraph::takes_every_size() const {
  return symbolic_ != nullptr && symbolic_->per_size_reason.empty();
}

std::string CompiledGraph::per_size_reason() const {
  return symbolic_ != nullptr ? symbolic_->per_size_reason : "";
}

std::vector<std::map<std::string, int64_t>> CompiledGraph::compiled_sizes() const {
  std::vector<std::map<std::string, int64_t>> sizes;
  if (!symbolic_ || takes_every_size()) return sizes;
  sizes.push_back(symbolic_->hints);
  const std::lock_guard<std::mutex> lock(symbolic_->mutex);
  for (const auto& entry : symbolic_->programs) sizes.push_back(entry.first);
  return sizes;
}

std::map<std::string, int64_t> CompiledGraph::symbol_values(
    const std::vector<Tensor>& inputs) const {
  std::vector<std::vector<int64_t>> sizes;
  for (const Tensor& t : inputs) sizes.push_back(t.defined() ? t.sizes() : std::vector<int64_t>{});
  return symbol_values(sizes);
}

std::map<std::string, int64_t> CompiledGraph::symbol_values(
    const std::vector<std::vector<int64_t>>& input_sizes) const {
  if (!symbolic_) return {};
  std::map<std::string, int64_t> values;
  try {
    values = ir::symbol_values_of_call(symbolic_->graph, input_sizes);
  } catch (const ir::GraphError& e) {
    throw InputError(e.what());
  }
  check_values(values);
  return values;
}

void CompiledGraph::check_values(const std::map<std::string, int64_t>& values) const {
  SymbolicPrograms& s = *symbolic_;
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    for (auto it = s.checked.begin(); it != s.checked.end(); ++it) {
      if (*it == values) {
        s.checked.splice(s.checked.end(), s.checked, it);
        return;
      }
    }
  }
  try {
    ir::check_size_values(s.graph, values, /*require_all=*/true);
    ir::check_extents_at(s.graph, values);
  } catch (const ir::GraphError& e) {
    throw InputError(e.what());
  }
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (s.checked.size() >= kCheckedValuesKept) s.checked.pop_front();
  s.checked.push_back(values);
}

CallLayout CompiledGraph::layout_at(const std::map<std::string, int64_t>& values) const {
  if (symbolic_) {
    check_values(values);
  } else if (!values.empty()) {
    throw InputError("graph '" + compilation_->lowered.name +
                     "' has no size symbols, got values for " + values.begin()->first);
  }
  CallLayout layout;
  if (symbolic_ && !takes_every_size()) {
    if (const std::shared_ptr<const CompiledGraph> program = program_for(values)) {
      layout = program->layout_at({});
      return layout;
    }
    layout = layout_;
  } else {
    layout = symbolic_ ? call_layout(compilation_->module, values) : layout_;
  }
  for (const auto& in : compilation_->lowered.inputs) {
    InputLayout l;
    for (const index::Expr& e : in.sizes) l.sizes.push_back(index::evaluate(e, values));
    for (const index::Expr& e : in.strides) l.strides.push_back(index::evaluate(e, values));
    layout.inputs.push_back(std::move(l));
  }
  return layout;
}

std::map<std::string, ir::SymbolSource> CompiledGraph::symbol_sources() const {
  if (!symbolic_) return {};
  std::vector<std::vector<index::Expr>> sizes;
  for (const auto& id : symbolic_->graph.inputs()) {
    sizes.push_back(ir::symbolic_sizes_of(symbolic_->graph.value(id).type));
  }
  return ir::symbol_sources(sizes);
}

std::shared_ptr<const CompiledGraph> CompiledGraph::program_for(
    const std::map<std::string, int64_t>& values) const {
  if (values == symbolic_->hints) return nullptr;
  SymbolicPrograms& s = *symbolic_;
  const std::lock_guard<std::mutex> lock(s.mutex);
  for (auto it = s.programs.begin(); it != s.programs.end(); ++it) {
    if (it->first == values) {
      s.programs.splice(s.programs.end(), s.programs, it);  // now the most recently used
      return s.programs.back().second;
    }
  }
  auto program = std::make_shared<const CompiledGraph>(
      compile(graph_passes::bind_sizes(s.graph, values), s.options));
  // The hints' program is this object; the others share max_symbolic_sizes - 1 places (a
  // program evicted while a call runs it lives until that call returns).
  while (!s.programs.empty() &&
         static_cast<int>(s.programs.size()) >= s.options.max_symbolic_sizes - 1) {
    s.programs.pop_front();
  }
  if (s.options.max_symbolic_sizes > 1) s.programs.emplace_back(values, program);
  return program;
}

std::vector<Tensor> CompiledGraph::run(const std::vector<Tensor>& inputs,
                                       const RunOptions& options) const {
  const CallLayout* layout = &layout_;
  CallLayout at_call;
  if (takes_every_size()) {
    // The wrapper reads the symbols from the inputs' sizes; the outputs' layouts are theirs.
    at_call = call_layout(compilation_->module, symbol_values(inputs));
    layout = &at_call;
  } else if (symbolic_) {
    if (const std::shared_ptr<const CompiledGraph> program = program_for(symbol_values(inputs))) {
      return program->run(inputs, options);
    }
  }
  if (!runnable_) throw std::runtime_error(not_runnable_reason_);
  check_thread_count(options.num_threads);
  if (inputs.size() != input_types_.size()) {
    throw InputError("expected " + std::to_string(input_types_.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  }
  std::vector<StaxTensorArg> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) throw InputError("input '" + input_names_[i] + "' is undefined");
    if (t.dtype() != input_types_[i].dtype) {
      throw InputError("input '" + input_names_[i] + "' (argument " + std::to_string(i) +
                       "): expected dtype " + std::string(dtype_name(input_types_[i].dtype)) +
                       ", got " + std::string(dtype_name(t.dtype())));
    }
    args.push_back({t.data(), static_cast<int64_t>(t.dim()), t.sizes().data(), t.strides().data()});
  }
  const auto& module = compilation_->module;
  std::vector<void*> slots(layout->slot_bytes.size(), nullptr);
  OutputAllocator allocator;
  char err[1024] = {0};
  int status = 0;
  {
    const driver::ProfileScope profile(driver::ProfileSite::Entry);
    status = reinterpret_cast<EntryFn>(entry_)(
        args.data(), static_cast<int64_t>(args.size()), slots.data(), &allocate_output, &allocator,
        &driver::ExternalPlans::call, const_cast<driver::ExternalPlans*>(externals_.get()),
        release_fn(options), release_ctx(options),
        options.num_threads > 0 ? options.num_threads : module.options.num_threads, err,
        sizeof err);
  }
  throw_on_status(status, err);
  std::vector<Tensor> outputs;
  for (const auto& b : layout->outputs) {
    if (b.from_input) {
      const Tensor& in = inputs[static_cast<size_t>(b.index)];
      outputs.push_back(Tensor(in.storage(), b.dtype, b.sizes, b.strides, in.offset() + b.offset));
      continue;
    }
    void* data = slots[static_cast<size_t>(b.index)];
    std::shared_ptr<Storage> storage;
    for (const auto& s : allocator.storages) {
      if (s->data() == data) storage = s;
    }
    if (!storage) throw std::logic_error("generated wrapper returned an unknown output buffer");
    outputs.push_back(Tensor(storage, b.dtype, b.sizes, b.strides, b.offset));
  }
  return outputs;
}

namespace {

// The caller's output buffers: one per slot, 64-byte aligned; null only where `null_allowed`
// (run_into_pooled takes those from the pool).
void check_output_slots(const std::vector<int64_t>& slot_bytes,
                        const std::vector<void*>& output_slots, bool null_allowed) {
  if (output_slots.size() != slot_bytes.size()) {
    throw InputError("expected " + std::to_string(slot_bytes.size()) + " output buffers, got " +
                     std::to_string(output_slots.size()));
  }
  for (size_t k = 0; k < output_slots.size(); ++k) {
    if (output_slots[k] == nullptr && !null_allowed) {
      throw InputError("output buffer " + std::to_string(k) + " is null");
    }
    if (reinterpret_cast<uintptr_t>(output_slots[k]) % 64 != 0) {
      throw InputError("output buffer " + std::to_string(k) + " is not 64-byte aligned");
    }
  }
}

}  // namespace

void CompiledGraph::run_into(const std::vector<const void*>& input_data,
                             const std::vector<void*>& output_slots,
                             const RunOptions& options) const {
  check_output_slots(layout_.slot_bytes, output_slots, false);
  run_entry(input_data, nullptr, &caller_slot, const_cast<void**>(output_slots.data()), options);
}

void CompiledGraph::run_into(const std::vector<const void*>& input_data,
                             const std::vector<InputLayout>& input_layouts,
                             const std::vector<void*>& output_slots,
                             const RunOptions& options) const {
  std::vector<void*> slots = output_slots;
  std::vector<int64_t> bytes;
  for (size_t k = 0; k < slots.size(); ++k) {
    if (slots[k] == nullptr) throw InputError("output buffer " + std::to_string(k) + " is null");
  }
  run_into_pooled(input_data, input_layouts, slots, options, &bytes);
}

namespace {

// The slots of run_into_pooled: the caller's, and the null ones taken from the pool when the
// program first writes them.
struct PooledSlots {
  void** slots;
  const std::vector<int64_t>* slot_bytes;
  std::vector<void*> taken;
};

void* caller_or_pooled_slot(void* ctx, int64_t slot, int64_t nbytes) {
  auto* s = static_cast<PooledSlots*>(ctx);
  void*& block = s->slots[slot];
  if (block != nullptr) return block;
  const int64_t bytes = std::max(nbytes, s->slot_bytes->at(static_cast<size_t>(slot)));
  block = runtime::process_pool_take(bytes, 0);  // NULL: the program reports out of memory
  if (block != nullptr) s->taken.push_back(block);
  return block;
}

}  // namespace

void CompiledGraph::run_into_pooled(const std::vector<const void*>& input_data,
                                    std::vector<void*>& output_slots,
                                    const RunOptions& options) const {
  run_pooled_entry(input_data, nullptr, layout_.slot_bytes, output_slots, options);
}

void CompiledGraph::run_into_pooled(const std::vector<const void*>& input_data,
                                    const std::vector<InputLayout>& input_layouts,
                                    std::vector<void*>& output_slots, const RunOptions& options,
                                    std::vector<int64_t>* slot_bytes) const {
  if (input_layouts.size() != input_data.size()) {
    throw InputError("expected a layout for each of the " + std::to_string(input_data.size()) +
                     " inputs, got " + std::to_string(input_layouts.size()));
  }
  if (!symbolic_) {
    if (slot_bytes != nullptr) *slot_bytes = layout_.slot_bytes;
    run_pooled_entry(input_data, &input_layouts, layout_.slot_bytes, output_slots, options);
    return;
  }
  std::vector<std::vector<int64_t>> sizes;
  sizes.reserve(input_layouts.size());
  for (const InputLayout& l : input_layouts) sizes.push_back(l.sizes);
  const std::map<std::string, int64_t> values = symbol_values(sizes);
  if (!takes_every_size()) {
    // Compiled per size: the program of these sizes (this one at the hints), whose wrapper
    // checks the layouts as static.
    const std::shared_ptr<const CompiledGraph> program = program_for(values);
    const CompiledGraph& at = program ? *program : *this;
    if (slot_bytes != nullptr) *slot_bytes = at.layout_.slot_bytes;
    at.run_pooled_entry(input_data, &input_layouts, at.layout_.slot_bytes, output_slots, options);
    return;
  }
  const CallLayout at_call = call_layout(compilation_->module, values);
  if (slot_bytes != nullptr) *slot_bytes = at_call.slot_bytes;
  run_pooled_entry(input_data, &input_layouts, at_call.slot_bytes, output_slots, options);
}

void CompiledGraph::run_pooled_entry(const std::vector<const void*>& input_data,
                                     const std::vector<InputLayout>* layouts,
                                     const std::vector<int64_t>& slot_bytes,
                                     std::vector<void*>& output_slots,
                                     const RunOptions& options) const {
  check_output_slots(slot_bytes, output_slots, true);
  PooledSlots pooled{output_slots.data(), &slot_bytes, {}};
  auto give_back = [&] {
    for (void* block : pooled.taken) runtime::process_block_pool().give(block);
    for (size_t k = 0; k < output_slots.size(); ++k) {
      if (std::find(pooled.taken.begin(), pooled.taken.end(), output_slots[k]) !=
          pooled.taken.end()) {
        output_slots[k] = nullptr;
      }
    }
  };
  try {
    run_entry(input_data, layouts, &caller_or_pooled_slot, &pooled, options);
  } catch (...) {
    give_back();
    throw;
  }
  for (size_t k = 0; k < output_slots.size(); ++k) {
    if (output_slots[k] == nullptr) {
      give_back();
      throw std::logic_error("generated wrapper never allocated output slot " + std::to_string(k));
    }
  }
}

void CompiledGraph::run_entry(const std::vector<const void*>& input_data,
                              const std::vector<InputLayout>* layouts, StaxAllocFn alloc,
                              void* alloc_ctx, const RunOptions& options) const {
  if (!runnable_) throw std::runtime_error(not_runnable_reason_);
  check_thread_count(options.num_threads);
  const auto& module = compilation_->module;
  if (input_data.size() != input_types_.size()) {
    throw InputError("expected " + std::to_string(input_types_.size()) + " inputs, got " +
                     std::to_string(input_data.size()));
  }
  std::vector<StaxTensorArg> args(input_data.size());
  for (size_t i = 0; i < input_data.size(); ++i) {
    if (layouts != nullptr) {
      const InputLayout& l = (*layouts)[i];
      if (l.sizes.size() != l.strides.size()) {
        throw InputError("input '" + input_names_[i] + "': " + std::to_string(l.sizes.size()) +
                         " sizes but " + std::to_string(l.strides.size()) + " strides");
      }
      args[i] = {input_data[i], static_cast<int64_t>(l.sizes.size()), l.sizes.data(),
                 l.strides.data()};
      continue;
    }
    const ir::TensorType& t = input_types_[i];
    args[i] = {input_data[i], static_cast<int64_t>(t.sizes.size()), t.sizes.data(),
               t.strides.data()};
  }
  std::vector<void*> slots(layout_.slot_bytes.size(), nullptr);
  char err[1024] = {0};
  int status = 0;
  {
    const driver::ProfileScope profile(driver::ProfileSite::Entry);
    status = reinterpret_cast<EntryFn>(entry_)(
        args.data(), static_cast<int64_t>(args.size()), slots.data(), alloc, alloc_ctx,
        &driver::ExternalPlans::call, const_cast<driver::ExternalPlans*>(externals_.get()),
        release_fn(options), release_ctx(options),
        options.num_threads > 0 ? options.num_threads : module.options.num_threads, err,
        sizeof err);
  }
  throw_on_status(status, err);
}

}  // namespace stax
