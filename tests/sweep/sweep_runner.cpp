// One configuration of the sweep: case programs, eager references, the batched compile with
// bisection on failure, and the comparisons (see sweep_runner.h).
#include "sweep_runner.h"

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "fuzz/domain_values.h"
#include "fuzz/sandbox.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace stax::sweep {

namespace {

using fuzz::CatalogEntry;
using fuzz::Domain;

const char* domain_name(Domain d) {
  switch (d) {
    case Domain::Any:
      return "any";
    case Domain::Finite:
      return "finite";
    case Domain::Small:
      return "small";
    case Domain::Unit:
      return "unit";
    case Domain::Positive:
      return "positive";
    case Domain::AboveOne:
      return "above_one";
    case Domain::NonZero:
      return "nonzero";
    case Domain::NearOne:
      return "near_one";
    case Domain::Coarse:
      return "coarse";
    case Domain::Wide:
      return "wide";
    case Domain::ShiftCount:
      return "shift";
    case Domain::Exponent:
      return "exponent";
  }
  return "value";
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: the same on every platform
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

struct Input {
  std::string name;
  DType dtype;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  Tensor tensor;
};

// One op x dtype case: its statements, the inputs they read, and its eager references.
struct Case {
  const CatalogEntry* entry = nullptr;
  std::vector<std::string> outputs;  // the call's results (split: one per piece)
  std::vector<std::string> statements;
  std::vector<size_t> inputs;         // indices into Batch::inputs
  std::vector<Tensor> expected_same;  // eager in the operands' dtype
  std::vector<Tensor> expected_f64;   // eager with floating inputs as float64 (when used)
  std::vector<Tolerance> tolerances;
};

struct Batch {
  Config config;
  uint64_t seed = 0;
  std::vector<Input> inputs;
  std::map<std::string, size_t> by_name;

  size_t input(const std::string& name, DType dtype, std::vector<int64_t> sizes,
               std::vector<int64_t> strides, const std::function<Tensor()>& make) {
    if (auto it = by_name.find(name); it != by_name.end()) return it->second;
    inputs.push_back({name, dtype, std::move(sizes), std::move(strides), make()});
    by_name.emplace(name, inputs.size() - 1);
    return inputs.size() - 1;
  }

  std::string program(const std::vector<const Case*>& cases, bool as_f64) const {
    std::vector<bool> used(inputs.size(), false);
    for (const Case* c : cases) {
      for (size_t i : c->inputs) used[i] = true;
    }
    std::string text = "def sweep(";
    bool first = true;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!used[i]) continue;
      const Input& in = inputs[i];
      const DType dtype = as_f64 && is_floating(in.dtype) ? DType::Float64 : in.dtype;
      text += (first ? "" : ", ") + in.name + ": " + std::string(dtype_name(dtype)) +
              list(in.sizes) + " strides=" + list(in.strides);
      first = false;
    }
    text += "):\n";
    std::string outputs;
    for (const Case* c : cases) {
      for (const std::string& s : c->statements) text += "    " + s + "\n";
      for (const std::string& o : c->outputs) outputs += (outputs.empty() ? "" : ", ") + o;
    }
    return text + "    return " + outputs + "\n";
  }

  std::vector<Tensor> tensors(const ir::Graph& graph, bool as_f64) const {
    std::vector<Tensor> out;
    for (ir::ValueRef ref : graph.inputs()) {
      const Input& in = inputs.at(by_name.at(graph.value(ref).name));
      if (!as_f64 || !is_floating(in.dtype)) {
        out.push_back(in.tensor);
        continue;
      }
      Tensor wide = Tensor::empty(DType::Float64, in.sizes);
      for (int64_t p = 0; p < wide.numel(); ++p) wide.set_flat(p, in.tensor.get_flat(p));
      out.push_back(wide);
    }
    return out;
  }
};

std::string position(const std::vector<int64_t>& sizes, int64_t flat) {
  return list(unravel_index(flat, sizes));
}

std::string number(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// nullopt when `actual` matches `expected`; otherwise what differs, with the first element.
std::optional<std::string> mismatch(const Tensor& actual, const Tensor& expected,
                                    DType expected_dtype, const Tolerance& tol) {
  if (actual.dtype() != expected_dtype) {
    return "dtype " + std::string(dtype_name(actual.dtype())) + ", eager gives " +
           std::string(dtype_name(expected_dtype));
  }
  if (actual.sizes() != expected.sizes()) {
    return "sizes " + list(actual.sizes()) + ", eager gives " + list(expected.sizes());
  }
  if (eager::compare(actual, expected, tol.rtol, tol.atol).within_tolerance) return std::nullopt;
  int64_t bad = 0, first = -1;
  for (int64_t p = 0; p < actual.numel(); ++p) {
    const double a = actual.get_flat(p), e = expected.get_flat(p);
    const bool same = (std::isnan(a) && std::isnan(e)) || a == e ||
                      std::abs(a - e) <= tol.atol + tol.rtol * std::abs(e);
    if (!same && bad++ == 0) first = p;
  }
  std::string text =
      std::to_string(bad) + " of " + std::to_string(actual.numel()) + " elements differ";
  if (first >= 0) {
    text += "; at " + position(actual.sizes(), first) + " expected " +
            number(expected.get_flat(first)) + ", got " + number(actual.get_flat(first));
  }
  return text + " (rtol " + number(tol.rtol) + ", atol " + number(tol.atol) + ")";
}

class ConfigRun {
 public:
  ConfigRun(const Config& config, uint64_t seed) {
    batch_.config = config;
    batch_.seed = seed;
  }

  ConfigResult run(const std::vector<const CatalogEntry*>& entries) {
    std::vector<Case*> ready;
    cases_.reserve(entries.size());
    const auto t0 = Clock::now();
    for (const CatalogEntry* e : entries) {
      if (!fuzz::contains(e->dtypes, batch_.config.dtype) || !batch_.config.runs_case(e->name)) {
        continue;
      }
      cases_.emplace_back();
      Case& c = cases_.back();
      c.entry = e;
      if (build(c) && reference(c)) ready.push_back(&c);
    }
    result_.cases = static_cast<int>(ready.size());
    result_.eager_seconds = seconds_since(t0);
    if (!ready.empty()) compile_and_compare(ready);
    return result_;
  }

 private:
  void fail(const Case& c, int threads, const std::string& stage, const std::string& detail) {
    result_.failures.push_back(
        {c.entry->name, batch_.config, threads, stage, detail, batch_.program({&c}, false)});
  }

  // The case's statements and inputs; false when it does not apply or does not build.
  bool build(Case& c) {
    const Config& cfg = batch_.config;
    const size_t index = static_cast<size_t>(&c - cases_.data());
    const std::string prefix = "c" + std::to_string(index);
    const std::vector<int64_t> sizes{cfg.rows, cfg.cols};
    const std::vector<int64_t> strides = layout_strides(cfg.layout, cfg.rows, cfg.cols);
    fuzz::CallSite site;
    site.sizes = sizes;
    site.dtype = cfg.dtype;
    for (size_t k = 0; k < c.entry->operands.size(); ++k) {
      const bool condition = c.entry->bool_condition && k == 0;
      const DType dtype = condition ? DType::Bool : cfg.dtype;
      const Domain domain = c.entry->operands[k];
      const std::string name =
          condition ? std::string("cond") : std::string(domain_name(domain)) + std::to_string(k);
      const uint64_t seed = batch_.seed ^ name_hash(name + cfg.describe());
      c.inputs.push_back(batch_.input(name, dtype, sizes, strides, [&] {
        return fuzz::domain_tensor(domain, dtype, sizes, strides, seed);
      }));
      site.operands.push_back(name);
    }
    int temps = 0;
    site.temp = [&](const std::string& expr) {
      const std::string name = prefix + "_t" + std::to_string(temps++);
      c.statements.push_back(name + " = " + expr);
      return name;
    };
    site.temp_results = [&](const std::string& expr, int count) {
      std::vector<std::string> names;
      const std::string name = prefix + "_t" + std::to_string(temps++);
      c.statements.push_back(fuzz::result_targets(name, count, names) + " = " + expr);
      return names;
    };
    site.index_input = [&](const std::vector<int64_t>& index_sizes, int64_t bound) {
      const std::string name = prefix + "_i" + std::to_string(c.inputs.size());
      const uint64_t seed = batch_.seed ^ name_hash(name + cfg.describe());
      c.inputs.push_back(
          batch_.input(name, DType::Int64, index_sizes, ir::contiguous_strides(index_sizes),
                       [&] { return fuzz::index_tensor(index_sizes, bound, seed); }));
      return name;
    };
    // copy_'s destination: its old contents are never read; the case's output is the value
    // written (the fuzzer's check compares the written input itself, fuzz/case_check.cpp).
    site.destination_input = [&](DType dtype, const std::vector<int64_t>& dest_sizes,
                                 const std::vector<int64_t>& dest_strides) {
      const std::string name = prefix + "_d" + std::to_string(c.inputs.size());
      const std::vector<int64_t> laid =
          dest_strides.empty() ? ir::contiguous_strides(dest_sizes) : dest_strides;
      const uint64_t seed = batch_.seed ^ name_hash(name + cfg.describe());
      c.inputs.push_back(batch_.input(name, dtype, dest_sizes, laid, [&] {
        return fuzz::domain_tensor(Domain::Any, dtype, dest_sizes, laid, seed);
      }));
      return name;
    };
    const std::optional<std::string> call = c.entry->call(site);
    if (!call) return false;  // the op does not apply to these sizes (by the catalogue)
    const int results = c.entry->result_count ? c.entry->result_count(site) : 1;
    c.statements.push_back(fuzz::result_targets(prefix, results, c.outputs) + " = " + *call);
    try {
      ir::parse_graph(batch_.program({&c}, false));
    } catch (const std::exception& e) {
      fail(c, 0, "build", e.what());
      return false;
    }
    return true;
  }

  bool reference(Case& c) {
    try {
      const ir::Graph graph = ir::parse_graph(batch_.program({&c}, false));
      c.expected_same = eager::run(graph, batch_.tensors(graph, false));
      c.tolerances = output_tolerances(graph);
      if (c.entry->reference == fuzz::Reference::Float64) {
        const ir::Graph wide = ir::parse_graph(batch_.program({&c}, true));
        c.expected_f64 = eager::run(wide, batch_.tensors(wide, true));
      }
    } catch (const std::exception& e) {
      fail(c, 0, "eager", e.what());
      return false;
    }
    return true;
  }

  // Compiles and runs `cases` as one graph in a sandboxed child (fuzz/sandbox.h), so that a
  // crash or a hang of generated code is a failure of its case, not the end of the sweep. A
  // batch that does not compile, throws, crashes or hangs is split in halves until the
  // failing cases are alone.
  void compile_and_compare(const std::vector<Case*>& cases) {
    const size_t failures_before = result_.failures.size();
    const fuzz::Outcome o = fuzz::run_isolated([&] { return in_child(cases, failures_before); },
                                               fuzz::SandboxOptions{900.0});
    if (o.kind == fuzz::FailureKind::None || o.kind == fuzz::FailureKind::Mismatch) {
      read_report(o.detail, cases);
      return;
    }
    if (cases.size() == 1) {
      const char* kind = fuzz::failure_kind_name(o.kind);
      fail(*cases[0], 0, o.kind == fuzz::FailureKind::Refused ? o.stage : kind, o.detail);
      return;
    }
    // A refusal names the value the compiler refused ("lowering mm 'c182' at <input>:3", the
    // case's prefix): that case fails alone and the others compile without it, one compile
    // instead of a bisection's dozen (an op that lowering does not handle yet, issue 14's
    // matrix products first, is refused in every batch it is in).
    if (o.kind == fuzz::FailureKind::Refused && o.stage == "compile") {
      if (const auto culprit = refused_case(o.detail, cases)) {
        fail(*cases[*culprit], 0, o.stage, o.detail);
        std::vector<Case*> rest = cases;
        rest.erase(rest.begin() + static_cast<long>(*culprit));
        compile_and_compare(rest);
        return;
      }
    }
    const size_t half = cases.size() / 2;
    compile_and_compare({cases.begin(), cases.begin() + static_cast<long>(half)});
    compile_and_compare({cases.begin() + static_cast<long>(half), cases.end()});
  }

  // The position in `cases` of the case whose value `message` names in quotes ('c12' or a
  // temporary 'c12_t0'), if any.
  std::optional<size_t> refused_case(const std::string& message, const std::vector<Case*>& cases) {
    for (size_t at = message.find("'c"); at != std::string::npos; at = message.find("'c", at + 1)) {
      size_t end = at + 2;
      while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end]))) ++end;
      if (end == at + 2 || end >= message.size() || (message[end] != '\'' && message[end] != '_')) {
        continue;
      }
      const size_t index = std::stoul(message.substr(at + 2, end - at - 2));
      for (size_t k = 0; k < cases.size(); ++k) {
        if (static_cast<size_t>(cases[k] - cases_.data()) == index) return k;
      }
    }
    return std::nullopt;
  }

  // The child's side: compile, run at every thread count, compare; the comparisons' failures
  // and the figures go back in the outcome's detail (read_report). A refusal or an exception
  // while running is a Refused outcome naming its stage.
  fuzz::Outcome in_child(const std::vector<Case*>& cases, size_t failures_before) {
    fuzz::Outcome out;
    std::vector<const Case*> view(cases.begin(), cases.end());
    out.stage = "compile";
    try {
      fuzz::note_stage("compile");
      const ir::Graph graph = ir::parse_graph(batch_.program(view, false));
      CompileOptions options;
      options.simd = batch_.config.level;
      options.num_threads = 3;
      options.fuse = false;  // each op its own kernel, in the form it gets alone
      auto t0 = Clock::now();
      const CompiledGraph compiled = compile(graph, options);
      const double compile_seconds = seconds_since(t0);
      t0 = Clock::now();
      std::ostringstream report;
      if (!runtime::cpu_supports(batch_.config.level)) {
        report << "#stats 0 " << compile_seconds << " 0 notrun\n";
        out.detail = report.str();
        return out;
      }
      const std::vector<Tensor> inputs = batch_.tensors(graph, false);
      std::vector<std::vector<Tensor>> outputs;
      out.stage = "run";
      fuzz::note_stage("run");
      for (int threads : sweep_thread_counts()) {
        outputs.push_back(compiled.run(inputs, RunOptions{threads}));
      }
      out.stage = "compare";
      fuzz::note_stage("compare");
      const int compared_before = result_.compared;
      for (size_t t = 0; t < outputs.size(); ++t) {
        size_t next = 0;
        for (const Case* c : cases) {
          for (size_t k = 0; k < c->outputs.size(); ++k) compare(*c, k, outputs[t].at(next++), t);
        }
      }
      for (size_t f = failures_before; f < result_.failures.size(); ++f) {
        const Failure& failure = result_.failures[f];
        size_t index = 0;
        while (cases[index]->entry->name != failure.case_name) ++index;
        std::string detail = failure.detail;
        for (char& ch : detail) ch = ch == '\n' ? ' ' : ch;
        report << index << "\t" << failure.threads << "\t" << detail << "\n";
      }
      report << "#stats " << result_.compared - compared_before << " " << compile_seconds << " "
             << seconds_since(t0) << "\n";
      out.kind = result_.failures.size() > failures_before ? fuzz::FailureKind::Mismatch
                                                           : fuzz::FailureKind::None;
      out.detail = report.str();
    } catch (const std::exception& e) {
      out.kind = fuzz::FailureKind::Refused;
      out.detail = e.what();
    }
    return out;
  }

  void read_report(const std::string& report, const std::vector<Case*>& cases) {
    std::istringstream in(report);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      if (line.rfind("#stats ", 0) == 0) {
        std::string tag, notrun;
        int compared = 0;
        double compile_seconds = 0, run_seconds = 0;
        fields >> tag >> compared >> compile_seconds >> run_seconds >> notrun;
        result_.compared += compared;
        result_.compile_seconds += compile_seconds;
        result_.run_seconds += run_seconds;
        if (notrun == "notrun") result_.run = false;
        continue;
      }
      size_t index = 0;
      int threads = 0;
      char tab = 0;
      fields >> index >> threads;
      fields.get(tab);
      std::string detail;
      std::getline(fields, detail);
      fail(*cases.at(index), threads, "compare", detail);
    }
  }

  // Output k of case c: floating results against the float64 reference where it is the
  // reference, else against eager in the dtype; integers and bools exactly.
  void compare(const Case& c, size_t k, const Tensor& actual, size_t thread_index) {
    ++result_.compared;
    const Tensor& same = c.expected_same.at(k);
    const bool floating = is_floating(same.dtype());
    const bool wide = floating && !c.expected_f64.empty();
    const Tolerance tol = floating ? c.tolerances.at(k) : Tolerance{0, 0};
    if (auto problem = mismatch(actual, wide ? c.expected_f64.at(k) : same, same.dtype(), tol)) {
      const std::string which =
          c.outputs.size() > 1 ? "result " + std::to_string(k) + ": " : std::string();
      fail(c, sweep_thread_counts()[thread_index], "compare",
           which + *problem + (wide ? " against float64 eager" : " against eager"));
    }
  }

  Batch batch_;
  std::vector<Case> cases_;
  ConfigResult result_;
};

}  // namespace

std::string Failure::describe() const {
  std::string s = case_name + " | " + config.describe();
  if (threads > 0) s += " | " + std::to_string(threads) + " threads";
  return s + " | " + stage + ": " + detail;
}

ConfigResult run_config(const Config& config, const std::vector<const CatalogEntry*>& cases,
                        uint64_t seed) {
  return ConfigRun(config, seed).run(cases);
}

}  // namespace stax::sweep
