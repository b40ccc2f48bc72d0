// JIT for generated kernels: compiles C++ source with the system compiler into a shared
// object, caches it on disk under a content hash (Stax version + source + compiler identity
// + flags, which include the SIMD level + kernel headers) and loads it. Safe across threads
// and concurrent processes: each entry is locked while it is looked up, built or loaded.
//
// The cache has a size bound (JitOptions::max_cache_bytes, $STAX_CACHE_MAX_BYTES, default
// 2 GiB): after a new entry is written, the least recently used whole entries (kernel
// libraries and precompiled headers alike) are removed until the rest fits; the new entry
// and the header it used stay even when they alone exceed the bound. Hits refresh recency.
//
// The cache is verified, not trusted: an entry is loaded only when its SHA-256 checksum
// file agrees with its bytes (checked before dlopen, which can crash on a damaged file) and
// the loaded library exports the entry's key as `stax_cache_key` (the JIT links that in, so
// another entry's library never runs under this key). A missing, damaged or foreign entry
// is a miss: it is rebuilt and replaced atomically. Precompiled headers carry checksums
// too, and one the compiler rejects is rebuilt once before the compile is retried.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/shared_library.h"
#include "runtime/simd.h"

namespace stax::runtime {

struct JitOptions {
  SimdLevel simd = detect_simd_level();
  // Also use the running CPU's instruction extensions beyond the level's baseline that change no
  // result (simd_compiler_flags); false builds the level's baseline alone, as for a CPU without
  // them (what tests compile-check).
  bool host_extensions = true;
  // Empty: $STAX_CACHE_DIR, else $XDG_CACHE_HOME/stax, else $HOME/.cache/stax.
  std::string cache_dir;
  // Empty: $CXX, else "c++". May carry arguments ("ccache g++"), split on whitespace.
  std::string compiler;
  // GCC only: build stax_kernel.h once per flag set into a precompiled header in the cache
  // directory, used by sources that include it first (cuts ~1 s off each compile).
  bool use_precompiled_header = true;
  // Bound on the bytes of all cache entries. Unset: $STAX_CACHE_MAX_BYTES (a positive
  // integer), else kDefaultMaxCacheBytes.
  std::optional<int64_t> max_cache_bytes;
};

inline constexpr int64_t kDefaultMaxCacheBytes = int64_t{2} << 30;

// The compiler rejected the source (or could not be run). what() holds the compiler's
// output, the command and the path of the kept source file.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& message, std::string source_path, std::string compiler_output)
      : std::runtime_error(message),
        source_path_(std::move(source_path)),
        compiler_output_(std::move(compiler_output)) {}
  const std::string& source_path() const { return source_path_; }
  const std::string& compiler_output() const { return compiler_output_; }

 private:
  std::string source_path_;
  std::string compiler_output_;
};

struct JitResult {
  std::shared_ptr<SharedLibrary> library;
  // <cache_dir>/stax_<key>.so, with its checksum in <library_path>.sha256 and the key
  // definition it was linked with in <cache_dir>/stax_<key>.key.cpp; stax_<key>.used and
  // stax_<key>.lock are its recency stamp and lock (jit_cache_entries.h). library->path() is the
  // same, except when a rejected older image of this path was still mapped in this process:
  // then it names the (removed) alias the library was loaded through.
  std::string library_path;
  std::string source_path;  // <cache_dir>/stax_<key>.cpp, exactly `source`
  bool cache_hit = false;   // loaded without running the compiler
};

// Compiles (or finds in the cache and verifies) and loads `source`. Throws CompileError when
// the compiler fails, std::runtime_error on file-system or loading errors.
JitResult compile_and_load(const std::string& source, const JitOptions& options = {});

// Absolute path of the directory holding stax_kernel.h, relocatable so that an installed
// package uses its own copy: locate_kernel_include_dir($STAX_KERNEL_INCLUDE_DIR,
// runtime_module_file()).
std::string kernel_include_dir();
// The rules behind kernel_include_dir(): `env_value` when not empty (it must hold
// stax_kernel.h, else std::runtime_error names the variable); else `kernel_include/` in the
// directory of `module_file` when it holds stax_kernel.h (the Python package installs the
// headers beside stax/_C); else `../share/stax/kernel_include/` from that directory (an
// installed libstax in lib/, issue 34); else src/runtime/kernel_include, baked in at build
// time.
std::string locate_kernel_include_dir(const std::string& env_value, const std::string& module_file);
// Path of the shared object or executable this code is linked into (dladdr); empty when
// unknown.
std::string runtime_module_file();

// Directory compile_and_load uses for `options` (the resolution order of JitOptions).
std::string resolve_cache_dir(const JitOptions& options);

// Size bound compile_and_load keeps the cache under for `options`. Throws
// std::invalid_argument naming JitOptions::max_cache_bytes or $STAX_CACHE_MAX_BYTES when the
// value is not a positive number of bytes.
int64_t resolve_max_cache_bytes(const JitOptions& options);

// Compiler command for `options`: JitOptions::compiler, $CXX or "c++", split on whitespace.
std::vector<std::string> resolve_compiler(const JitOptions& options);

// Compile flags for a kernel at `level` (without output/input paths): language and
// optimization flags, the SIMD flags and include directories.
std::vector<std::string> kernel_compile_flags(SimdLevel level, bool host_extensions = true);
// Link flags appended after the source (SLEEF).
std::vector<std::string> kernel_link_flags();

// The Stax version this library was built as (the top-level project() version).
std::string stax_version();

// Everything a kernel library's cache key is derived from.
struct CacheKeyInputs {
  std::string stax_version;
  std::vector<std::string> compiler_command;
  std::string compiler_identity;           // `<compiler> --version`
  std::vector<std::string> compile_flags;  // kernel_compile_flags(level): the SIMD level
  std::vector<std::string> link_flags;
  std::string kernel_headers_digest;  // of every file under kernel_include_dir()
  std::string source;
};

// The inputs compile_and_load(source, options) keys its cache entry on (runs
// `<compiler> --version` once per process and compiler).
CacheKeyInputs cache_key_inputs(const std::string& source, const JitOptions& options);

// The key: 32 hex digits; the library is <cache_dir>/stax_<key>.so.
std::string cache_key(const CacheKeyInputs& inputs);

// Number of compiler processes this process started to build kernels or precompiled
// headers (`--version` identity probes are not counted).
int64_t compiler_invocations();

}  // namespace stax::runtime
