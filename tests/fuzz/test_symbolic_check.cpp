// Issue 33's fuzz mode (fuzz/symbolic_check.h): which programs become symbolic, and that the
// one program of such a program runs at other sizes against eager.
#include <gtest/gtest.h>

#include "fuzz/program_generator.h"
#include "fuzz/symbolic_check.h"

namespace stax::fuzz {
namespace {

TEST(Symbolize, SpellsOneInputSizeAsASymbolInEveryContiguousInput) {
  const std::string text =
      "def g(x: f32[4, 6], y: f32[6], z: f32[6, 4] strides=[1, 6]):\n"
      "    a = add(x, y, alpha=1)\n"
      "    return a\n";
  const std::optional<std::string> symbolic = symbolize(text);
  ASSERT_TRUE(symbolic.has_value());
  EXPECT_EQ(*symbolic,
            "def g(x: f32[s0, 6], y: f32[6], z: f32[6, 4] strides=[1, 6]) where s0: [2, 4096] "
            "hint=4:\n"
            "    a = add(x, y, alpha=1)\n"
            "    return a\n");
}

TEST(Symbolize, RefusesWhatHoldsAtTheGeneratedSizesOnly) {
  // A view to [24] holds at s0 = 4 only; a program without a size of 2 or more has no symbol.
  EXPECT_FALSE(symbolize("def g(x: f32[4, 6]):\n    v = view(x, [24])\n    return v\n"));
  EXPECT_FALSE(symbolize("def g(x: f32[1, 1]):\n    a = neg(x)\n    return a\n"));
  EXPECT_FALSE(symbolize("not a program"));
}

// The mode is not vacuous: a good share of the generator's programs become symbolic, and each
// such program's one program matches eager at the other sizes.
TEST(Symbolize, ManyGeneratedProgramsBecomeSymbolicAndMatchEager) {
  GeneratorOptions options;
  options.max_elements = 1024;
  options.large_one_in = 0;
  int symbolic = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const GeneratedCase c = generate_case(seed, options);
    const std::optional<std::string> s = symbolize(c.text);
    if (!s) continue;
    ++symbolic;
    if (symbolic > 8) continue;  // a JIT compile each: a few are checked here, more in CI
    const Outcome o = check_symbolic(*s, c.options);
    EXPECT_FALSE(o.failed()) << o.stage << ": " << o.detail << "\n" << *s;
  }
  EXPECT_GE(symbolic, 10) << "of 40 generated programs";
}

}  // namespace
}  // namespace stax::fuzz
