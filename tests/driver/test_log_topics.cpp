// The C++ side's log topics come from one configuration (issue 32, point 4.2): the caller's
// CompileOptions::logs (torch.compile's options={"logs": ...} through the binding) or, when it
// sets none, STAX_LOGS; an unknown topic is an error naming it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "driver/compiler.h"
#include "ir/builder.h"

namespace stax {
namespace {

Graph two_kernels() {
  Graph g("k");
  auto x = ops::input(g, "x", DType::Float32, {64, 128});
  auto y = x / ops::sum(x, {-1}, /*keepdim=*/true);
  ops::output(g, {ops::exp(y)});
  return g;
}

// What analyzing the graph prints to stderr.
std::string logged(const CompileOptions& options) {
  testing::internal::CaptureStderr();
  analyze(two_kernels(), options);
  return testing::internal::GetCapturedStderr();
}

// Sets STAX_LOGS for one scope.
class StaxLogs {
 public:
  explicit StaxLogs(const char* value) {
    if (const char* old = std::getenv("STAX_LOGS")) saved_ = old;
    setenv("STAX_LOGS", value, 1);
  }
  ~StaxLogs() {
    if (saved_.empty()) {
      unsetenv("STAX_LOGS");
    } else {
      setenv("STAX_LOGS", saved_.c_str(), 1);
    }
  }

 private:
  std::string saved_;
};

TEST(LogTopics, GivenTopicsPrintWithoutStaxLogs) {
  const StaxLogs none("");
  CompileOptions options;
  EXPECT_EQ(logged(options), "");
  options.logs = std::vector<std::string>{"program"};
  const std::string program = logged(options);
  EXPECT_NE(program.find("stax: host program after place_buffers"), std::string::npos) << program;
  EXPECT_EQ(program.find("stax: graph after"), std::string::npos) << program;
  options.logs = std::vector<std::string>{"graph_passes"};
  const std::string passes = logged(options);
  EXPECT_NE(passes.find("stax: graph after"), std::string::npos) << passes;
  EXPECT_EQ(passes.find("host program"), std::string::npos) << passes;
}

TEST(LogTopics, GivenTopicsReplaceStaxLogs) {
  const StaxLogs program("fusion,program");
  CompileOptions options;
  EXPECT_NE(logged(options).find("stax: host program after"), std::string::npos);
  options.logs = std::vector<std::string>{};
  EXPECT_EQ(logged(options), "");
}

TEST(LogTopics, UnknownTopicIsAnErrorNamingIt) {
  CompileOptions options;
  options.logs = std::vector<std::string>{"program", "bogus"};
  try {
    analyze(two_kernels(), options);
    FAIL() << "expected an error for the topic 'bogus'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown log topic 'bogus'"), std::string::npos)
        << e.what();
  }
  // STAX_LOGS also names the Python package's topics: the C++ side takes its own.
  const StaxLogs mixed("fusion,ir,output_code");
  EXPECT_EQ(program::LogTopics::from_environment().topics(), std::vector<std::string>{"ir"});
}

}  // namespace
}  // namespace stax
