// The `stax_fuzz` tool (the same command line as `stax fuzz`; see fuzz/fuzz_command.h).
#include <string>
#include <vector>

#include "fuzz/fuzz_command.h"

int main(int argc, char** argv) {
  return stax::fuzz::fuzz_command("stax_fuzz", std::vector<std::string>(argv + 1, argv + argc));
}
