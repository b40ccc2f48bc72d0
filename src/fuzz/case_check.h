// The fuzzer's two oracles, run in-process on one program text:
//  - check_valid: a program that must work. It must parse, print back to the same graph, run
//    in the eager interpreter, compile (stax::compile, JIT) and match the eager outputs within
//    the project's tolerance.
//  - check_clean_errors: any text (a mutated program). Parsing, stax::analyze (lowering,
//    scheduling, code generation; no C++ compiler) and the eager interpreter must each either
//    succeed or throw a std::exception with a non-empty message.
// Crashes and hangs cannot be observed in-process; run these under run_isolated (sandbox.h).
#pragma once

#include <string>
#include <vector>

#include "fuzz/program_generator.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace stax::fuzz {

enum class FailureKind {
  None,             // the check passed
  Mismatch,         // compiled and eager outputs differ beyond tolerance
  Refused,          // a valid program was rejected (a std::exception in check_valid)
  RoundTrip,        // parse(print(graph)) != graph
  NonStdException,  // something not derived from std::exception was thrown
  EmptyMessage,     // a std::exception whose what() is empty
  Accepted,         // a saved program expected to be refused was accepted
  Crash,            // the process died from a signal (sandbox only)
  Timeout,          // the process ran past its time bound (sandbox only)
  SandboxError,     // the sandbox itself failed (fork, pipe); not a finding
};

struct Outcome {
  FailureKind kind = FailureKind::None;
  int signal = 0;      // for Crash
  std::string stage;   // parse, print, eager, compile, analyze: where it happened
  std::string detail;  // what happened, one line: the message, the output and differences
  bool failed() const { return kind != FailureKind::None; }
};

// "mismatch", "crash", ... (file names and reports); the inverse is parse_failure_kind.
const char* failure_kind_name(FailureKind kind);
bool parse_failure_kind(const std::string& name, FailureKind& kind);
// Two outcomes are the same failure for the reducer: same kind, stage and signal, and for
// refusals the same head of the message (the op or pass that refused), so that a reduction
// step that merely breaks the program (a parse error) does not count as the same failure.
bool same_failure(const Outcome& a, const Outcome& b);

Outcome check_valid(const std::string& text, const CaseOptions& options);
// Random values for every input of `graph`, in its declared layouts (seeds seed, seed + 1, ...).
std::vector<Tensor> random_inputs(const ir::Graph& graph, uint64_t seed);

// Programs whose values exceed this many elements in total are not run by the eager
// interpreter in check_clean_errors: a mutated size may ask for terabytes, and working
// through them is slow but not a bug.
constexpr long long kMaxEagerElements = 1LL << 22;
// `errors`, when given, receives the messages of the stages that refused the program.
Outcome check_clean_errors(const std::string& text, std::vector<std::string>* errors = nullptr);

}  // namespace stax::fuzz
