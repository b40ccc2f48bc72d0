// Runs the sweep's cases of one configuration: builds one graph per op x dtype case (text
// format), runs it in the eager interpreter (the oracle: in the operands' dtype, and with
// the floating inputs converted to float64 for a float64 reference), compiles all cases of
// the configuration together as one graph (one JIT compile; each op stays its own kernel,
// fusion off), runs it at every thread count and compares each output with its reference.
// A graph that fails to compile or run is split in halves until the failing cases are
// isolated, so one bad op does not hide the others.
#pragma once

#include <string>
#include <vector>

#include "fuzz/op_catalog.h"
#include "sweep_plan.h"

namespace stax::sweep {

struct Failure {
  std::string case_name;  // the catalogue case, e.g. "div.floor"
  Config config;
  int threads = 0;    // 0: before running (build, eager, compile)
  std::string stage;  // build, eager, compile, run, compare
  std::string detail;
  std::string program;           // the case alone, as a text-format program (inputs as compiled)
  std::string describe() const;  // one line: case, config, threads, stage and detail
};

struct ConfigResult {
  int cases = 0;     // cases built for this configuration
  int compared = 0;  // case x thread-count comparisons made
  bool run = true;   // false: the CPU lacks the level, the graph was compile-checked only
  std::vector<Failure> failures;
  double eager_seconds = 0;    // case programs and eager references
  double compile_seconds = 0;  // stax::compile of the batched graph (and its halves)
  double run_seconds = 0;      // compiled runs and comparisons
};

ConfigResult run_config(const Config& config, const std::vector<const fuzz::CatalogEntry*>& cases,
                        uint64_t seed);

}  // namespace stax::sweep
