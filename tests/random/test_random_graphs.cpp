// Property test: random graphs of pointwise ops, broadcasts, reductions and views from the
// fuzzer's program generator (src/fuzz/program_generator.h), compiled with the options the
// generator draws (fusion on/off, SIMD levels, 1 and 2 threads) and compared with the eager
// oracle by the fuzzer's valid-program check. The generator keeps every value
// well-conditioned, so any mismatch beyond tolerance is a compiler bug.
#include <gtest/gtest.h>

#include "fuzz/case_check.h"
#include "fuzz/program_generator.h"

namespace stax {
namespace {

constexpr uint64_t kGraphs = 120;

// Rank-2 programs without 0-dim values: the pointwise/reduction/view mix this test has always
// covered. The fuzzer's suites (tests/fuzz) cover ranks 1 to 4 and 0-dim values.
fuzz::GeneratorOptions two_dimensional() {
  fuzz::GeneratorOptions o;
  o.min_rank = 2;
  o.max_rank = 2;
  o.zero_dim_values = false;
  o.min_statements = 4;
  o.max_statements = 12;
  return o;
}

TEST(RandomGraphs, CompiledMatchesEager) {
  for (uint64_t seed = 1; seed <= kGraphs; ++seed) {
    const fuzz::GeneratedCase c = fuzz::generate_case(seed, two_dimensional());
    SCOPED_TRACE(c.text);
    const fuzz::Outcome outcome = fuzz::check_valid(c.text, c.options);
    EXPECT_FALSE(outcome.failed())
        << "seed " << seed << ": " << fuzz::failure_kind_name(outcome.kind) << ": "
        << outcome.detail;
  }
}

// Section 7.5's placements (issue 16, points 2 and 3) change no result: the same programs with
// the arena, with the free pool and with neither, each with in-place reuse on and off (the
// first, the default, is CompiledMatchesEager's).
TEST(RandomGraphs, CompiledMatchesEagerUnderEveryMemoryPlacement) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const fuzz::GeneratedCase c = fuzz::generate_case(seed, two_dimensional());
    SCOPED_TRACE(c.text);
    for (int placement = 1; placement < 6; ++placement) {
      fuzz::CaseOptions o = c.options;
      o.memory_arena = placement % 3 == 0;
      o.reuse_buffers = placement % 3 == 1;
      o.in_place_reuse = placement < 3;
      const fuzz::Outcome outcome = fuzz::check_valid(c.text, o);
      EXPECT_FALSE(outcome.failed())
          << "seed " << seed << ", placement " << placement << ": "
          << fuzz::failure_kind_name(outcome.kind) << ": " << outcome.detail;
    }
  }
}

}  // namespace
}  // namespace stax
