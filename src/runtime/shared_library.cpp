// dlopen-based SharedLibrary.
#include "runtime/shared_library.h"

#include <dlfcn.h>

#include <stdexcept>

namespace stax::runtime {

SharedLibrary::SharedLibrary(const std::string& path) : path_(path) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* error = ::dlerror();
    throw std::runtime_error("cannot load shared library '" + path +
                             "': " + (error != nullptr ? error : "unknown error"));
  }
}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

void* SharedLibrary::symbol(const std::string& name) const {
  ::dlerror();
  void* address = ::dlsym(handle_, name.c_str());
  if (address == nullptr) {
    const char* error = ::dlerror();
    throw std::runtime_error("symbol '" + name + "' not found in '" + path_ + "'" +
                             (error != nullptr ? std::string(": ") + error : ""));
  }
  return address;
}

bool SharedLibrary::has_symbol(const std::string& name) const {
  ::dlerror();
  return ::dlsym(handle_, name.c_str()) != nullptr;
}

}  // namespace stax::runtime
