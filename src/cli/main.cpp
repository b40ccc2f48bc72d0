// The `stax` command-line tool over the text format:
//   stax explain FILE [--json] [--threads N] [--simd LEVEL]
//   stax emit FILE [--threads N] [--simd LEVEL]
//   stax run FILE [--inputs IN.json] [--outputs OUT.json] [--json] [--threads N] [--simd LEVEL]
// Exit status: 0 success, 1 compiled and eager results differ beyond tolerance, 2 bad usage
// or input (with a message on stderr).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/compiler.h"
#include "driver/explain.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"

namespace {

using nlohmann::json;

struct Args {
  std::string command;
  std::string file;
  bool json_output = false;
  std::optional<std::string> inputs_path;
  std::optional<std::string> outputs_path;
  stax::CompileOptions options;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

const char* kUsage =
    "usage: stax explain FILE [--json] [--threads N] [--simd avx512|avx2|scalar]\n"
    "       stax emit FILE [--threads N] [--simd avx512|avx2|scalar]\n"
    "       stax run FILE [--inputs IN.json] [--outputs OUT.json] [--json] [--threads N]\n"
    "                [--simd avx512|avx2|scalar]\n";

Args parse_args(int argc, char** argv) {
  Args a;
  if (argc < 3) throw UsageError("missing command or file");
  a.command = argv[1];
  if (a.command != "explain" && a.command != "emit" && a.command != "run") {
    throw UsageError("unknown command '" + a.command + "'");
  }
  a.file = argv[2];
  for (int i = 3; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--json") {
      a.json_output = true;
    } else if (flag == "--inputs" && a.command == "run") {
      a.inputs_path = value();
    } else if (flag == "--outputs" && a.command == "run") {
      a.outputs_path = value();
    } else if (flag == "--threads") {
      const std::string v = value();
      try {
        size_t used = 0;
        a.options.num_threads = std::stoi(v, &used);
        if (used != v.size() || a.options.num_threads < 1) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        throw UsageError("--threads needs a positive integer, got '" + v + "'");
      }
    } else if (flag == "--simd") {
      const std::string v = value();
      a.options.simd = stax::runtime::parse_simd_level(v);
      if (!a.options.simd)
        throw UsageError("--simd must be avx512, avx2 or scalar, got '" + v + "'");
    } else {
      throw UsageError("unknown option '" + flag + "' for " + a.command);
    }
  }
  return a;
}

std::vector<stax::Tensor> make_inputs(const stax::ir::Graph& graph, const Args& args) {
  std::vector<stax::Tensor> inputs;
  json given;
  if (args.inputs_path) {
    std::ifstream in(*args.inputs_path);
    if (!in) throw std::invalid_argument("cannot open inputs file " + *args.inputs_path);
    try {
      given = json::parse(in);
    } catch (const json::parse_error& e) {
      throw std::invalid_argument(*args.inputs_path + ": not valid JSON: " + e.what());
    }
    if (!given.is_object()) {
      throw std::invalid_argument(*args.inputs_path + ": expected an object mapping input names");
    }
    for (const auto& [name, v] : given.items()) {
      if (!graph.find_value(name)) {
        throw std::invalid_argument(*args.inputs_path + ": '" + name + "' is not an input of " +
                                    graph.name());
      }
    }
  }
  uint64_t seed = 1;
  for (stax::ir::ValueRef ref : graph.inputs()) {
    const auto& v = graph.value(ref);
    if (given.contains(v.name)) {
      stax::Tensor t =
          stax::eager::tensor_from_json(given[v.name], v.type.dtype, v.type.sizes, v.name);
      // The graph declares the layout it is compiled for: hand the values over in it.
      stax::Tensor laid = stax::Tensor::empty_strided(v.type.dtype, v.type.sizes, v.type.strides);
      for (int64_t p = 0; p < t.numel(); ++p) laid.set_flat(p, t.get_flat(p));
      inputs.push_back(laid);
    } else if (args.inputs_path) {
      throw std::invalid_argument(*args.inputs_path + ": missing input '" + v.name + "'");
    } else {
      // Random values in [0, 1), like torch.rand: sums of them are well conditioned, so a
      // difference from the oracle means a wrong result rather than cancellation.
      stax::Tensor t =
          stax::eager::random_tensor_strided(v.type.dtype, v.type.sizes, v.type.strides, seed++);
      if (stax::is_floating(v.type.dtype)) {
        for (int64_t p = 0; p < t.numel(); ++p) t.set_flat(p, (t.get_flat(p) + 1.0) / 2.0);
      }
      inputs.push_back(t);
    }
  }
  return inputs;
}

template <class F>
double median_seconds(F&& f) {
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  while (times.size() < 5 || (times.size() < 200 && std::chrono::steady_clock::now() - start <
                                                        std::chrono::milliseconds(300))) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int run_command(const Args& args, const stax::ir::Graph& graph) {
  const auto inputs = make_inputs(graph, args);
  const stax::CompiledGraph compiled = stax::compile(graph, args.options);
  const auto actual = compiled.run(inputs);
  const auto expected = stax::eager::run(graph, inputs);
  const std::vector<stax::Tolerance> tolerances = stax::output_tolerances(graph);

  json report;
  report["graph"] = graph.name();
  report["simd"] =
      std::string(stax::runtime::simd_level_name(compiled.compilation().module.options.simd));
  report["threads"] = compiled.compilation().module.options.num_threads;
  report["cache_hit"] = compiled.cache_hit();
  json outs = json::array();
  bool all_ok = true;
  json written;
  for (size_t k = 0; k < actual.size(); ++k) {
    const auto& value = graph.value(graph.outputs()[k]);
    const stax::Tolerance& tol = tolerances[k];
    const auto diff = stax::eager::compare(actual[k], expected[k], tol.rtol, tol.atol);
    all_ok = all_ok && diff.within_tolerance;
    outs.push_back({{"name", value.name},
                    {"max_abs_diff", diff.max_abs},
                    {"max_rel_diff", diff.max_rel},
                    {"rtol", tol.rtol},
                    {"atol", tol.atol},
                    {"within_tolerance", diff.within_tolerance}});
    written[value.name] = stax::eager::tensor_to_json(actual[k]);
  }
  report["outputs"] = outs;
  const double compiled_s = median_seconds([&] { compiled.run(inputs); });
  const double eager_s = median_seconds([&] { stax::eager::run(graph, inputs); });
  report["compiled_median_seconds"] = compiled_s;
  report["eager_median_seconds"] = eager_s;
  report["match"] = all_ok;
  if (args.outputs_path) {
    std::ofstream out(*args.outputs_path);
    if (!out) throw std::invalid_argument("cannot write outputs file " + *args.outputs_path);
    out << written.dump(1) << "\n";
  }
  if (args.json_output) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << "graph " << graph.name() << " (" << report["simd"].get<std::string>() << ", "
              << report["threads"].get<int>() << " threads"
              << (compiled.cache_hit() ? ", compiled code from cache" : "") << ")\n";
    for (const auto& o : outs) {
      std::cout << "  output " << o["name"].get<std::string>() << ": max abs diff "
                << o["max_abs_diff"].get<double>() << ", max rel diff "
                << o["max_rel_diff"].get<double>() << " (rtol " << o["rtol"].get<double>()
                << ", atol " << o["atol"].get<double>() << ") "
                << (o["within_tolerance"].get<bool>() ? "ok" : "MISMATCH") << "\n";
    }
    std::cout << "  median time: compiled " << compiled_s * 1e6 << " us, eager " << eager_s * 1e6
              << " us (eager/compiled " << eager_s / compiled_s << "x)\n";
  }
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "stax: " << e.what() << "\n" << kUsage;
    return 2;
  }
  try {
    const stax::ir::Graph graph = stax::ir::parse_graph_file(args.file);
    if (args.command == "explain") {
      const auto c = stax::analyze(graph, args.options);
      if (args.json_output) {
        std::cout << stax::explain_json(*c).dump(2) << "\n";
      } else {
        std::cout << stax::explain_text(*c);
      }
      return 0;
    }
    if (args.command == "emit") {
      std::cout << stax::analyze(graph, args.options)->module.source;
      return 0;
    }
    return run_command(args, graph);
  } catch (const std::exception& e) {
    std::cerr << "stax: " << e.what() << "\n";
    return 2;
  }
}
