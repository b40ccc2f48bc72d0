// Delta debugging of a failing program: shrinks the text while a predicate ("the same failure
// still happens") holds. Passes, repeated until none makes progress or the check budget runs
// out: remove chunks of lines (ddmin), drop outputs, bypass statements (uses of a value
// replaced by one of its operands), replace operands by inputs, drop call arguments and
// list elements, shrink integer literals (all occurrences at once, so sizes stay consistent),
// drop stride annotations and inputs, and finally remove characters within lines (for
// mutated programs that do not parse). It works on text only, so it also reduces programs
// that no longer parse.
//
// Besides the check budget it keeps a time budget (issue 32, point 4): a check may take as
// long as its sandbox allows (seconds for a slow candidate), so only a deadline bounds the
// time a reduction takes. The clock is injectable so that tests can make checks "slow"
// deterministically.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <string>

namespace stax::fuzz {

// What the reducer is doing, reported after each check.
struct ReduceProgress {
  const char* pass = "";  // the pass that proposed the candidate ("remove line chunks", ...)
  int checks = 0;
  int accepted = 0;
  size_t size = 0;  // characters of the smallest failing text so far
};

struct ReduceOptions {
  int max_checks = 500;         // predicate evaluations; each may be a JIT compile
  bool character_level = true;  // the last, most expensive pass
  // Seconds on `clock`: no check starts once clock() >= deadline. No clock: no time limit.
  std::function<double()> clock;
  double deadline = std::numeric_limits<double>::infinity();
  std::function<void(const ReduceProgress&)> on_check;  // optional
};

struct ReduceResult {
  std::string text;
  int checks = 0;            // predicate evaluations made (memoized repeats not counted)
  int accepted = 0;          // reductions kept
  bool out_of_time = false;  // stopped at the deadline, with candidates left to try
};

// `still_fails(text)` must hold for `text` itself; the result is the smallest text found for
// which it holds.
ReduceResult reduce_program(const std::string& text,
                            const std::function<bool(const std::string&)>& still_fails,
                            const ReduceOptions& options = {});

}  // namespace stax::fuzz
