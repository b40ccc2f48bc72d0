// RAII handle for a dynamically loaded shared object (dlopen / dlsym / dlclose).
#pragma once

#include <memory>
#include <string>
#include <utility>

namespace stax::runtime {

class SharedLibrary {
 public:
  // dlopen(path, RTLD_NOW | RTLD_LOCAL); throws std::runtime_error with dlerror() on failure.
  explicit SharedLibrary(const std::string& path);
  // dlopen(path, RTLD_NOW | RTLD_LOCAL) without throwing: nullptr on failure, with dlerror()'s
  // text in *error (when given). For libraries that may legitimately be absent (libcuda.so.1).
  static std::unique_ptr<SharedLibrary> try_open(const std::string& path, std::string* error);
  ~SharedLibrary();  // dlclose
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // Address of an exported symbol; throws std::runtime_error when it is missing.
  void* symbol(const std::string& name) const;
  // symbol() cast to a function pointer type, e.g. function<void (*)(const float*)>("k").
  template <class Fn>
  Fn function(const std::string& name) const {
    return reinterpret_cast<Fn>(symbol(name));
  }
  // Whether the library exports `name`.
  bool has_symbol(const std::string& name) const;

  const std::string& path() const { return path_; }
  void* handle() const { return handle_; }

 private:
  SharedLibrary(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}

  std::string path_;
  void* handle_ = nullptr;
};

}  // namespace stax::runtime
