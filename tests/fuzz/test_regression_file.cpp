// Regression files: the #!fuzz header round-trips, malformed headers are named, and replay
// applies the recorded expectation.
#include <gtest/gtest.h>

#include "fuzz/regression_file.h"

namespace stax::fuzz {
namespace {

const char* kProgram = "def g(a: f32[3]):\n    v0 = neg(a)\n    return v0\n";

TEST(RegressionFile, HeaderRoundTrips) {
  RegressionCase c;
  c.found = "crash (killed by signal 11 (SIGSEGV)\nduring analyze); mode mutate";
  c.expect = Expectation::Match;
  c.options.simd = runtime::SimdLevel::Scalar;
  c.options.num_threads = 2;
  c.options.fuse = false;
  c.options.localize = true;
  c.options.input_seed = 42;
  c.program = kProgram;
  const std::string text = format_regression(c);
  const RegressionCase back = parse_regression(text, "x.stax");
  EXPECT_EQ(back.found, "crash (killed by signal 11 (SIGSEGV) during analyze); mode mutate");
  EXPECT_EQ(back.expect, Expectation::Match);
  EXPECT_EQ(back.options.simd, runtime::SimdLevel::Scalar);
  EXPECT_EQ(back.options.num_threads, 2);
  EXPECT_FALSE(back.options.fuse);
  EXPECT_TRUE(back.options.localize);
  EXPECT_EQ(back.options.input_seed, 42u);
  EXPECT_EQ(back.program, kProgram);
}

TEST(RegressionFile, MalformedHeadersAreNamed) {
  try {
    parse_regression("#!fuzz expect: maybe\n", "bad.stax");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bad.stax:1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("maybe"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_regression(kProgram, "none.stax"), std::invalid_argument);
  EXPECT_THROW(parse_regression("#!fuzz expect: clean\n#!fuzz options: simd=sse9\n", "s.stax"),
               std::invalid_argument);
}

TEST(RegressionFile, ReplayAppliesTheExpectation) {
  RegressionCase c;
  c.program = "def g(a: f32[3]):\n    v0 = frobnicate(a)\n    return v0\n";
  c.expect = Expectation::Refused;
  EXPECT_FALSE(check_regression(c).failed());  // refused with a parse error, as expected
  c.program = kProgram;
  EXPECT_EQ(check_regression(c).kind, FailureKind::Accepted);
  c.expect = Expectation::Clean;
  EXPECT_FALSE(check_regression(c).failed());
}

}  // namespace
}  // namespace stax::fuzz
