// The fuzzer as CI runs it: a fixed seed, a fixed number of cases. 30 float32 valid programs
// and 30 with catalogue steps (every registered op on every dtype; each JIT-compiled at a
// small size) must match the eager oracle, 30 more also as symbolic programs at other sizes,
// and 2000 mutated programs (no JIT) must be parsed, analyzed and interpreted without a
// crash, a hang or an unclear error.
// A failure is reduced first, so the message shows a small program that reproduces it.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "fuzz/fuzz_session.h"
#include "fuzz/known_failures.h"

namespace stax::fuzz {
namespace {

constexpr uint64_t kSeed = 20261201;

std::string describe(const SessionStats& stats) {
  std::ostringstream out;
  for (const Finding& f : stats.findings) {
    out << failure_kind_name(f.outcome.kind) << " in case " << f.case_index << ": "
        << f.outcome.detail << "\nreduced program:\n"
        << f.reduced << "\n";
  }
  return out.str();
}

SessionOptions ci_options(Mode mode, long long cases) {
  SessionOptions o;
  o.seed = kSeed;
  o.mode = mode;
  o.cases = cases;
  // Small programs keep each JIT compile short; the valid-mode reducer (a JIT compile per
  // check) gets a small budget so that a failing run still ends in reasonable time.
  o.valid_generator.max_elements = 1024;
  o.valid_generator.large_one_in = 0;
  o.valid_reduce.max_checks = 40;
  return o;
}

TEST(FuzzCi, ValidProgramsMatchEager) {
  SessionOptions o = ci_options(Mode::Valid, 30);
  o.valid_generator.catalog_ops = false;  // the float32 programs this test has always run
  const SessionStats stats = run_session(o);
  EXPECT_EQ(stats.valid_cases, 30);
  EXPECT_EQ(stats.sandbox_errors, 0);
  EXPECT_TRUE(stats.findings.empty()) << describe(stats);
}

// Programs with catalogue steps: every registered op of issue 6 on every dtype it accepts,
// except the case x dtype pairs the differential sweep lists as known failures
// (tests/sweep/KNOWN_FAILURES.md), so that CI looks for failures nobody has found yet.
TEST(FuzzCi, CatalogueProgramsMatchEager) {
  SessionOptions o = ci_options(Mode::Valid, 30);
  o.valid_generator.excluded_cases = read_known_failures(STAX_KNOWN_FAILURES);
  std::cout << "fuzz: leaving out the " << o.valid_generator.excluded_cases.size()
            << " case x dtype pairs of KNOWN_FAILURES.md\n";
  const SessionStats stats = run_session(o);
  EXPECT_EQ(stats.valid_cases, 30);
  EXPECT_EQ(stats.sandbox_errors, 0);
  EXPECT_TRUE(stats.findings.empty()) << describe(stats);
}

// Issue 33: each valid float32 program is also made symbolic (one input size spelled s0) and
// compiled once; that one program runs at the hint and at other sizes against the eager
// interpreter at each (symbolic_check.h).
TEST(FuzzCi, SymbolicProgramsMatchEagerAtOtherSizes) {
  SessionOptions o = ci_options(Mode::Valid, 30);
  o.seed = kSeed + 33;
  o.valid_generator.catalog_ops = false;
  o.valid_generator.symbolic_one_in = 1;
  const SessionStats stats = run_session(o);
  EXPECT_EQ(stats.valid_cases, 30);
  EXPECT_EQ(stats.sandbox_errors, 0);
  EXPECT_TRUE(stats.findings.empty()) << describe(stats);
}

TEST(FuzzCi, MutatedProgramsFailCleanly) {
  const SessionStats stats = run_session(ci_options(Mode::Mutate, 2000));
  EXPECT_EQ(stats.mutated_cases, 2000);
  EXPECT_EQ(stats.sandbox_errors, 0);
  EXPECT_TRUE(stats.findings.empty()) << describe(stats);
}

}  // namespace
}  // namespace stax::fuzz
