// Saved fuzz failures (.stax files under tests/fuzz/regressions and the fuzzer's --out): the
// program text preceded by `#!fuzz` header lines that say what failed and what is expected:
//   #!fuzz found: crash (killed by signal 11 (SIGSEGV)); mode mutate, seed 7, case 123
//   #!fuzz expect: clean
//   #!fuzz options: simd=avx2 threads=2 fuse=1 localize=1 input_seed=42
//   def g(a: f32[3]):
//   ...
// Expectations: `match` (check_valid: compiled equals eager), `clean` (check_clean_errors:
// every stage succeeds or throws a clean std::exception), `refused` (clean, and at least one
// stage refuses the program).
#pragma once

#include <string>

#include "fuzz/case_check.h"
#include "fuzz/program_generator.h"

namespace stax::fuzz {

enum class Expectation { Match, Clean, Refused };

struct RegressionCase {
  std::string found;  // the `found:` line
  Expectation expect = Expectation::Clean;
  CaseOptions options;
  std::string program;  // the text after the header, byte for byte
};

std::string format_regression(const RegressionCase& c);
// Throws std::invalid_argument naming `path` and the header line that is malformed.
RegressionCase parse_regression(const std::string& file_text, const std::string& path);

// Runs the expectation's oracle in-process.
Outcome check_regression(const RegressionCase& c);

}  // namespace stax::fuzz
