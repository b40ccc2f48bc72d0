// The log topics the C++ side prints to stderr (issue 32, point 4.2): one configuration that
// the caller sets (torch.compile's options={"logs": ...} reach it through the binding) or, where
// the caller sets none (the CLI, C++ API users), STAX_LOGS names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stax::program {

// What the C++ side prints: "graph_passes" (the graph after each graph pass), "program" (the
// host program after each pass), "ir" (the kernel IR after each pass).
const std::vector<std::string>& known_log_topics();

class LogTopics {
 public:
  LogTopics() = default;
  // Throws std::invalid_argument naming a topic that is not one of known_log_topics().
  explicit LogTopics(std::vector<std::string> topics);
  // The known topics that STAX_LOGS (a comma-separated list) names; it may name others, which
  // other layers print (the Python package's).
  static LogTopics from_environment();

  bool enabled(std::string_view topic) const;
  const std::vector<std::string>& topics() const { return topics_; }

 private:
  std::vector<std::string> topics_;
};

}  // namespace stax::program
