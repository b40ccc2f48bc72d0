// Running stax_jit_cache_probe (jit_cache_probe.cpp) from the JIT cache tests: each probe is
// a fresh process, so it has no libraries or verified files from earlier runs, and a crash
// while loading a damaged cache entry fails the test instead of the test binary.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace stax::runtime::testing {

// Under coreutils `timeout`, so a probe that hangs fails (exit status 124) instead of
// stalling the suite; the limit is far above any kernel or precompiled-header build.
inline std::string probe_command(const std::string& source_file, const std::string& cache,
                                 const std::string& expected_answer) {
  std::string command = std::string("timeout 300 '") + STAX_JIT_CACHE_PROBE + "' '" + source_file +
                        "' '" + cache + "'";
  if (!expected_answer.empty()) command += " " + expected_answer;
  return command;
}

// Exit status of a pclose()d probe; -1 when it was killed by a signal.
inline int probe_exit_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Runs the probe; returns its output without the trailing newline ("hit 0", "miss 1", ...)
// and its exit status. `expected_answer` (default 42) is what stax_probe_answer() must return.
inline std::pair<std::string, int> run_probe(const std::string& source_file,
                                             const std::string& cache,
                                             const std::string& expected_answer = "") {
  const std::string command = probe_command(source_file, cache, expected_answer);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  std::string output;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = ::pclose(pipe);
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  return {output, probe_exit_status(status)};
}

// Starts one probe per source file at once, all on `cache`, and waits for them; returns each
// probe's first output line (without the newline) and exit status, in the order given.
inline std::vector<std::pair<std::string, int>> run_concurrent_probes(
    const std::vector<std::string>& source_files, const std::string& cache) {
  std::vector<FILE*> pipes;
  for (const std::string& source_file : source_files) {
    pipes.push_back(::popen(probe_command(source_file, cache, "").c_str(), "r"));
  }
  std::vector<std::pair<std::string, int>> results;
  for (FILE* pipe : pipes) {
    if (pipe == nullptr) {
      results.emplace_back("", -1);
      continue;
    }
    char buffer[64] = {};
    std::string line;
    if (std::fgets(buffer, sizeof buffer, pipe) != nullptr) line = buffer;
    while (!line.empty() && line.back() == '\n') line.pop_back();
    results.emplace_back(line, probe_exit_status(::pclose(pipe)));
  }
  return results;
}

// Starts `count` probes at once on the same source and cache: each must succeed, and report
// a hit without compiling or a miss with exactly one compiler run; no temporary files remain.
inline void expect_concurrent_probes_agree(const std::string& source_file, const std::string& cache,
                                           int count) {
  const std::vector<std::string> sources(static_cast<size_t>(count), source_file);
  for (const auto& [line, status] : run_concurrent_probes(sources, cache)) {
    EXPECT_TRUE(line == "hit 0" || line == "miss 1") << line;
    EXPECT_EQ(status, 0);
  }
  for (const auto& entry : std::filesystem::directory_iterator(cache)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

}  // namespace stax::runtime::testing
