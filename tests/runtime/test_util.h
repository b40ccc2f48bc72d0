// Shared helpers for the runtime tests: temporary directories, scoped environment variables,
// page-guarded buffers and float comparison with NaN/inf awareness.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace stax::runtime::testing {

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "stax-rt-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Sets an environment variable for the lifetime of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// `bytes` of read-write memory immediately followed by an inaccessible page: any access
// past end() faults.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t bytes) {
    page_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    data_pages_ = (bytes + page_ - 1) / page_ + 1;
    base_ = ::mmap(nullptr, (data_pages_ + 1) * page_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw std::runtime_error("mmap failed");
    guard_ = static_cast<char*>(base_) + data_pages_ * page_;
    if (::mprotect(guard_, page_, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
  }
  ~GuardedBuffer() { ::munmap(base_, (data_pages_ + 1) * page_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  // Pointer to the last `count` elements of type T before the guard page.
  template <class T>
  T* tail(size_t count) const {
    return reinterpret_cast<T*>(guard_) - count;
  }

 private:
  size_t page_ = 0;
  size_t data_pages_ = 0;
  void* base_ = nullptr;
  char* guard_ = nullptr;
};

// Both NaN, or equal infinities, or |got - want| <= atol + rtol * |want|.
inline bool close_enough(float got, float want, double rtol = 1.3e-6, double atol = 1e-5) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(static_cast<double>(got) - want) <= atol + rtol * std::fabs(want);
}

// Identical values: both NaN, or the same bits (distinguishes -0 from +0).
inline bool same_value(float got, float want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  return std::signbit(got) == std::signbit(want) && got == want;
}

}  // namespace stax::runtime::testing
