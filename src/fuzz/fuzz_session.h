// A fuzzing session: generates cases from a seed (valid programs compiled against the eager
// oracle, mutated programs checked for clean errors), runs each in the sandbox, reduces every
// failure to a small program with the same kind of failure and saves it as a regression file.
// Case k of seed S is the same program on every run, so findings are reproducible.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "fuzz/case_check.h"
#include "fuzz/program_generator.h"
#include "fuzz/reducer.h"
#include "fuzz/sandbox.h"

namespace stax::fuzz {

enum class Mode { Valid, Mutate, Both };

inline ReduceOptions reduce_budget(int max_checks, bool character_level) {
  ReduceOptions o;
  o.max_checks = max_checks;
  o.character_level = character_level;
  return o;
}

inline GeneratorOptions with_catalog_ops() {
  GeneratorOptions o;
  o.catalog_ops = true;
  return o;
}

struct SessionOptions {
  uint64_t seed = 1;
  // Stop after this many cases (all modes together), or after this many seconds; at least
  // one of them must be positive. With mode Both, each case goes to the mode that has used
  // less time so far, so both get about half of the time.
  long long cases = 0;
  double seconds = 0;
  Mode mode = Mode::Both;
  std::string out_dir;  // reduced failures are written here; empty: not written
  bool reduce = true;
  // Both cover the whole catalogue (every registered op on every dtype it accepts).
  GeneratorOptions valid_generator = with_catalog_ops();
  GeneratorOptions mutate_generator = with_catalog_ops();
  SandboxOptions valid_sandbox{120.0};
  SandboxOptions mutate_sandbox{10.0};
  ReduceOptions valid_reduce = reduce_budget(120, false);  // each check JIT-compiles
  ReduceOptions mutate_reduce = reduce_budget(1500, true);
  // A known bug keeps being hit; failures whose signature (kind, stage, signal, message with
  // the numbers removed) was already reduced this often are counted but not reduced again.
  int reductions_per_signature = 2;
  std::ostream* log = nullptr;  // progress and findings; null: silent
  double progress_every_seconds = 15.0;
  // Seconds since some fixed point; empty: the steady clock. With `seconds` set, no case or
  // reduction check runs past the budget: each sandbox's time bound is cut to the time left,
  // and a reduction stops at the end of the budget with the smallest text found so far.
  std::function<double()> clock;
  // Runs one check (a case or a reduction candidate) with the given time bound; empty: the
  // sandboxed oracle of the mode (check_valid or check_clean_errors under run_isolated).
  // Tests replace it to make checks slow without waiting for them.
  std::function<Outcome(Mode, const std::string& text, const CaseOptions&, double timeout)>
      run_check;
};

struct Finding {
  Mode mode = Mode::Valid;
  long long case_index = 0;
  Outcome outcome;
  std::string original;
  std::string reduced;
  CaseOptions options;
  std::string file;        // where the reduced program was written, if it was
  bool duplicate = false;  // reduced to a program found earlier in this session
  bool skipped = false;    // not reduced or saved: its signature was reduced often enough
};

struct SessionStats {
  long long valid_cases = 0;
  long long mutated_cases = 0;
  long long sandbox_errors = 0;
  double valid_seconds = 0;
  double mutate_seconds = 0;
  std::vector<Finding> findings;
  std::map<std::string, int> failures_by_kind;
};

// The program and options of case `index` of `seed` in `mode` (Valid or Mutate).
GeneratedCase case_program(uint64_t seed, long long index, Mode mode,
                           const SessionOptions& options);

SessionStats run_session(const SessionOptions& options);

// One line per figure: cases per mode, failures per kind, reduced files.
void print_summary(std::ostream& out, const SessionStats& stats);

}  // namespace stax::fuzz
