// The `stax` command-line tool over the text format:
//   stax explain FILE [--json] [--ir] [--verbose] [--threads N] [--simd LEVEL]
//   stax emit FILE [--threads N] [--simd LEVEL]
//   stax run FILE [--inputs IN.json] [--outputs OUT.json] [--json] [--threads N] [--simd LEVEL]
//            [--eager]   (the eager interpreter alone: no compilation, no comparison)
//   stax fuzz [--seconds N | --cases N] [--seed S] ...  (the fuzzer: fuzz/fuzz_command.h)
// Exit status: 0 success, 1 compiled and eager results differ beyond tolerance, 2 bad usage
// or input, or a failure to read or write a file (with a message on stderr).
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_options.h"
#include "cli/run_limits.h"
#include "driver/compiler.h"
#include "driver/explain.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/json_file.h"
#include "eager/tensor_io.h"
#include "fuzz/fuzz_command.h"
#include "graph_passes/bind_sizes.h"
#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "package/package.h"
#include "package/package_file.h"

namespace {

using nlohmann::json;
using stax::cli::CliArgs;

// An inputs file nests one object and one list level per dimension: allowing 64 levels (more
// for inputs of higher rank) accepts every real file and bounds the recursion of parsing and
// of error messages.
constexpr size_t kMinInputsDepth = 64;

std::string input_names(const stax::ir::Graph& graph) {
  std::string names;
  for (stax::ir::ValueRef ref : graph.inputs()) {
    names += (names.empty() ? "" : ", ") + graph.value(ref).name;
  }
  return names.empty() ? "none" : names;
}

json read_inputs_file(const stax::ir::Graph& graph, const std::string& path) {
  size_t max_rank = 0;
  for (stax::ir::ValueRef ref : graph.inputs()) {
    max_rank = std::max(max_rank, graph.value(ref).type.sizes.size());
  }
  json given = stax::eager::read_json_file(path, std::max(kMinInputsDepth, max_rank + 2));
  if (!given.is_object()) {
    throw std::invalid_argument(path + ": expected an object mapping input names to values, got " +
                                stax::eager::describe_json(given));
  }
  for (const auto& [name, v] : given.items()) {
    bool is_input = false;
    for (stax::ir::ValueRef ref : graph.inputs()) is_input |= graph.value(ref).name == name;
    if (!is_input) {
      throw std::invalid_argument(path + ": '" + name.substr(0, 40) + "' is not an input of " +
                                  graph.name() + " (its inputs: " + input_names(graph) + ")");
    }
  }
  return given;
}

// `given` is the inputs file's object, or null to draw every input at random. `bound`: inputs
// whose values come from elsewhere (a package's weights), left undefined here.
std::vector<stax::Tensor> make_inputs(const stax::ir::Graph& graph, const CliArgs& args,
                                      const json& given, const std::set<std::string>& bound = {}) {
  std::vector<stax::Tensor> inputs;
  uint64_t seed = 1;
  for (stax::ir::ValueRef ref : graph.inputs()) {
    const auto& v = graph.value(ref);
    if (bound.count(v.name) != 0) {
      inputs.emplace_back();
    } else if (given.contains(v.name)) {
      // The graph declares the layout it is compiled for: hand the values over in it.
      try {
        inputs.push_back(stax::eager::tensor_from_json(given[v.name], v.type.dtype, v.type.sizes,
                                                       v.type.strides, v.name));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(*args.inputs_path + ": " + e.what());
      }
    } else if (args.inputs_path) {
      throw std::invalid_argument(*args.inputs_path + ": missing input '" + v.name + "'");
    } else {
      // Random values in [0, 1), like torch.rand: sums of them are well conditioned, so a
      // difference from the oracle means a wrong result rather than cancellation.
      inputs.push_back(stax::eager::random_tensor_strided(v.type.dtype, v.type.sizes,
                                                          v.type.strides, seed++, 0.0, 1.0));
    }
  }
  return inputs;
}

void write_outputs_file(const std::string& path, const stax::ir::Graph& graph,
                        const std::vector<stax::Tensor>& outputs) {
  stax::eager::write_text_file(path, [&](std::ostream& out) {
    out << "{";
    std::set<std::string> written;  // a value returned twice is one key
    for (size_t k = 0; k < outputs.size() && out; ++k) {
      const std::string& name = graph.value(graph.outputs()[k]).name;
      if (!written.insert(name).second) continue;
      out << (written.size() > 1 ? ",\n " : "\n ") << json(name).dump() << ": ";
      stax::eager::write_tensor_json(out, outputs[k]);
    }
    out << "\n}\n";
  });
}

// At least 5 runs and 300 ms (at most 200 runs); a run so slow that 5 of them take over 2 s
// stops at 2 s (at least one run), so timing never costs much more than the check itself.
template <class F>
double median_seconds(F&& f) {
  using std::chrono::milliseconds;
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const auto elapsed = std::chrono::steady_clock::now() - start;
    const bool enough = times.size() >= 200 ||
                        (times.size() >= 5 && elapsed >= milliseconds(300)) ||
                        (!times.empty() && elapsed >= milliseconds(2000));
    if (enough) break;
    const auto t0 = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Each output (and each input written in place) against the eager oracle, within the
// tolerances its dtype and operations allow; *all_ok is cleared by any mismatch.
json compare_with_eager(const stax::ir::Graph& graph, const std::vector<stax::Tensor>& actual,
                        const std::vector<stax::Tensor>& expected,
                        const std::vector<stax::Tensor>& oracle_values,
                        const std::vector<stax::ir::InputWrite>& writes,
                        const std::vector<stax::Tensor>& compiled_inputs,
                        const std::vector<stax::Tensor>& eager_inputs, bool* all_ok) {
  const std::vector<stax::Tolerance> tolerances = stax::output_tolerances(graph, &oracle_values);
  json outs = json::array();
  for (size_t k = 0; k < actual.size(); ++k) {
    const auto& value = graph.value(graph.outputs()[k]);
    const stax::Tolerance& tol = tolerances[k];
    const auto diff = stax::eager::compare(actual[k], expected[k], tol.rtol, tol.atol);
    *all_ok = *all_ok && diff.within_tolerance;
    outs.push_back({{"name", value.name},
                    {"max_abs_diff", diff.max_abs},
                    {"max_rel_diff", diff.max_rel},
                    {"rtol", tol.rtol},
                    {"atol", tol.atol},
                    {"within_tolerance", diff.within_tolerance}});
  }
  for (const auto& w : writes) {
    const stax::Tolerance tol = stax::graph_value_tolerance(graph, w.value, &oracle_values);
    const auto diff =
        stax::eager::compare(compiled_inputs[w.input], eager_inputs[w.input], tol.rtol, tol.atol);
    *all_ok = *all_ok && diff.within_tolerance;
    outs.push_back(
        {{"name", "input " + graph.value(graph.inputs()[w.input]).name + " (written in place)"},
         {"max_abs_diff", diff.max_abs},
         {"max_rel_diff", diff.max_rel},
         {"rtol", tol.rtol},
         {"atol", tol.atol},
         {"within_tolerance", diff.within_tolerance}});
  }
  return outs;
}

void print_outputs(const json& outs) {
  for (const auto& o : outs) {
    std::cout << "  output " << o["name"].get<std::string>() << ": max abs diff "
              << o["max_abs_diff"].get<double>() << ", max rel diff "
              << o["max_rel_diff"].get<double>() << " (rtol " << o["rtol"].get<double>()
              << ", atol " << o["atol"].get<double>() << ") "
              << (o["within_tolerance"].get<bool>() ? "ok" : "MISMATCH") << "\n";
  }
}

// `graph` at the sizes of the run; `symbolic`: the graph over its size symbols (issue 33), or
// null. Where one program takes every size of it, that program is the one checked and timed,
// against the static program of these sizes, interleaved (what the symbolic one costs).
int run_command(const CliArgs& args, const stax::ir::Graph& graph,
                const stax::ir::Graph* symbolic) {
  if (args.outputs_path) stax::cli::check_outputs_fit_json(graph, *args.outputs_path);
  const json given = args.inputs_path ? read_inputs_file(graph, *args.inputs_path) : json();
  std::optional<stax::CompiledGraph> one_program;
  if (symbolic != nullptr) {
    one_program = stax::compile(*symbolic, args.options);
    if (!one_program->takes_every_size()) one_program.reset();
  }
  const stax::CompiledGraph compiled =
      one_program ? *one_program : stax::compile(graph, args.options);
  stax::cli::check_run_fits_in_memory(graph, compiled.compilation().schedule,
                                      stax::cli::available_memory_bytes());
  stax::cli::check_eager_work(graph, stax::cli::kMaxEagerElementSteps);
  const auto inputs = make_inputs(graph, args, given);
  // Inputs the graph writes in place (copy_) get one copy for each run, compared afterwards.
  const std::vector<stax::ir::InputWrite> writes = stax::ir::input_writes(graph);
  auto own_inputs = [&] {
    std::vector<stax::Tensor> copy = inputs;
    for (const auto& w : writes) copy[w.input] = inputs[w.input].clone_storage();
    return copy;
  };
  const auto compiled_inputs = own_inputs();
  const auto eager_inputs = own_inputs();
  const auto actual = compiled.run(compiled_inputs);
  // The oracle's every value measures the condition numbers the tolerances follow.
  std::vector<stax::Tensor> oracle_values;
  const auto expected = stax::eager::run(graph, eager_inputs, &oracle_values);
  json report;
  report["graph"] = graph.name();
  report["simd"] = std::string(
      stax::runtime::simd_level_name(compiled.runtime_compilation().module.options.simd));
  report["threads"] = compiled.runtime_compilation().module.options.num_threads;
  report["cache_hit"] = compiled.cache_hit();
  bool all_ok = true;
  const json outs = compare_with_eager(graph, actual, expected, oracle_values, writes,
                                       compiled_inputs, eager_inputs, &all_ok);
  report["outputs"] = outs;
  if (args.outputs_path) write_outputs_file(*args.outputs_path, graph, actual);
  double compiled_s = 0;
  double static_s = 0;
  if (one_program) {
    // Five rounds of each, alternating; the median of the rounds' medians.
    const stax::CompiledGraph static_program = stax::compile(graph, args.options);
    std::vector<double> symbolic_rounds, static_rounds;
    for (int round = 0; round < 5; ++round) {
      symbolic_rounds.push_back(median_seconds([&] { compiled.run(inputs); }));
      static_rounds.push_back(median_seconds([&] { static_program.run(inputs); }));
    }
    std::sort(symbolic_rounds.begin(), symbolic_rounds.end());
    std::sort(static_rounds.begin(), static_rounds.end());
    compiled_s = symbolic_rounds[2];
    static_s = static_rounds[2];
    report["one_program_for_every_size"] = true;
    report["static_program_median_seconds"] = static_s;
  } else {
    compiled_s = median_seconds([&] { compiled.run(inputs); });
  }
  const double eager_s = median_seconds([&] { stax::eager::run(graph, inputs); });
  report["compiled_median_seconds"] = compiled_s;
  report["eager_median_seconds"] = eager_s;
  report["match"] = all_ok;
  if (args.json_output) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << "graph " << graph.name() << " (" << report["simd"].get<std::string>() << ", "
              << report["threads"].get<int>() << " threads"
              << (compiled.cache_hit() ? ", compiled code from cache" : "") << ")\n";
    print_outputs(outs);
    std::cout << "  median time: compiled " << compiled_s * 1e6 << " us, eager " << eager_s * 1e6
              << " us (eager/compiled " << eager_s / compiled_s << "x)\n";
    if (one_program) {
      std::cout << "  one program for every size; the static program of these sizes: "
                << static_s * 1e6 << " us (symbolic/static " << compiled_s / static_s << ")\n";
    }
  }
  return all_ok ? 0 : 1;
}

// `stax run --eager`: the eager interpreter alone, within the same limits as a checked run;
// prints each output's type (and the median time), writes the outputs file if asked.
int eager_run_command(const CliArgs& args, const stax::ir::Graph& graph) {
  if (args.outputs_path) stax::cli::check_outputs_fit_json(graph, *args.outputs_path);
  const json given = args.inputs_path ? read_inputs_file(graph, *args.inputs_path) : json();
  stax::cli::check_run_fits_in_memory(graph, stax::scheduler::Schedule{},
                                      stax::cli::available_memory_bytes());
  stax::cli::check_eager_work(graph, stax::cli::kMaxEagerElementSteps);
  const auto inputs = make_inputs(graph, args, given);
  const auto outputs = stax::eager::run(graph, inputs);
  if (args.outputs_path) write_outputs_file(*args.outputs_path, graph, outputs);
  const double eager_s = median_seconds([&] { stax::eager::run(graph, inputs); });
  json outs = json::array();
  for (size_t k = 0; k < outputs.size(); ++k) {
    outs.push_back({{"name", graph.value(graph.outputs()[k]).name},
                    {"dtype", std::string(dtype_name(outputs[k].dtype()))},
                    {"sizes", outputs[k].sizes()}});
  }
  json report;
  report["graph"] = graph.name();
  report["eager_only"] = true;
  report["outputs"] = outs;
  report["eager_median_seconds"] = eager_s;
  if (args.json_output) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << "graph " << graph.name() << " (eager interpreter only)\n";
    for (size_t k = 0; k < outputs.size(); ++k) {
      std::cout << "  output " << outs[k]["name"].get<std::string>() << ": "
                << dtype_name(outputs[k].dtype()) << stax::shape_to_string(outputs[k].sizes())
                << "\n";
    }
    std::cout << "  median time: eager " << eager_s * 1e6 << " us\n";
  }
  return 0;
}

// The size symbols' values the inputs file gives: each given input's nesting is its sizes,
// and a dim of size c*s (c >= 1) gives s. Symbols no given input shows are named.
std::map<std::string, int64_t> sizes_of_given_inputs(const stax::ir::Graph& graph,
                                                     const std::string& path) {
  const json given = read_inputs_file(graph, path);
  std::map<std::string, int64_t> sizes;
  for (stax::ir::ValueRef ref : graph.inputs()) {
    const stax::ir::Value& input = graph.value(ref);
    if (!given.contains(input.name) || !input.type.is_symbolic()) continue;
    const json* level = &given[input.name];
    for (const stax::index::Expr& dim : input.type.symbolic_sizes) {
      if (!level->is_array()) break;
      if (const auto m = stax::ir::symbol_multiple(dim)) {
        sizes.emplace(m->symbol, static_cast<int64_t>(level->size()) / m->factor);
      }
      if (level->empty()) break;
      level = &(*level)[0];
    }
  }
  for (const auto& entry : graph.size_symbols()) {
    if (sizes.count(entry.first) == 0) {
      throw std::invalid_argument(path + ": no input given there has a dim of size " + entry.first +
                                  "; give its value with --sizes");
    }
  }
  return sizes;
}

// A graph with symbolic sizes (issue 33) runs at the sizes --sizes gives, or, for `run`
// without them, at the symbols' hints (said on stderr). explain and emit without --sizes show
// the one program of every size (where a stage refuses the symbols, the error says which and
// asks for --sizes); with them, the graph bound to those sizes.
stax::ir::Graph symbols_bound(stax::ir::Graph graph, const CliArgs& args) {
  if (!graph.is_symbolic()) {
    if (!args.sizes.empty()) {
      throw std::invalid_argument("--sizes: graph '" + graph.name() + "' has no size symbols");
    }
    return graph;
  }
  std::map<std::string, int64_t> sizes = args.sizes;
  if (sizes.empty() && args.command == "run" && args.inputs_path) {
    sizes = sizes_of_given_inputs(graph, *args.inputs_path);
  }
  if (sizes.empty() && args.command == "run") {
    std::string said;
    for (const auto& [name, facts] : graph.size_symbols()) {
      sizes.emplace(name, facts.hint);
      said += (said.empty() ? "" : ",") + name + "=" + std::to_string(facts.hint);
    }
    std::cerr << "stax: running at the size symbols' hints (--sizes " << said << ")\n";
  }
  if (sizes.empty()) return graph;  // explain, emit: the program of every size
  return stax::graph_passes::bind_sizes(graph, sizes);
}

// Whether `path` starts as a package does (package/package_file.h).
bool is_package_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof stax::package::kPackageMagic] = {};
  in.read(magic, sizeof magic);
  return in && std::equal(std::begin(magic), std::end(magic), stax::package::kPackageMagic);
}

// `stax compile FILE --output PKG`: the graph compiled (one program for every size of a
// symbolic graph, or at --sizes) and written as an ahead-of-time package.
int compile_command(const CliArgs& args, const stax::ir::Graph& graph) {
  const auto start = std::chrono::steady_clock::now();
  const stax::CompiledGraph compiled = stax::compile(graph, args.options);
  stax::save_package(compiled, graph, *args.package_path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "wrote " << *args.package_path << ": graph " << graph.name() << " ("
            << stax::runtime::simd_level_name(compiled.runtime_compilation().module.options.simd)
            << ", " << compiled.runtime_compilation().module.options.num_threads << " threads"
            << (graph.is_symbolic() ? ", one program for every size" : "") << ") in " << seconds
            << " s\n";
  return 0;
}

// `stax run PKG`: the package's program, loaded without compiling, against the eager
// interpreter over the graph it holds, with its weights; a symbolic graph at --sizes (or the
// sizes of --inputs, or the hints).
int package_run_command(const CliArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  const stax::Package package = stax::Package::load(args.file);
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const stax::ir::Graph graph =
      symbols_bound(stax::ir::parse_graph(package.graph_text(), args.file), args);
  if (args.outputs_path) stax::cli::check_outputs_fit_json(graph, *args.outputs_path);
  const std::vector<std::string> weights = package.weight_inputs();
  const std::set<std::string> bound(weights.begin(), weights.end());
  json given = args.inputs_path ? read_inputs_file(graph, *args.inputs_path) : json();
  stax::cli::check_eager_work(graph, stax::cli::kMaxEagerElementSteps);
  // Every input for the oracle: the package's weights where it binds them.
  // Every input for the oracle: a copy of the package's weight where it binds one (the oracle
  // must not write into the package's mapping).
  std::vector<stax::Tensor> all = make_inputs(graph, args, given, bound);
  const std::vector<stax::Tensor>& bound_values = package.bound_inputs();
  for (size_t i = 0; i < all.size(); ++i) {
    if (!all[i].defined()) all[i] = bound_values[i].contiguous_copy();
  }
  stax::RunOptions run_options;
  run_options.num_threads = args.options.num_threads;
  // Inputs the graph writes in place (copy_) get one copy for each run, compared afterwards.
  const std::vector<stax::ir::InputWrite> writes = stax::ir::input_writes(graph);
  std::vector<stax::Tensor> compiled_all = all;
  for (const auto& w : writes) compiled_all[w.input] = all[w.input].clone_storage();
  std::vector<stax::Tensor> compiled_passed;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!bound_values[i].defined()) compiled_passed.push_back(compiled_all[i]);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto actual = package.run(compiled_passed, run_options);
  const double first_call_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<stax::Tensor> eager_inputs = all;
  for (const auto& w : writes) eager_inputs[w.input] = all[w.input].clone_storage();
  std::vector<stax::Tensor> oracle_values;
  const auto expected = stax::eager::run(graph, eager_inputs, &oracle_values);
  bool all_ok = true;
  const json outs = compare_with_eager(graph, actual, expected, oracle_values, writes, compiled_all,
                                       eager_inputs, &all_ok);
  if (args.outputs_path) write_outputs_file(*args.outputs_path, graph, actual);
  json report;
  report["package"] = args.file;
  report["graph"] = graph.name();
  report["simd"] = std::string(
      stax::runtime::simd_level_name(package.program().runtime_compilation().module.options.simd));
  report["weights"] = weights.size();
  report["load_seconds"] = load_s;
  report["first_call_seconds"] = first_call_s;
  report["outputs"] = outs;
  report["match"] = all_ok;
  if (args.json_output) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << "package " << args.file << ": graph " << graph.name() << " ("
              << report["simd"].get<std::string>() << ", " << weights.size()
              << " weights bound), loaded in " << load_s * 1e3 << " ms, first call "
              << first_call_s * 1e3 << " ms\n";
    print_outputs(outs);
  }
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "fuzz") {
    return stax::fuzz::fuzz_command("stax fuzz", std::vector<std::string>(argv + 2, argv + argc));
  }
  CliArgs args;
  try {
    args = stax::cli::parse_cli_args(argc, argv);
  } catch (const stax::cli::UsageError& e) {
    std::cerr << "stax: " << e.what() << "\n" << stax::cli::kUsage;
    return 2;
  }
  try {
    if (args.command == "run" && is_package_file(args.file)) {
      if (args.eager_only) {
        throw std::invalid_argument("--eager: '" + args.file +
                                    "' is a package; run its graph text with --eager instead");
      }
      return package_run_command(args);
    }
    const stax::ir::Graph parsed = stax::ir::parse_graph_file(args.file);
    const stax::ir::Graph graph = symbols_bound(parsed, args);
    if (args.command == "explain") {
      const auto c = stax::analyze(graph, args.options);
      // The library plans as a run would build them (no kernel is compiled): explain shows
      // each product's kernel and how its B is handed over on this machine. A plan the
      // library refuses (a size it cannot take) is what a run would report; explain still
      // explains the rest and says so.
      std::optional<stax::driver::ExternalPlans> plans;
      std::string plans_refused;
      try {
        plans.emplace(c->module.externals, c->module.options.num_threads,
                      stax::matmul_weights(args.options), stax::library_plan_dir(args.options),
                      c->module.symbols);
      } catch (const std::exception& e) {
        plans_refused = e.what();
      }
      const stax::driver::ExternalPlans* shown = plans ? &*plans : nullptr;
      if (args.json_output) {
        nlohmann::json doc = stax::explain_json(*c, shown);
        if (!plans_refused.empty()) doc["library_plans_refused"] = plans_refused;
        std::cout << doc.dump(2) << "\n";
      } else {
        std::cout << stax::explain_text(*c, args.verbose, shown);
        if (!plans_refused.empty()) {
          std::cout << "\nlibrary plans: not built, a run would stop here: " << plans_refused
                    << "\n";
        }
      }
      return 0;
    }
    if (args.command == "compile") return compile_command(args, graph);
    if (args.command == "emit") {
      const auto c = stax::analyze(graph, args.options);
      if (c->cuda) {
        // The CUDA module: every kernel, or why a fused node has none yet.
        std::cout << c->cuda->source;
        for (const auto& k : c->cuda->kernels) {
          if (!k.refused.empty()) std::cout << "// " << k.fused_node << ": " << k.refused << "\n";
        }
        return 0;
      }
      std::cout << c->module.source;
      return 0;
    }
    if (args.eager_only) return eager_run_command(args, graph);
    return run_command(args, graph, parsed.is_symbolic() ? &parsed : nullptr);
  } catch (const stax::index::SymbolicSizesRefused& e) {
    std::cerr << "stax: " << e.what()
              << "\nstax: so no one program takes every size of this graph yet; give the sizes "
                 "with --sizes s0=N,...\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "stax: " << e.what() << "\n";
    return 2;
  }
}
