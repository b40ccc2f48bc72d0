// Test helper for the cross-process JIT cache test:
//   stax_jit_cache_probe <source-file> <cache-dir>
// compiles and loads the source at the scalar level, calls its stax_probe_answer(), and
// prints "hit" or "miss". Exit status 0 on success, 2 on usage/compile errors, 3 when a
// cache hit nevertheless ran the compiler or the loaded function misbehaves.
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/jit.h"

int main(int argc, char** argv) {
  using namespace stax::runtime;
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " <source-file> <cache-dir>\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::ostringstream source;
  source << in.rdbuf();
  JitOptions options;
  options.simd = SimdLevel::Scalar;
  options.cache_dir = argv[2];
  try {
    const JitResult result = compile_and_load(source.str(), options);
    const int answer = result.library->function<int (*)()>("stax_probe_answer")();
    std::cout << (result.cache_hit ? "hit" : "miss") << std::endl;
    if (answer != 42) return 3;
    if (result.cache_hit && compiler_invocations() != 0) return 3;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}
