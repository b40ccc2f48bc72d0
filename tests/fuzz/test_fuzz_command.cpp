// The fuzzer's command line as `stax fuzz` and `stax_fuzz` share it (fuzz/fuzz_command.h):
// a fixed number of cases or seconds, the seed, usage errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fuzz/fuzz_command.h"

namespace stax::fuzz {
namespace {

struct Result {
  int status;
  std::string out;
  std::string err;
};

Result run(const std::vector<std::string>& args) {
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int status = fuzz_command("stax fuzz", args);
  return {status, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
}

TEST(FuzzCommand, RunsTheGivenNumberOfCasesFromTheSeed) {
  const Result r = run({"--mode", "mutate", "--cases", "25", "--seed", "7"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("stax fuzz: seed 7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("programs tried: 25 (valid 0"), std::string::npos) << r.out;
}

TEST(FuzzCommand, RunsForTheGivenSeconds) {
  const Result r = run({"--mode", "mutate", "--seconds", "1"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("programs tried: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("programs tried: 0 "), std::string::npos) << r.out;
}

TEST(FuzzCommand, RefusesBadUsageNamingTheCommand) {
  const Result both = run({"--cases", "3", "--seconds", "1"});
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("stax fuzz: give --cases or --seconds, not both"), std::string::npos)
      << both.err;
  const Result unknown = run({"--bogus"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("unknown argument '--bogus'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("usage: stax fuzz"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace stax::fuzz
