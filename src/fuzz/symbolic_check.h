// Issue 33's fuzz mode: a valid program made symbolic and run as one program at other sizes.
// The generator's programs are static; `symbolize` turns the size of one input dim into the
// symbol s0 wherever an input of a contiguous layout has that size, and `check_symbolic`
// compiles the result once and runs it at the hint and at other values of s0, each against
// the eager interpreter on the graph bound to those sizes. It finds what a program meant for
// every size must not do: read a size, or an int computed from one, at the symbols' hint.
#pragma once

#include <optional>
#include <string>

#include "fuzz/case_check.h"

namespace stax::fuzz {

// The program with one input size N >= 2 (the first input's first such dim) spelled s0 in
// every contiguous input's type, and `where s0: [2, 4096] hint=N`; nullopt when no input has
// such a dim, or when the graph's shape rules refuse the symbol (a view to constant sizes
// that hold at N only, an input laid out with explicit strides).
std::optional<std::string> symbolize(const std::string& text);

// Compiles `symbolic` (symbolize's output) once and runs it at s0 = its hint, hint + 1, 2 and
// 2 * hint + 3 against the eager interpreter at each; a size at which eager refuses the bound
// graph (an op that needs the sizes it was generated with) is skipped. Mismatch, Refused
// (stage "symbolic") or a passing outcome.
Outcome check_symbolic(const std::string& symbolic, const CaseOptions& options);

}  // namespace stax::fuzz
