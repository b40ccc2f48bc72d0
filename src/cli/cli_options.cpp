// Parsing of the `stax` command line (see cli_options.h). An option given twice is an error
// rather than "last wins": with two values on one line, one of them is a mistake.
#include "cli/cli_options.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <vector>

#include "target/cuda_device.h"

namespace stax::cli {

const char* const kUsage =
    "usage: stax explain FILE [--json] [--ir] [--verbose] [--threads N] [--sizes s0=N,...]\n"
    "                [--simd avx512|avx2|scalar] [--no-graph-passes]\n"
    "                [--device cpu|cuda:sm_80|cuda:sm_90|cuda:sm_100]\n"
    "                [--row-major-intermediates] [--matmul-weights-in-place]\n"
    "       stax emit FILE [--threads N] [--simd avx512|avx2|scalar] [--no-graph-passes]\n"
    "                [--device cpu|cuda:sm_80|cuda:sm_90|cuda:sm_100]\n"
    "                [--sizes s0=N,...]\n"
    "                [--row-major-intermediates] [--matmul-weights-in-place]\n"
    "       stax run FILE [--inputs IN.json] [--outputs OUT.json] [--json] [--threads N]\n"
    "                [--sizes s0=N,...]\n"
    "                [--simd avx512|avx2|scalar] [--eager] [--no-graph-passes]\n"
    "                [--row-major-intermediates] [--matmul-weights-in-place]\n"
    "       stax compile FILE --output PKG [--threads N] [--simd avx512|avx2|scalar]\n"
    "                [--sizes s0=N,...] [--no-graph-passes] [--row-major-intermediates]\n"
    "                [--matmul-weights-in-place]   (an ahead-of-time package)\n"
    "       stax run PKG [--inputs IN.json] [--outputs OUT.json] [--json] [--threads N]\n"
    "                (a package: its program against the eager interpreter)\n"
    "       stax fuzz [--seconds N | --cases N] [--seed S] [--mode valid|mutate|both]\n"
    "                 [--out DIR] [--no-reduce]   (stax fuzz --help)\n";

namespace {

// More threads than this is a typing mistake, not a machine.
constexpr int kMaxThreads = 1024;

struct OptionSpec {
  std::string name;
  bool takes_value;
  std::vector<std::string> commands;  // the commands it applies to
};

const std::vector<OptionSpec>& option_specs() {
  static const std::vector<OptionSpec> specs = {
      {"--json", false, {"explain", "run"}},
      {"--ir", false, {"explain"}},
      // Lists every fusion candidate refused or left unfused, with its reason (the text only
      // counts them; the JSON always lists them).
      {"--verbose", false, {"explain"}},
      {"--threads", true, {"explain", "emit", "run", "compile"}},
      {"--simd", true, {"explain", "emit", "run", "compile"}},
      // The device the partition is made for (issue 35): a CUDA architecture of the offline
      // table on any machine. explain shows the GPU partition and kernels, emit prints the
      // CUDA source; running CUDA programs from the CLI is not built yet.
      {"--device", true, {"explain", "emit"}},
      // compile: where the package goes.
      {"--output", true, {"compile"}},
      {"--inputs", true, {"run"}},
      {"--outputs", true, {"run"}},
      {"--eager", false, {"run"}},
      // Lowers the graph as written (no graph_passes rewrite), for comparisons.
      {"--no-graph-passes", false, {"explain", "emit", "run", "compile"}},
      // Stores every intermediate row-major (no channels-last layout around convolutions).
      {"--row-major-intermediates", false, {"explain", "emit", "run", "compile"}},
      {"--matmul-weights-in-place", false, {"explain", "emit", "run", "compile"}},
      // The values of the size symbols of a graph with symbolic sizes (x: f32[s0, 128]).
      {"--sizes", true, {"explain", "emit", "run", "compile"}},
  };
  return specs;
}

// "s0=37,s1=5"
std::map<std::string, int64_t> parse_sizes(const std::string& text) {
  std::map<std::string, int64_t> sizes;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const std::string number = eq == std::string::npos ? "" : item.substr(eq + 1);
    int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (eq == std::string::npos || name.empty() || number.empty() || ec != std::errc() ||
        ptr != number.data() + number.size() || value < 0) {
      throw UsageError("--sizes takes SYMBOL=N,... with N >= 0 (s0=37,s1=5), got '" + item + "'");
    }
    if (!sizes.emplace(name, value).second) {
      throw UsageError("--sizes gives " + name + " twice");
    }
    start = end + 1;
  }
  return sizes;
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i) s += (i > 0 ? ", " : "") + words[i];
  return s;
}

int parse_threads(const std::string& value) {
  const auto fail = [&]() -> int {
    throw UsageError("--threads needs an integer from 1 to " + std::to_string(kMaxThreads) +
                     ", got '" + value + "'");
  };
  // Digits only: from_chars alone would accept a leading '-'.
  if (value.empty() ||
      !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return fail();
  }
  int n = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (error != std::errc() || end != value.data() + value.size() || n < 1 || n > kMaxThreads) {
    return fail();
  }
  return n;
}

}  // namespace

CliArgs parse_cli_args(int argc, char** argv) {
  if (argc < 2) throw UsageError("missing command");
  CliArgs a;
  a.command = argv[1];
  if (a.command != "explain" && a.command != "emit" && a.command != "run" &&
      a.command != "compile") {
    throw UsageError("unknown command '" + a.command + "'");
  }
  std::optional<std::string> file;
  std::set<std::string> seen;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = std::string(argv[i]) == "-o" ? "--output" : argv[i];
    if (arg.rfind("--", 0) != 0) {
      if (file)
        throw UsageError("unexpected argument '" + arg + "' (FILE is already " + *file + ")");
      file = arg;
      continue;
    }
    const auto& specs = option_specs();
    const auto spec = std::find_if(specs.begin(), specs.end(),
                                   [&](const OptionSpec& s) { return s.name == arg; });
    if (spec == specs.end()) throw UsageError("unknown option '" + arg + "'");
    if (std::find(spec->commands.begin(), spec->commands.end(), a.command) ==
        spec->commands.end()) {
      throw UsageError("option " + arg + " does not apply to " + a.command + " (only to " +
                       joined(spec->commands) + ")");
    }
    if (!seen.insert(arg).second) throw UsageError("option " + arg + " is given twice");
    std::string value;
    if (spec->takes_value) {
      // A following option means the value was left out ("--inputs --json").
      if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0) {
        throw UsageError("option " + arg + " needs a value");
      }
      value = argv[++i];
    }
    if (arg == "--json") {
      a.json_output = true;
    } else if (arg == "--eager") {
      a.eager_only = true;
    } else if (arg == "--ir") {
      a.options.record_ir = true;
    } else if (arg == "--verbose") {
      a.verbose = true;
    } else if (arg == "--no-graph-passes") {
      a.options.graph_passes = false;
    } else if (arg == "--row-major-intermediates") {
      a.options.channels_last_intermediates = false;
    } else if (arg == "--matmul-weights-in-place") {
      a.options.measure_matmul_weights = false;
    } else if (arg == "--threads") {
      a.options.num_threads = parse_threads(value);
    } else if (arg == "--simd") {
      a.options.simd = runtime::parse_simd_level(value);
      if (!a.options.simd) {
        throw UsageError("--simd must be avx512, avx2 or scalar, got '" + value + "'");
      }
    } else if (arg == "--device") {
      try {
        (void)target::parse_device(value);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--device: ") + e.what());
      }
      a.options.device = value;
    } else if (arg == "--sizes") {
      a.sizes = parse_sizes(value);
    } else if (arg == "--output") {
      if (value.empty()) throw UsageError("option --output needs a file name, got ''");
      a.package_path = value;
    } else if (arg == "--inputs" || arg == "--outputs") {
      if (value.empty()) throw UsageError("option " + arg + " needs a file name, got ''");
      (arg == "--inputs" ? a.inputs_path : a.outputs_path) = value;
    }
  }
  if (!file) throw UsageError("missing FILE");
  if (a.command == "compile" && !a.package_path) {
    throw UsageError("compile needs --output PKG (where the package goes)");
  }
  a.file = *file;
  return a;
}

}  // namespace stax::cli
