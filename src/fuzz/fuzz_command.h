// The fuzzer's command line, shared by the `stax_fuzz` tool and `stax fuzz`:
//   PROGRAM [--seed S] [--cases N | --seconds T] [--mode valid|mutate|both] [--out DIR]
//           [--no-reduce]
//   PROGRAM --replay FILE...
// The first form fuzzes until N cases or T seconds (every registered op of the catalogue on
// every dtype it accepts; fuzz_session.h), prints progress, findings and a summary, and
// writes each reduced failure to DIR. The second replays saved failures (regression files)
// in the sandbox. Returns the exit status: 0 no failure, 1 failures, 2 bad usage.
#pragma once

#include <string>
#include <vector>

namespace stax::fuzz {

// `program` names the command in messages ("stax_fuzz", "stax fuzz"); `args` follow it.
int fuzz_command(const std::string& program, const std::vector<std::string>& args);

}  // namespace stax::fuzz
