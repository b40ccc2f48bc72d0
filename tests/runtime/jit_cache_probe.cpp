// Test helper for the cross-process JIT cache tests:
//   stax_jit_cache_probe <source-file> <cache-dir> [expected-answer]
// compiles and loads the source at the scalar level, calls its stax_probe_answer(), and
// prints "hit" or "miss" followed by the number of compiler runs (e.g. "miss 1"). Exit
// status 0 on success, 2 on usage/compile errors, 3 when a cache hit nevertheless ran the
// compiler or the loaded function does not return the expected answer (default 42).
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "runtime/jit.h"

int main(int argc, char** argv) {
  using namespace stax::runtime;
  if (argc != 3 && argc != 4) {
    std::cerr << "usage: " << argv[0] << " <source-file> <cache-dir> [expected-answer]\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::ostringstream source;
  source << in.rdbuf();
  JitOptions options;
  options.simd = SimdLevel::Scalar;
  options.cache_dir = argv[2];
  try {
    const int expected = argc == 4 ? std::stoi(argv[3]) : 42;
    const JitResult result = compile_and_load(source.str(), options);
    const int answer = result.library->function<int (*)()>("stax_probe_answer")();
    std::cout << (result.cache_hit ? "hit " : "miss ") << compiler_invocations() << std::endl;
    if (answer != expected) return 3;
    if (result.cache_hit && compiler_invocations() != 0) return 3;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}
