// Running an external program (the C++ compiler) without a shell: posix_spawnp with an
// argument vector, stdout and stderr captured together through a pipe.
#pragma once

#include <string>
#include <vector>

namespace stax::runtime {

struct ProcessResult {
  bool started = false;  // false: the program could not be spawned (see `output`)
  int exit_code = -1;    // exit status; 128 + signal number when killed by a signal
  std::string output;    // stdout and stderr, interleaved as written
};

// Runs argv[0] (looked up in PATH) with the given arguments and the current environment,
// stdin redirected from /dev/null; waits for it to finish.
ProcessResult run_process(const std::vector<std::string>& argv);

// Renders argv as a shell-quoted command line, for diagnostics only.
std::string format_command(const std::vector<std::string>& argv);

}  // namespace stax::runtime
