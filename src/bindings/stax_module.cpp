// stax._C, the extension module under the Python package: compiles Stax graph text
// (ir::parse_graph, stax::compile) and runs the result on caller-owned memory
// (CompiledGraph::run_into), explains compilations, and reports the op registry's schemas,
// the SIMD levels, the JIT cache directory and compiler invocations; for tests it also runs the
// eager interpreter and gives the comparison tolerances. The torch.compile bridge
// (python/stax) is its only intended caller besides the tests; it hands tensors over as data
// pointers laid out as compiled.
//
// C++ errors become Python exceptions with their message unchanged: bad graphs and bad
// arguments (ir::ParseError, ir::GraphError, std::invalid_argument, which includes
// stax::InputError) ValueError; index values PyTorch refuses with IndexError (ir::IndexError)
// IndexError; everything else, the C++ compiler's failures (runtime::CompileError, whose
// message holds the compiler output) included, RuntimeError.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <Python.h>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bindings/output_pool.h"
#include "bindings/package_bindings.h"
#include "driver/compiler.h"
#include "driver/explain.h"
#include "driver/external_calls.h"
#include "driver/frozen_weights.h"
#include "driver/memory_stats.h"
#include "driver/profile.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "external/matmul.h"
#include "graph_passes/bind_sizes.h"
#include "index/expr.h"
#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/index_rule.h"
#include "ir/op_schema.h"
#include "program/log_topics.h"
#include "runtime/block_pool.h"
#include "runtime/cache_info.h"
#include "runtime/jit.h"
#include "runtime/simd.h"
#include "runtime/tensor.h"

#ifndef STAX_VERSION
#error "the build must define STAX_VERSION (the project version)"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace stax::bindings {
namespace {

// torch.profiler ranges around library calls (driver::TraceScope) while a region's run is
// profiled: PyTorch's own record-function ops, entered and left with the GIL taken on the
// calling thread. Set per profiled run by the Python side (trace_library_calls).
struct ProfilerOps {
  nb::object enter;
  nb::object exit;
};
ProfilerOps* profiler_ops = nullptr;
thread_local std::vector<nb::object> open_ranges;

void trace_library_call(const char* name, bool begin) {
  nb::gil_scoped_acquire gil;
  try {
    if (begin) {
      open_ranges.push_back(profiler_ops->enter(name, nb::none()));
    } else if (!open_ranges.empty()) {
      nb::object handle = std::move(open_ranges.back());
      open_ranges.pop_back();
      profiler_ops->exit(handle);
    }
  } catch (nb::python_error& e) {
    e.discard_as_unraisable("stax: tracing a library call");
  }
}

void trace_library_calls(bool on) {
  if (on && profiler_ops == nullptr) {
    nb::object ops = nb::module_::import_("torch").attr("ops").attr("profiler");
    profiler_ops = new ProfilerOps{ops.attr("_record_function_enter_new"),
                                   ops.attr("_record_function_exit").attr("_RecordFunction")};
  }
  driver::set_trace_hook(on ? &trace_library_call : nullptr);
}

// (name, dtype, sizes, strides) of one graph input.
using InputInfo = std::tuple<std::string, std::string, std::vector<int64_t>, std::vector<int64_t>>;
// (from_input, index, dtype, sizes, strides, offset) of one graph output: index is the output
// slot, or the input position when the output is a view of an input.
using OutputInfo =
    std::tuple<bool, int, std::string, std::vector<int64_t>, std::vector<int64_t>, int64_t>;

// `logs`: the topics the C++ side prints (program/log_topics.h); None: STAX_LOGS's.
CompileOptions make_options(int num_threads, const std::string& simd, const std::string& cache_dir,
                            bool record_ir, bool graph_passes,
                            const std::optional<std::vector<std::string>>& logs) {
  CompileOptions options;
  options.logs = logs;
  options.graph_passes = graph_passes;
  if (num_threads < 0) {
    throw std::invalid_argument("num_threads must be 0 (all hardware threads) or more, got " +
                                std::to_string(num_threads));
  }
  options.num_threads = num_threads;
  if (!simd.empty()) {
    options.simd = runtime::parse_simd_level(simd);
    if (!options.simd) {
      throw std::invalid_argument("unknown SIMD level '" + simd +
                                  "' (expected avx512, avx2, scalar, or '' for the widest the "
                                  "CPU supports)");
    }
  }
  options.cache_dir = cache_dir;
  options.record_ir = record_ir;
  return options;
}

// Reads the addresses in `sequence` (a list or tuple of ints) into `out`, resized to match.
// This is the per-call path: no conversion objects, no per-element allocation.
template <class Pointer>
void read_addresses(nb::handle sequence, const char* what, std::vector<Pointer>& out) {
  PyObject* object = sequence.ptr();
  if (!PyList_Check(object) && !PyTuple_Check(object)) {
    throw nb::type_error((std::string(what) + " must be a list of data pointers (int), got " +
                          Py_TYPE(object)->tp_name)
                             .c_str());
  }
  const Py_ssize_t count = PySequence_Fast_GET_SIZE(object);
  PyObject** items = PySequence_Fast_ITEMS(object);
  out.resize(static_cast<size_t>(count));
  for (Py_ssize_t i = 0; i < count; ++i) {
    void* address = PyLong_AsVoidPtr(items[i]);
    if (address == nullptr && PyErr_Occurred()) throw nb::python_error();
    out[static_cast<size_t>(i)] = static_cast<Pointer>(address);
  }
}

// Reads a list of int tuples (each input's torch.Size or stride()) into `out`: the per-call
// path of a program over size symbols, as read_addresses.
void read_int_tuples(nb::handle sequence, const char* what,
                     std::vector<std::vector<int64_t>>& out) {
  PyObject* object = sequence.ptr();
  if (!PyList_Check(object) && !PyTuple_Check(object)) {
    throw nb::type_error(
        (std::string(what) + " must be a list of tuples of ints, got " + Py_TYPE(object)->tp_name)
            .c_str());
  }
  const Py_ssize_t count = PySequence_Fast_GET_SIZE(object);
  PyObject** items = PySequence_Fast_ITEMS(object);
  out.resize(static_cast<size_t>(count));
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* item = items[i];
    if (!PyTuple_Check(item)) {
      throw nb::type_error((std::string(what) + "[" + std::to_string(i) +
                            "] must be a tuple of ints, got " + Py_TYPE(item)->tp_name)
                               .c_str());
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(item);
    std::vector<int64_t>& v = out[static_cast<size_t>(i)];
    v.resize(static_cast<size_t>(n));
    for (Py_ssize_t d = 0; d < n; ++d) {
      const long long x = PyLong_AsLongLong(PyTuple_GET_ITEM(item, d));
      if (x == -1 && PyErr_Occurred()) throw nb::python_error();
      v[static_cast<size_t>(d)] = static_cast<int64_t>(x);
    }
  }
}

void run_compiled(const CompiledGraph& compiled, nb::handle inputs, nb::handle outputs,
                  int num_threads) {
  std::vector<const void*> input_data;
  std::vector<void*> output_slots;
  read_addresses(inputs, "inputs", input_data);
  read_addresses(outputs, "outputs", output_slots);
  RunOptions options;
  options.num_threads = num_threads;
  nb::gil_scoped_release release;
  compiled.run_into(input_data, output_slots, options);
}

// Takes the input owners out of `owners` (which is left empty) into `held` and returns run
// options that drop each after the program's last read of its input.
RunOptions releasing_options(nb::list owners, size_t num_inputs, std::vector<nb::object>& held,
                             int num_threads) {
  if (owners.size() != num_inputs) {
    throw std::invalid_argument("run_releasing: " + std::to_string(owners.size()) + " owners for " +
                                std::to_string(num_inputs) + " inputs");
  }
  held.reserve(owners.size());
  for (nb::handle o : owners) held.push_back(nb::borrow(o));
  owners.clear();
  RunOptions options;
  options.num_threads = num_threads;
  // Called on this thread between the program's statements, without the GIL.
  options.on_input_released = [&held](size_t input) {
    nb::gil_scoped_acquire gil;
    held.at(input) = nb::object();
  };
  return options;
}

// run_compiled for a caller that gives up its inputs (issue 16, point 5): `owners` holds the
// objects that keep the inputs alive (the tensors), one per input; they move out of the list
// (which is left empty) and each is dropped when the program is done reading its input, so
// that memory no one else holds is freed during the run.
void run_releasing(const CompiledGraph& compiled, nb::list owners, nb::handle inputs,
                   nb::handle outputs, int num_threads) {
  std::vector<const void*> input_data;
  std::vector<void*> output_slots;
  read_addresses(inputs, "inputs", input_data);
  read_addresses(outputs, "outputs", output_slots);
  std::vector<nb::object> held;
  const RunOptions options = releasing_options(owners, input_data.size(), held, num_threads);
  nb::gil_scoped_release release;
  compiled.run_into(input_data, output_slots, options);
}

// The run of the torch.compile bridge (issue 32, point 4): as run_releasing (when `owners` is
// not None) or run_compiled, but an output slot given as 0 whose layout (sizes, strides,
// dtype) `pooled` names is taken from the process's pool when the program first writes it
// (CompiledGraph::run_into_pooled). Returns one entry per slot: a DLPack capsule owning the
// slot's block for those, None for the caller's. Issue 33: `sizes` and `strides` (each
// input's, or None) run a program over size symbols at the inputs' sizes.
nb::list run_pooled(const CompiledGraph& compiled, nb::object owners, nb::handle inputs,
                    nb::handle outputs, nb::list pooled, int num_threads, nb::handle input_sizes,
                    nb::handle input_strides) {
  std::vector<const void*> input_data;
  std::vector<void*> output_slots;
  read_addresses(inputs, "inputs", input_data);
  read_addresses(outputs, "outputs", output_slots);
  std::optional<std::vector<InputLayout>> input_layouts;
  if (!input_sizes.is_none() || !input_strides.is_none()) {
    std::vector<std::vector<int64_t>> all_sizes, all_strides;
    read_int_tuples(input_sizes, "sizes", all_sizes);
    read_int_tuples(input_strides, "strides", all_strides);
    if (all_sizes.size() != input_data.size() || all_strides.size() != input_data.size()) {
      throw std::invalid_argument("run_pooled: " + std::to_string(input_data.size()) + " inputs, " +
                                  std::to_string(all_sizes.size()) + " sizes and " +
                                  std::to_string(all_strides.size()) + " strides");
    }
    input_layouts.emplace(input_data.size());
    for (size_t i = 0; i < input_data.size(); ++i) {
      (*input_layouts)[i] = {std::move(all_sizes[i]), std::move(all_strides[i])};
    }
  }
  if (pooled.size() != output_slots.size()) {
    throw std::invalid_argument("run_pooled: " + std::to_string(pooled.size()) + " layouts for " +
                                std::to_string(output_slots.size()) + " output slots");
  }
  using Layout = std::tuple<std::vector<int64_t>, std::vector<int64_t>, std::string>;
  std::vector<std::optional<Layout>> layouts(output_slots.size());
  for (size_t k = 0; k < output_slots.size(); ++k) {
    if (pooled[k].is_none()) continue;
    if (output_slots[k] != nullptr) {
      throw std::invalid_argument("run_pooled: slot " + std::to_string(k) +
                                  " has both a pointer and a pooled layout");
    }
    layouts[k] = nb::cast<Layout>(pooled[k]);
  }
  std::vector<nb::object> held;
  RunOptions options;
  options.num_threads = num_threads;
  if (!owners.is_none()) {
    options = releasing_options(nb::cast<nb::list>(owners), input_data.size(), held, num_threads);
  }
  std::vector<int64_t> slot_bytes = compiled.output_slot_bytes();
  {
    nb::gil_scoped_release release;
    if (input_layouts) {
      compiled.run_into_pooled(input_data, *input_layouts, output_slots, options, &slot_bytes);
    } else {
      compiled.run_into_pooled(input_data, output_slots, options);
    }
  }
  // Every pooled slot's block goes into a capsule, or back to the pool if one cannot be made.
  nb::list result;
  size_t k = 0;
  try {
    for (; k < output_slots.size(); ++k) {
      if (!layouts[k]) {
        result.append(nb::none());
        continue;
      }
      const auto& [sizes, strides, dtype] = *layouts[k];
      result.append(
          nb::steal(pooled_block_capsule(output_slots[k], sizes, strides, dtype, slot_bytes[k])));
    }
  } catch (...) {
    for (; k < output_slots.size(); ++k) {
      if (layouts[k]) runtime::process_block_pool().give(output_slots[k]);
    }
    throw;
  }
  return result;
}

// (site, source, input position, input name, why_not) per convolution call reading weights
// (driver/frozen_weights.h): what freeze_parameters may pack.
using WeightSiteInfo = std::tuple<size_t, std::string, int, std::string, std::string>;
std::vector<WeightSiteInfo> weight_site_infos(const CompiledGraph& compiled) {
  std::vector<WeightSiteInfo> infos;
  for (const driver::WeightSite& w : driver::weight_sites(compiled.compilation())) {
    infos.emplace_back(w.site, w.source, w.input, w.input_name, w.why_not);
  }
  return infos;
}

// Packs site `site`'s weights from graph input data at `input_address` (the input's element 0,
// as run() is given it); returns the packed bytes, 0 when the primitive reads them in place.
size_t pack_site_weights(const CompiledGraph& compiled, size_t site, uintptr_t input_address,
                         int num_threads) {
  for (const driver::WeightSite& w : driver::weight_sites(compiled.compilation())) {
    if (w.site != site) continue;
    if (!w.why_not.empty()) {
      throw std::invalid_argument("pack_weights: site " + std::to_string(site) + " (" + w.source +
                                  "): " + w.why_not);
    }
    if (input_address == 0) throw std::invalid_argument("pack_weights: a null input pointer");
    const char* weights = reinterpret_cast<const char*>(input_address) + w.offset_bytes;
    nb::gil_scoped_release release;
    return compiled.external_plans().pack_weights(site, weights, num_threads);
  }
  throw std::invalid_argument("pack_weights: site " + std::to_string(site) +
                              " is not a convolution reading weights (weight_sites)");
}

std::vector<InputInfo> input_infos(const CompiledGraph& compiled) {
  std::vector<InputInfo> infos;
  for (size_t k = 0; k < compiled.input_types().size(); ++k) {
    const ir::TensorType& t = compiled.input_types()[k];
    infos.emplace_back(compiled.input_names()[k], std::string(dtype_name(t.dtype)), t.sizes,
                       t.strides);
  }
  return infos;
}

std::vector<OutputInfo> output_infos(const CompiledGraph& compiled) {
  std::vector<OutputInfo> infos;
  for (const auto& out : compiled.outputs()) {
    infos.emplace_back(out.from_input, out.index, std::string(dtype_name(out.dtype)), out.sizes,
                       out.strides, out.offset);
  }
  return infos;
}

// The eager interpreter (issue 14: the oracle of the contractions, tested against torch in
// python/tests/test_contraction_eager.py): runs graph text on inputs given as data pointers
// laid out with the graph's declared sizes and strides (read in place, not copied) and
// returns each output as (dtype, sizes, its elements in row-major order as bytes).
using EagerOutput = std::tuple<std::string, std::vector<int64_t>, nb::bytes>;
std::vector<EagerOutput> run_eager(const std::string& text, nb::handle inputs,
                                   const std::string& filename,
                                   const std::map<std::string, int64_t>& sizes) {
  // A graph with size symbols runs as the graph of the sizes given (issue 33).
  const ir::Graph parsed = ir::parse_graph(text, filename);
  const ir::Graph graph =
      parsed.is_symbolic() || !sizes.empty() ? graph_passes::bind_sizes(parsed, sizes) : parsed;
  std::vector<const void*> addresses;
  read_addresses(inputs, "inputs", addresses);
  if (addresses.size() != graph.inputs().size()) {
    throw std::invalid_argument("eager_run: graph '" + graph.name() + "' has " +
                                std::to_string(graph.inputs().size()) + " inputs, got " +
                                std::to_string(addresses.size()) + " data pointers");
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const ir::TensorType& t = graph.value(graph.inputs()[i]).type;
    int64_t extent = 1;  // elements up to the last one the layout reaches
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      extent = t.sizes[d] == 0 ? 0 : extent + (t.sizes[d] - 1) * t.strides[d];
      if (extent == 0) break;
    }
    // No deleter: the caller owns the memory, which outlives the call.
    auto storage =
        std::make_shared<Storage>(const_cast<void*>(addresses[i]),
                                  static_cast<size_t>(extent) * dtype_size(t.dtype), nullptr);
    tensors.emplace_back(std::move(storage), t.dtype, t.sizes, t.strides, 0);
  }
  std::vector<Tensor> outputs;
  {
    nb::gil_scoped_release release;
    outputs = eager::run(graph, tensors);
  }
  std::vector<EagerOutput> out;
  for (const Tensor& t : outputs) {
    const Tensor dense = t.contiguous_copy();
    const size_t bytes = static_cast<size_t>(dense.numel()) * dtype_size(dense.dtype());
    out.emplace_back(std::string(dtype_name(t.dtype())), t.sizes(),
                     nb::bytes(static_cast<const char*>(dense.data()), bytes));
  }
  return out;
}

// (rtol, atol) of each graph output: how closely a compiled result must match eager's
// (driver/tolerance.h).
std::vector<std::tuple<double, double>> tolerances_of(const std::string& text,
                                                      const std::string& filename) {
  std::vector<std::tuple<double, double>> out;
  for (const Tolerance& t : output_tolerances(ir::parse_graph(text, filename))) {
    out.emplace_back(t.rtol, t.atol);
  }
  return out;
}

std::vector<std::string> supported_simd_levels() {
  std::vector<std::string> names;
  for (runtime::SimdLevel level :
       {runtime::SimdLevel::Avx512, runtime::SimdLevel::Avx2, runtime::SimdLevel::Scalar}) {
    if (runtime::cpu_supports(level)) names.emplace_back(runtime::simd_level_name(level));
  }
  return names;
}

// (op name, [(parameter name, keyword_only)] in schema order) for every registered op: what
// the bridge needs to spell a node's arguments in the text format.
using OpParams = std::vector<std::tuple<std::string, bool>>;
std::vector<std::tuple<std::string, OpParams>> op_schemas() {
  std::vector<std::tuple<std::string, OpParams>> schemas;
  for (const std::string& name : ir::registered_op_names()) {
    const ir::OpSchema* schema = ir::find_op_schema(name);
    OpParams params;
    for (const ir::Param& param : schema->params)
      params.emplace_back(param.name, param.keyword_only);
    schemas.emplace_back(name, std::move(params));
  }
  return schemas;
}

nb::dict pool_stats_dict() {
  const runtime::BlockPoolStats s = output_pool_stats();
  nb::dict d;
  d["cached_blocks"] = s.cached_blocks;
  d["cached_bytes"] = s.cached_bytes;
  d["hits"] = s.hits;
  d["misses"] = s.misses;
  d["huge_page_blocks"] = s.huge_page_blocks;
  d["trims"] = s.trims;
  d["live_bytes"] = s.live_bytes;
  d["peak_live_bytes"] = s.peak_live_bytes;
  d["evictions"] = s.evictions;
  d["splits"] = s.splits;
  d["allocated_bytes"] = s.allocated_bytes;
  d["assembled"] = s.assembled;
  return d;
}

// stax.memory_stats(): the output pool, the loaded programs' arenas, and scratch memory.
nb::dict memory_stats_dict() {
  const driver::MemoryStats m = driver::memory_stats();
  nb::list programs;
  for (const driver::ProgramMemory& p : m.programs) {
    nb::dict d;
    d["library"] = p.library_path;
    d["arena_bytes"] = p.arena_bytes;
    d["held_bytes"] = p.arena_held_bytes;
    d["scratch_bytes"] = p.scratch_bytes;
    programs.append(d);
  }
  nb::dict arenas;
  arenas["held_bytes"] = m.arena_held_bytes;
  arenas["programs"] = programs;
  nb::dict scratch;
  scratch["program_bytes"] = m.scratch_bytes;
  scratch["library_workspace_bytes"] = m.library_workspace_bytes;
  nb::dict d;
  d["output_pool"] = pool_stats_dict();
  d["arenas"] = arenas;
  d["scratch"] = scratch;
  return d;
}

// stax._C.SymbolicSizesRefused (a ValueError): a stage does not take a graph's size symbols
// yet (index::SymbolicSizesRefused), the bridge then compiles the graph per size.
PyObject* symbolic_sizes_refused_type = nullptr;

void translate_exception(const std::exception_ptr& error, void*) {
  try {
    std::rethrow_exception(error);
  } catch (const index::SymbolicSizesRefused& e) {
    PyErr_SetString(symbolic_sizes_refused_type, e.what());
  } catch (const ir::ParseError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const ir::GraphError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const ir::IndexError& e) {  // an index value PyTorch raises IndexError for
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const std::invalid_argument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::bad_alloc&) {
    throw;  // nanobind's MemoryError
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

}  // namespace
}  // namespace stax::bindings

NB_MODULE(_C, m) {
  using namespace stax;
  using namespace stax::bindings;
  m.doc() = "Stax's C++ compiler: graph text in, compiled kernels out (the stax package's core)";
  m.attr("__version__") = STAX_VERSION;
  symbolic_sizes_refused_type =
      PyErr_NewException("stax._C.SymbolicSizesRefused", PyExc_ValueError, nullptr);
  if (symbolic_sizes_refused_type == nullptr) throw nb::python_error();
  m.attr("SymbolicSizesRefused") = nb::borrow(symbolic_sizes_refused_type);
  nb::register_exception_translator(&translate_exception);
  // After translate_exception: nanobind tries the translators registered last first.
  bind_packages(m);
  // Compiled graphs live in torch.compile's caches until the interpreter exits; those are not
  // leaks, so nanobind's shutdown report would only be noise.
  nb::set_leak_warnings(false);

  nb::class_<CompiledGraph>(m, "Compiled", "A compiled Stax graph, loaded and ready to run")
      .def("run_releasing", &run_releasing, "owners"_a, "inputs"_a, "outputs"_a, "num_threads"_a,
           "run with the inputs given up: `owners` (the input tensors, one per input) is emptied "
           "and each is dropped after the program's last read of it")
      .def("run_pooled", &run_pooled, "owners"_a.none(), "inputs"_a, "outputs"_a, "pooled"_a,
           "num_threads"_a, "sizes"_a.none() = nb::none(), "strides"_a.none() = nb::none(),
           "run (or run_releasing, with owners) where an output slot given as 0 with a layout "
           "(sizes, strides, dtype) in `pooled` is taken from Stax's pool when the program "
           "first writes it; returns a DLPack capsule per such slot (None for the others). "
           "`sizes` and `strides`, a tuple per input: the inputs' layouts at this call, for a "
           "graph with size symbols (the output slots are then layout_at's at their values)")
      .def_prop_ro("takes_every_size", &CompiledGraph::takes_every_size,
                   "whether one program serves every size of a graph with size symbols")
      .def_prop_ro("per_size_reason", &CompiledGraph::per_size_reason,
                   "why a graph with size symbols is compiled per size ('' where one program "
                   "takes every size)")
      .def_prop_ro(
          "symbol_sources",
          [](const CompiledGraph& c) {
            std::map<std::string, std::tuple<size_t, size_t, int64_t>> out;
            for (const auto& [name, s] : c.symbol_sources()) {
              out.emplace(name, std::make_tuple(s.input, s.dim, s.factor));
            }
            return out;
          },
          "size symbol -> (input, dim, factor): the symbol is that input dim's size / factor")
      .def(
          "layout_at",
          [](const CompiledGraph& c, const std::map<std::string, int64_t>& values) {
            const CallLayout layout = c.layout_at(values);
            std::vector<OutputInfo> outputs;
            for (const OutputLayout& out : layout.outputs) {
              outputs.emplace_back(out.from_input, out.index, std::string(dtype_name(out.dtype)),
                                   out.sizes, out.strides, out.offset);
            }
            std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>>> inputs;
            for (const InputLayout& in : layout.inputs) inputs.emplace_back(in.sizes, in.strides);
            return std::make_tuple(outputs, layout.slot_bytes, inputs);
          },
          "values"_a,
          "(outputs, output_slot_bytes, inputs) of a call at these values of the size symbols: "
          "the outputs as `outputs` gives them, each slot's bytes, and the (sizes, strides) the "
          "program reads each input in; ValueError naming a value that breaks the symbols' "
          "facts or that int64 cannot count")
      .def("run", &run_compiled, "inputs"_a, "outputs"_a, "num_threads"_a,
           "Runs the graph: `inputs` are the data pointers of the graph inputs, laid out with "
           "the compiled sizes and strides; `outputs` one caller-allocated pointer per output "
           "slot (at least output_slot_bytes[k] bytes). num_threads 0 uses the compile-time "
           "count.")
      .def_prop_ro("weight_sites", &weight_site_infos,
                   "(site, source, input, input_name, why_not) per convolution call reading "
                   "weights: the graph input that is its weights (-1: computed in the graph), "
                   "and why freeze_parameters may not pack it ('' when it may)")
      .def("pack_weights", &pack_site_weights, "site"_a, "input"_a, "num_threads"_a,
           "packs a site's weights once from the data pointer of its weight input (as run() "
           "gets it) into the primitive's format; calls passing that pointer read the copy "
           "until unpack_weights. The caller guarantees the weights do not change meanwhile. "
           "Returns the packed bytes, 0 when the primitive reads the weights in place")
      .def(
          "unpack_weights",
          [](const CompiledGraph& c, size_t site) { c.external_plans().unpack_weights(site); },
          "site"_a, "drops a site's packed weights: calls reorder them again")
      .def(
          "library_call",
          [](const CompiledGraph& c, size_t site) {
            return c.external_plans().implementation(site);
          },
          "site"_a,
          "the oneDNN call of a site as explain shows it ('weights packed once (frozen)' while "
          "packed); '' for Stax's own runtime calls")
      .def_prop_ro("inputs", &input_infos, "(name, dtype, sizes, strides) per graph input")
      .def_prop_ro("outputs", &output_infos,
                   "(from_input, index, dtype, sizes, strides, offset) per graph output; index "
                   "is the output slot, or the input position when from_input")
      .def_prop_ro(
          "output_slot_bytes", [](const CompiledGraph& c) { return c.output_slot_bytes(); },
          "bytes of each output slot")
      .def_prop_ro("source", &CompiledGraph::source, "the generated C++")
      .def_prop_ro(
          "arena_bytes", [](const CompiledGraph& c) { return c.arena_bytes(); },
          "bytes of the intermediates' arena (0: none), one block per concurrent call")
      .def_prop_ro("cache_hit", &CompiledGraph::cache_hit,
                   "whether the kernel library came from the cache, without the C++ compiler")
      .def_prop_ro("library_path", &CompiledGraph::library_path)
      .def_prop_ro(
          "compile_times",
          [](const CompiledGraph& c) {
            const CompileTimes& t = c.compile_times();
            return std::make_tuple(t.front_end_s, t.cxx_compile_s, t.library_plans_s);
          },
          "(front end, C++ compile or cache lookup, library plans) in seconds")
      .def_prop_ro(
          "ir_log", [](const CompiledGraph& c) { return c.compilation().module.ir_log; },
          "the kernel IR after every code-generation pass (compile(..., record_ir=True))")
      .def(
          "explain",
          [](const CompiledGraph& c, bool verbose) {
            return explain_text(c.compilation(), verbose, &c.external_plans());
          },
          "verbose"_a = false,
          "lowering, fusion and schedule decisions, as `stax explain` prints them (verbose: "
          "every refused fusion with its reason, as `stax explain --verbose`)")
      .def(
          "explain_json",
          [](const CompiledGraph& c) {
            return explain_json(c.compilation(), &c.external_plans()).dump(2);
          },
          "the same as one JSON document (`stax explain --json`)");

  m.def(
      "compile",
      [](const std::string& text, const std::string& filename, int num_threads,
         const std::string& simd, const std::string& cache_dir, bool record_ir, bool graph_passes,
         bool outputs_in_mapped_memory, bool channels_last_intermediates, bool keep_analysis,
         bool measure_matmul_weights, bool matmul_blas,
         const std::optional<std::vector<std::string>>& logs, bool per_size_programs) {
        CompileOptions options =
            make_options(num_threads, simd, cache_dir, record_ir, graph_passes, logs);
        options.per_size_programs = per_size_programs;
        options.outputs_in_mapped_memory = outputs_in_mapped_memory;
        options.channels_last_intermediates = channels_last_intermediates;
        options.keep_analysis = keep_analysis;
        options.measure_matmul_weights = measure_matmul_weights;
        options.matmul_blas = matmul_blas;
        nb::gil_scoped_release release;
        return stax::compile(ir::parse_graph(text, filename), options);
      },
      "text"_a, "filename"_a = "<graph>", nb::kw_only(), "num_threads"_a = 0, "simd"_a = "",
      "cache_dir"_a = "", "record_ir"_a = false, "graph_passes"_a = true,
      "outputs_in_mapped_memory"_a = false, "channels_last_intermediates"_a = true,
      "keep_analysis"_a = true, "measure_matmul_weights"_a = true, "matmul_blas"_a = true,
      "logs"_a = nb::none(), "per_size_programs"_a = true,
      "Parses Stax graph text and compiles it (lowering, scheduling, C++ generation, JIT). "
      "keep_analysis=False frees what only explain, source, ir_log and weight_sites read once "
      "the program is loaded (those then raise). "
      "logs: the topics printed to stderr while compiling (log_topics()); None: those "
      "STAX_LOGS names. A graph with size symbols compiles to one program for every size; "
      "where a stage refuses its symbols, per_size_programs=True compiles a program per size "
      "as calls meet them, False raises SymbolicSizesRefused (a ValueError).");

  m.def(
      "explain",
      [](const std::string& text, const std::string& filename, int num_threads,
         const std::string& simd, bool ir, bool graph_passes,
         const std::optional<std::vector<std::string>>& logs) {
        const CompileOptions options = make_options(num_threads, simd, "", ir, graph_passes, logs);
        nb::gil_scoped_release release;
        return explain_text(*stax::analyze(ir::parse_graph(text, filename), options));
      },
      "text"_a, "filename"_a = "<graph>", nb::kw_only(), "num_threads"_a = 0, "simd"_a = "",
      "ir"_a = false, "graph_passes"_a = true, "logs"_a = nb::none(),
      "What `stax explain` prints for the graph (with ir=True also the kernel IR after every "
      "pass), without running the C++ compiler.");

  m.def(
      "detect_simd",
      [] { return std::string(runtime::simd_level_name(runtime::detect_simd_level())); },
      "the widest SIMD level this CPU supports");
  m.def(
      "cache_sizes",
      [] {
        const runtime::CacheSizes& c = runtime::detect_cache_sizes();
        nb::dict d;
        d["line_bytes"] = c.line_bytes;
        d["l1d_bytes"] = c.l1d_bytes;
        d["l2_bytes"] = c.l2_bytes;
        d["llc_bytes"] = c.llc_bytes;
        return d;
      },
      "the data-cache sizes code generation plans with on this machine (tile sizes, the "
      "streaming-store threshold): cache line, L1d and L2 per core, the shared last level");
  m.def("log_topics", &program::known_log_topics,
        "the log topics the C++ side prints to stderr (compile's logs, STAX_LOGS)");
  m.def("supported_simd_levels", &supported_simd_levels,
        "the SIMD levels this CPU runs, widest first");
  m.def("op_schemas", &op_schemas,
        "(op name, [(parameter name, keyword_only)]) for every op Stax implements, parameters "
        "in schema order");
  m.def("eager_run", &run_eager, "text"_a, "inputs"_a, "filename"_a = "<graph>",
        "sizes"_a = std::map<std::string, int64_t>{},
        "Runs graph text in the eager interpreter (the oracle): `inputs` are data pointers "
        "laid out with the graph's declared sizes and strides, its size symbols (if any) "
        "taking the values `sizes` gives; returns (dtype, sizes, bytes) per output, the bytes "
        "row-major.");
  m.def(
      "check_graph",
      [](const std::string& text, const std::string& filename) { ir::parse_graph(text, filename); },
      "text"_a, "filename"_a = "<graph>",
      "Parses graph text (its shape rules, symbolic ones included, run); raises what the parser "
      "or a shape rule refuses.");
  m.def("output_tolerances", &tolerances_of, "text"_a, "filename"_a = "<graph>",
        "(rtol, atol) per graph output: how closely compiled results must match eager's");
  m.def("compiler_invocations", &runtime::compiler_invocations,
        "C++ compiler processes this process started for kernels");
  m.def(
      "profile_counters",
      [] {
        const driver::ProfileCounters c = driver::profile_counters();
        nb::dict d;
        d["enabled"] = driver::profiling_enabled();
        d["entry_ns"] = c.entry_ns;
        d["entry_calls"] = c.entry_calls;
        d["external_ns"] = c.external_ns;
        d["external_calls"] = c.external_calls;
        return d;
      },
      "time and calls inside compiled entries and inside external library calls (which the "
      "entries make) since the last reset; they move only when profiling is on (STAX_PROFILE=1 "
      "at the first query, or set_profiling)");
  m.def("reset_profile_counters", &driver::reset_profile_counters,
        "sets every profiling counter to zero");
  m.def("trace_library_calls", &trace_library_calls, "on"_a,
        "while on, each library call (matmul, convolution, attention, scatter, scan) opens a "
        "torch.profiler range named 'stax::<op> -> <buffer>' on the calling thread");
  m.def("set_profiling", &driver::set_profiling_enabled, "on"_a,
        "turns the profiling counters on or off, whatever STAX_PROFILE said");
  m.def(
      "cache_dir",
      [](const std::string& cache_dir) {
        runtime::JitOptions options;
        options.cache_dir = cache_dir;
        return runtime::resolve_cache_dir(options);
      },
      "cache_dir"_a = "",
      "the kernel cache directory: cache_dir, else $STAX_CACHE_DIR, else ~/.cache/stax");
  m.def(
      "pooled_output",
      [](const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
         const std::string& dtype,
         int64_t nbytes) { return nb::steal(pooled_output(sizes, strides, dtype, nbytes)); },
      "sizes"_a, "strides"_a, "dtype"_a, "nbytes"_a,
      "a DLPack capsule (torch.from_dlpack) over a block of nbytes from the output pool, "
      "given back to the pool when the tensor is freed (output_pool.h)");
  m.def("output_pool_cached", &output_pool_cached,
        "(blocks, bytes) of freed outputs the pool keeps for the next calls");
  m.def("memory_stats", &memory_stats_dict,
        "output_pool: the output pool's counters (output_pool_stats); arenas: held_bytes, the "
        "bytes the loaded programs' arenas hold now (kept for the next calls and in use), and "
        "per program (library) its planned arena_bytes, held_bytes and scratch_bytes; scratch: "
        "program_bytes (the programs' scratch blocks, cached and live) and "
        "library_workspace_bytes (workspaces library calls keep between calls)");
  m.def("output_pool_stats", &pool_stats_dict,
        "the output pool's counters: cached blocks and bytes, hits, misses, blocks on huge pages, "
        "trims");
  m.def("output_pool_trim", &output_pool_trim,
        "frees every block the output pool keeps; returns the bytes freed");
  m.def("set_blas_library_path", &external::set_blas_library_path, "path"_a,
        "a path to look for the BLAS (MKL's libmkl_rt) at before the loader's path; effective "
        "before the BLAS is first looked for");
  m.def(
      "blas_library",
      [] {
        std::string why;
        std::string description = external::blas_description(&why);
        return std::make_pair(description, why);
      },
      "(description, why): the BLAS float32 products may be handed to, loaded on first use; "
      "description empty and why saying why when there is none");
}
