// LogTopics: the one list of topics the C++ side prints, given or read from STAX_LOGS.
#include "program/log_topics.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace stax::program {

const std::vector<std::string>& known_log_topics() {
  static const std::vector<std::string> topics = {"graph_passes", "program", "ir"};
  return topics;
}

namespace {

bool is_known(std::string_view topic) {
  const auto& known = known_log_topics();
  return std::find(known.begin(), known.end(), topic) != known.end();
}

}  // namespace

LogTopics::LogTopics(std::vector<std::string> topics) : topics_(std::move(topics)) {
  for (const std::string& topic : topics_) {
    if (is_known(topic)) continue;
    std::string known;
    for (const std::string& k : known_log_topics()) known += (known.empty() ? "" : ", ") + k;
    throw std::invalid_argument("unknown log topic '" + topic + "' (the C++ side prints " + known +
                                ")");
  }
}

LogTopics LogTopics::from_environment() {
  LogTopics logs;
  const char* env = std::getenv("STAX_LOGS");
  if (env == nullptr) return logs;
  const std::string list = env;
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t end = std::min(list.find(',', begin), list.size());
    std::string topic = list.substr(begin, end - begin);
    if (is_known(topic)) logs.topics_.push_back(std::move(topic));
    begin = end + 1;
  }
  return logs;
}

bool LogTopics::enabled(std::string_view topic) const {
  return std::find(topics_.begin(), topics_.end(), topic) != topics_.end();
}

}  // namespace stax::program
