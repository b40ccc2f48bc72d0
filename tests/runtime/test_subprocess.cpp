// run_process: exit codes, captured output, spawn failures; format_command quoting.
#include "runtime/subprocess.h"

#include <gtest/gtest.h>

namespace stax::runtime {
namespace {

TEST(Subprocess, CapturesStdoutAndStderr) {
  const ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
}

TEST(Subprocess, ArgumentsAreNotInterpretedByAShell) {
  const ProcessResult r = run_process({"echo", "a b", "$HOME", "; rm -rf x"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "a b $HOME ; rm -rf x\n");
}

TEST(Subprocess, ReportsSignals) {
  const ProcessResult r = run_process({"sh", "-c", "kill -9 $$"});
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 128 + 9);
}

TEST(Subprocess, MissingProgram) {
  const ProcessResult r = run_process({"/nonexistent/stax-no-such-program"});
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.output.find("stax-no-such-program"), std::string::npos);
}

TEST(Subprocess, LargeOutputDoesNotDeadlock) {
  const ProcessResult r = run_process({"sh", "-c", "yes x | head -c 1000000"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output.size(), 1000000u);
}

TEST(Subprocess, FormatCommandQuotes) {
  EXPECT_EQ(format_command({"g++", "-O2", "a b.cpp", "it's"}), "g++ -O2 'a b.cpp' 'it'\\''s'");
}

}  // namespace
}  // namespace stax::runtime
