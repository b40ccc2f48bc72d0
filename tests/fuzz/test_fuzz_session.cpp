// The fuzzing session's time budget (issue 32, point 4): `stax fuzz --seconds 250 --seed 777`
// ran far past its budget reducing a case whose every candidate timed out. Here the checks are
// replaced by a hook that "hangs" until its time bound on an injected clock, so the test is
// deterministic and takes no real time.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_session.h"

namespace stax::fuzz {
namespace {

TEST(FuzzSession, AReductionOfSlowCandidatesEndsWithTheTimeBudget) {
  double now = 1000;  // any origin: the budget counts from the session's start
  std::vector<double> bounds;
  std::ostringstream log;
  SessionOptions o;
  o.seed = 777;
  o.mode = Mode::Mutate;
  o.seconds = 35;
  o.log = &log;
  o.progress_every_seconds = 0;  // a progress line for every check
  o.clock = [&] { return now; };
  const std::string original = case_program(o.seed, 0, Mode::Mutate, o).text;
  // The case hangs until its time bound; every candidate of its reduction runs as long and
  // then passes, so no candidate is kept and the reducer would try its 1500 checks.
  o.run_check = [&](Mode, const std::string& text, const CaseOptions&, double timeout) {
    bounds.push_back(timeout);
    now += timeout;
    Outcome out;
    if (text == original) {
      out.kind = FailureKind::Timeout;
      out.stage = "eager";
      out.detail = "no result after " + std::to_string(timeout) + " s during eager";
    }
    return out;
  };
  const SessionStats stats = run_session(o);
  SCOPED_TRACE(log.str());
  EXPECT_LE(now, 1035.0);
  EXPECT_EQ(stats.mutated_cases, 1);
  ASSERT_EQ(stats.findings.size(), 1u);
  EXPECT_EQ(stats.findings[0].outcome.kind, FailureKind::Timeout);
  // The case and two candidates with the mutate sandbox's own 10 s; the last candidate's bound
  // is cut to the 5 s left.
  EXPECT_EQ(bounds, (std::vector<double>{10, 10, 10, 5}));
  const std::string text = log.str();
  EXPECT_NE(text.find("reducing mutate case 0: at most 1500 checks, 25 s left in the budget"),
            std::string::npos);
  EXPECT_NE(text.find("reducing mutate case 0: remove line chunks, check 1 ("), std::string::npos);
  EXPECT_NE(text.find("reduced with 3 checks in 25 s (stopped at the end of the time budget)"),
            std::string::npos);
}

TEST(FuzzSession, ACaseCutShortByTheBudgetIsNotAFinding) {
  double now = 0;
  std::ostringstream log;
  SessionOptions o;
  o.mode = Mode::Valid;
  o.seconds = 50;  // the valid sandbox allows 120 s
  o.log = &log;
  o.clock = [&] { return now; };
  o.run_check = [&](Mode, const std::string&, const CaseOptions&, double timeout) {
    now += timeout;
    Outcome out;
    out.kind = FailureKind::Timeout;
    out.stage = "compile";
    out.detail = "no result";
    return out;
  };
  const SessionStats stats = run_session(o);
  EXPECT_DOUBLE_EQ(now, 50.0);
  EXPECT_EQ(stats.valid_cases, 0);
  EXPECT_TRUE(stats.findings.empty());
  EXPECT_NE(log.str().find("valid case 0 was cut short by the end of the time budget"),
            std::string::npos)
      << log.str();
}

}  // namespace
}  // namespace stax::fuzz
