// libstax, the installed shared library (src/install/CMakeLists.txt): the pipeline's modules
// linked whole into one library. Its one definition of its own names the build, for a
// consumer that loads libstax at run time and checks which build it got.
#include "package/package.h"

extern "C" const char* stax_library_build_identity() {
  static const std::string identity = stax::stax_build_identity();
  return identity.c_str();
}
