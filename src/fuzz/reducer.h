// Delta debugging of a failing program: shrinks the text while a predicate ("the same failure
// still happens") holds. Passes, repeated until none makes progress or the check budget runs
// out: remove chunks of lines (ddmin), drop outputs, bypass statements (uses of a value
// replaced by one of its operands), replace operands by inputs, drop call arguments and
// list elements, shrink integer literals (all occurrences at once, so sizes stay consistent),
// drop stride annotations and inputs, and finally remove characters within lines (for
// mutated programs that do not parse). It works on text only, so it also reduces programs
// that no longer parse.
#pragma once

#include <functional>
#include <string>

namespace stax::fuzz {

struct ReduceOptions {
  int max_checks = 500;         // predicate evaluations; each may be a JIT compile
  bool character_level = true;  // the last, most expensive pass
};

struct ReduceResult {
  std::string text;
  int checks = 0;    // predicate evaluations made (memoized repeats not counted)
  int accepted = 0;  // reductions kept
};

// `still_fails(text)` must hold for `text` itself; the result is the smallest text found for
// which it holds.
ReduceResult reduce_program(const std::string& text,
                            const std::function<bool(const std::string&)>& still_fails,
                            const ReduceOptions& options = {});

}  // namespace stax::fuzz
