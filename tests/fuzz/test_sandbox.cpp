// The sandbox must observe what an in-process check cannot: deaths by signal (with the
// signal and the stage), hangs past the time bound, exits that bypass the report, and pass
// the outcome of a check that returns through unchanged.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "fuzz/sandbox.h"

namespace stax::fuzz {
namespace {

TEST(Sandbox, ReportsTheOutcomeOfTheCheck) {
  const Outcome o = run_isolated([] {
    Outcome r;
    r.kind = FailureKind::Mismatch;
    r.stage = "compare";
    r.detail = "output 0 differs";
    return r;
  });
  EXPECT_EQ(o.kind, FailureKind::Mismatch);
  EXPECT_EQ(o.stage, "compare");
  EXPECT_EQ(o.detail, "output 0 differs");
  EXPECT_FALSE(run_isolated([] { return Outcome{}; }).failed());
}

TEST(Sandbox, ReportsACrashWithItsSignalAndStage) {
  const Outcome o = run_isolated([] {
    note_stage("analyze");
    ::raise(SIGSEGV);
    return Outcome{};
  });
  EXPECT_EQ(o.kind, FailureKind::Crash);
  EXPECT_EQ(o.signal, SIGSEGV);
  EXPECT_EQ(o.stage, "analyze");
  EXPECT_NE(o.detail.find("SIGSEGV"), std::string::npos) << o.detail;
  EXPECT_NE(o.detail.find("during analyze"), std::string::npos) << o.detail;
}

TEST(Sandbox, ACrashReportsTheLastLineOnStderr) {
  const Outcome o = run_isolated([]() -> Outcome {
    ::write(2, "first\nfree(): invalid pointer\n", 29);
    std::abort();
  });
  EXPECT_EQ(o.kind, FailureKind::Crash);
  EXPECT_NE(o.detail.find("; stderr: free(): invalid pointer"), std::string::npos) << o.detail;
}

TEST(Sandbox, AbortIsACrashToo) {
  const Outcome o = run_isolated([]() -> Outcome { std::abort(); });
  EXPECT_EQ(o.kind, FailureKind::Crash);
  EXPECT_EQ(o.signal, SIGABRT);
}

TEST(Sandbox, KillsAHangAtTheTimeBound) {
  SandboxOptions options;
  options.timeout_seconds = 0.5;
  const auto start = std::chrono::steady_clock::now();
  const Outcome o = run_isolated(
      [] {
        note_stage("eager");
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
        return Outcome{};
      },
      options);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(o.kind, FailureKind::Timeout);
  EXPECT_EQ(o.stage, "eager");
  EXPECT_LT(elapsed, 5.0);
}

TEST(Sandbox, AnExitWithoutReportIsACrash) {
  const Outcome o = run_isolated([]() -> Outcome { ::_exit(0); });
  EXPECT_EQ(o.kind, FailureKind::Crash);
  EXPECT_NE(o.detail.find("without reporting"), std::string::npos) << o.detail;
}

TEST(Sandbox, AHugeAllocationFailsInsteadOfExhaustingTheMachine) {
  const Outcome o = run_isolated([] {
    Outcome r;
    try {
      std::vector<char> huge(size_t{64} << 30);
      r.kind = FailureKind::Mismatch;  // the memory limit did not apply
    } catch (const std::bad_alloc&) {
    }
    return r;
  });
  EXPECT_FALSE(o.failed()) << o.detail;
}

}  // namespace
}  // namespace stax::fuzz
