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

std::unique_ptr<SharedLibrary> SharedLibrary::try_open(const std::string& path,
                                                       std::string* error) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* text = ::dlerror();
    if (error != nullptr) *error = text != nullptr ? text : "unknown error";
    return nullptr;
  }
  return std::unique_ptr<SharedLibrary>(new SharedLibrary(path, handle));
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
