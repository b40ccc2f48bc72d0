// The command line of the `stax` tool: which options each command takes, and strict parsing of
// their values. Every problem (an unknown option, one that does not apply to the command, one
// given twice, a missing or malformed value) is a UsageError naming the option and the value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "driver/compiler.h"

namespace stax::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CliArgs {
  std::string command;  // explain, emit, run or compile
  std::string file;
  bool json_output = false;
  // explain --verbose: the text lists each fusion candidate refused, with its reason.
  bool verbose = false;
  std::optional<std::string> inputs_path;
  std::optional<std::string> outputs_path;
  // compile --output PKG (or -o PKG): where the ahead-of-time package is written.
  std::optional<std::string> package_path;
  // run --eager: only the eager interpreter (no compilation, no comparison), e.g. for ops
  // that lowering does not handle yet; --outputs writes its results.
  bool eager_only = false;
  // --sizes s0=37,s1=5: the values of a symbolic graph's size symbols (issue 33).
  std::map<std::string, int64_t> sizes;
  CompileOptions options;
};

extern const char* const kUsage;

// argv[1] is the command; the FILE and the options follow in any order.
CliArgs parse_cli_args(int argc, char** argv);

}  // namespace stax::cli
