// Measured decisions kept for the process and on disk (measurement_cache.h).
#include "external/measurement_cache.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "external/dnnl_common.h"
#include "runtime/jit_cache_entries.h"
#include "runtime/sha256.h"

namespace stax::external::detail {

namespace fs = std::filesystem;

namespace {

// What makes a measurement on one machine invalid on another: the CPU (its model name as the
// kernel reports it) and the library that ran the kernels.
const std::string& machine_identity() {
  static const std::string identity = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, model = "unknown CPU";
    while (std::getline(cpuinfo, line)) {
      if (line.rfind("model name", 0) == 0) {
        model = line.substr(line.find(':') == std::string::npos ? 0 : line.find(':') + 1);
        model.erase(0, model.find_first_not_of(' '));
        break;
      }
    }
    return model + "; " + library_version();
  }();
  return identity;
}

// The file's first line is the full key (machine included), the second the answer.
std::string file_key(const std::string& key) {
  std::string flat = machine_identity() + " | " + key;
  for (char& c : flat) {
    if (c == '\n') c = ' ';
  }
  return flat;
}

std::optional<std::string> read_answer(const fs::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string stored_key, answer;
  if (!in || !std::getline(in, stored_key) || !std::getline(in, answer)) return std::nullopt;
  if (stored_key != file_key(key) || answer.empty()) return std::nullopt;
  return answer;
}

}  // namespace

std::string measurement_file(const std::string& directory, const std::string& key) {
  runtime::Sha256 hash;
  hash.update(file_key(key));
  return (fs::path(directory) / (hash.hex_digest().substr(0, 32) + ".txt")).string();
}

std::string measured_once(const std::string& key, const std::string& directory,
                          const std::function<std::string()>& measure, bool* from_disk) {
  static std::mutex mutex;
  // By directory and key: a process that plans with two cache directories reads each.
  static std::map<std::pair<std::string, std::string>, std::string> answers;
  if (from_disk != nullptr) *from_disk = false;
  // Held while measuring: plans are built when a program loads, and two measuring at once
  // would time each other's threads.
  std::lock_guard<std::mutex> lock(mutex);
  const auto memo_key = std::make_pair(directory, key);
  if (auto it = answers.find(memo_key); it != answers.end()) return it->second;
  const std::string file = directory.empty() ? "" : measurement_file(directory, key);
  if (!file.empty()) {
    if (auto answer = read_answer(file, key)) {
      if (from_disk != nullptr) *from_disk = true;
      return answers.emplace(memo_key, *answer).first->second;
    }
  }
  std::string answer = measure();
  for (char& c : answer) {
    if (c == '\n') c = ' ';
  }
  if (!file.empty()) {
    try {
      fs::create_directories(directory);
      runtime::cache::write_file_atomically(file, file_key(key) + "\n" + answer + "\n");
    } catch (const std::exception&) {
      // A cache that cannot be written costs the next process a measurement, nothing else.
    }
  }
  return answers.emplace(memo_key, std::move(answer)).first->second;
}

}  // namespace stax::external::detail
