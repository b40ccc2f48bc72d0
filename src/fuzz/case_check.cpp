// The valid-program oracle (compiled vs eager) and the clean-error oracle (mutated programs).
#include "fuzz/case_check.h"

#include <exception>
#include <sstream>
#include <typeinfo>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "fuzz/sandbox.h"
#include "fuzz/symbolic_check.h"
#include "ir/graph.h"

namespace stax::fuzz {

namespace {

struct KindName {
  FailureKind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {
    {FailureKind::None, "pass"},
    {FailureKind::Mismatch, "mismatch"},
    {FailureKind::Refused, "refused"},
    {FailureKind::RoundTrip, "round-trip"},
    {FailureKind::NonStdException, "non-std-exception"},
    {FailureKind::EmptyMessage, "empty-message"},
    {FailureKind::Accepted, "accepted"},
    {FailureKind::Crash, "crash"},
    {FailureKind::Timeout, "timeout"},
    {FailureKind::SandboxError, "sandbox-error"},
};

Outcome fail(FailureKind kind, const char* stage, std::string detail) {
  Outcome o;
  o.kind = kind;
  o.stage = stage;
  o.detail = std::string(stage) + ": " + detail;
  return o;
}

// The message up to its first ':' or space: "view" of "view: size ...", "lowering" of
// "lowering: unknown op".
std::string message_head(const std::string& detail) {
  const size_t after_stage = detail.find(": ");
  const std::string message =
      after_stage == std::string::npos ? detail : detail.substr(after_stage + 2);
  return message.substr(0, message.find_first_of(": "));
}

// Runs one stage; a std::exception with a message is `on_error` (None for the clean-error
// oracle), an empty message or a foreign exception is a failure in either oracle.
template <typename Fn>
Outcome guarded(const char* stage, FailureKind on_error, Fn&& fn,
                std::vector<std::string>* errors = nullptr) {
  note_stage(stage);
  try {
    fn();
    return {};
  } catch (const std::exception& e) {
    const char* what = e.what();
    if (what == nullptr || *what == '\0') {
      return fail(FailureKind::EmptyMessage, stage,
                  std::string("a std::exception (") + typeid(e).name() + ") with an empty message");
    }
    if (errors != nullptr) errors->push_back(std::string(stage) + ": " + what);
    if (on_error == FailureKind::None) return {};
    return fail(on_error, stage, what);
  } catch (...) {
    return fail(FailureKind::NonStdException, stage,
                "an exception not derived from std::exception");
  }
}

long long total_elements(const ir::Graph& graph) {
  long long total = 0;
  for (const ir::Value& v : graph.values()) {
    long long n = 1;
    for (int64_t s : v.type.sizes) {
      if (s != 0 && n > kMaxEagerElements / s) return kMaxEagerElements + 1;
      n *= s;
    }
    total += n;
    if (total > kMaxEagerElements) return total;
  }
  return total;
}

}  // namespace

const char* failure_kind_name(FailureKind kind) {
  for (const KindName& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

bool parse_failure_kind(const std::string& name, FailureKind& kind) {
  for (const KindName& k : kKindNames) {
    if (name == k.name) {
      kind = k.kind;
      return true;
    }
  }
  return false;
}

bool same_failure(const Outcome& a, const Outcome& b) {
  if (a.kind != b.kind || a.signal != b.signal || a.stage != b.stage) return false;
  return a.kind != FailureKind::Refused || message_head(a.detail) == message_head(b.detail);
}

Outcome check_valid(const std::string& text, const CaseOptions& options) {
  ir::Graph graph;
  if (Outcome o = guarded("parse", FailureKind::Refused, [&] { graph = ir::parse_graph(text); });
      o.failed()) {
    return o;
  }
  bool round_trips = false;
  if (Outcome o = guarded("print", FailureKind::Refused,
                          [&] { round_trips = ir::parse_graph(ir::print_graph(graph)) == graph; });
      o.failed()) {
    return o;
  }
  if (!round_trips) {
    return fail(FailureKind::RoundTrip, "print",
                "parse(print(graph)) differs from the graph; printed:\n" + ir::print_graph(graph));
  }
  std::vector<Tensor> inputs;
  std::vector<Tensor> expected;
  // Inputs the graph writes in place (copy_): each run writes its own copy, compared after.
  const std::vector<ir::InputWrite> writes = ir::input_writes(graph);
  std::vector<Tensor> eager_inputs;
  std::vector<Tensor> oracle_values;  // every value, for the tolerances' condition numbers
  if (Outcome o = guarded("eager", FailureKind::Refused,
                          [&] {
                            inputs = random_inputs(graph, options.input_seed);
                            eager_inputs = inputs;
                            for (const auto& w : writes) {
                              eager_inputs[w.input] = inputs[w.input].clone_storage();
                            }
                            expected = eager::run(graph, eager_inputs, &oracle_values);
                          });
      o.failed()) {
    return o;
  }
  CompileOptions compile_options;
  compile_options.simd = options.simd;
  compile_options.num_threads = options.num_threads;
  compile_options.fuse = options.fuse;
  compile_options.localize = options.localize;
  compile_options.memory_arena = options.memory_arena;
  compile_options.reuse_buffers = options.reuse_buffers;
  compile_options.in_place_reuse = options.in_place_reuse;
  std::vector<Tensor> actual;
  if (Outcome o = guarded("compile", FailureKind::Refused,
                          [&] { actual = compile(graph, compile_options).run(inputs); });
      o.failed()) {
    return o;
  }
  if (actual.size() != expected.size()) {
    return fail(FailureKind::Mismatch, "compare",
                "compiled graph returned " + std::to_string(actual.size()) + " outputs, eager " +
                    std::to_string(expected.size()));
  }
  // Each output's own tolerance, from its dtype, the reductions that feed it and the condition
  // numbers on the way (driver/tolerance.h, shared with the differential sweep and `stax run`).
  const std::vector<Tolerance> tolerances = output_tolerances(graph, &oracle_values);
  for (size_t k = 0; k < actual.size(); ++k) {
    const Tolerance& tol = tolerances[k];
    const eager::Difference diff = eager::compare(actual[k], expected[k], tol.rtol, tol.atol);
    if (!diff.within_tolerance) {
      std::ostringstream detail;
      detail << "output " << k << " ('" << graph.value(graph.outputs()[k]).name
             << "'): max abs difference " << diff.max_abs << ", max rel " << diff.max_rel
             << " (rtol " << tol.rtol << ", atol " << tol.atol << ")";
      return fail(FailureKind::Mismatch, "compare", detail.str());
    }
  }
  for (const auto& w : writes) {
    const Tolerance tol = graph_value_tolerance(graph, w.value, &oracle_values);
    const eager::Difference diff =
        eager::compare(inputs[w.input], eager_inputs[w.input], tol.rtol, tol.atol);
    if (!diff.within_tolerance) {
      std::ostringstream detail;
      detail << "input " << w.input << " ('" << graph.value(graph.inputs()[w.input]).name
             << "', written in place): max abs difference " << diff.max_abs << ", max rel "
             << diff.max_rel << " (rtol " << tol.rtol << ", atol " << tol.atol << ")";
      return fail(FailureKind::Mismatch, "compare", detail.str());
    }
  }
  if (options.symbolic) {
    if (const std::optional<std::string> symbolic = symbolize(text)) {
      return check_symbolic(*symbolic, options);
    }
  }
  return {};
}

Outcome check_clean_errors(const std::string& text, std::vector<std::string>* errors) {
  ir::Graph graph;
  bool parsed = false;
  if (Outcome o = guarded(
          "parse", FailureKind::None,
          [&] {
            graph = ir::parse_graph(text);
            parsed = true;
          },
          errors);
      o.failed() || !parsed) {
    return o;
  }
  if (Outcome o = guarded(
          "analyze", FailureKind::None, [&] { analyze(graph); }, errors);
      o.failed()) {
    return o;
  }
  if (total_elements(graph) > kMaxEagerElements) return {};
  return guarded(
      "eager", FailureKind::None, [&] { eager::run(graph, random_inputs(graph, /*seed=*/1)); },
      errors);
}

std::vector<Tensor> random_inputs(const ir::Graph& graph, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (ir::ValueRef ref : graph.inputs()) {
    const ir::TensorType& t = graph.value(ref).type;
    inputs.push_back(eager::random_tensor_strided(t.dtype, t.sizes, t.strides, seed++));
  }
  return inputs;
}

}  // namespace stax::fuzz
