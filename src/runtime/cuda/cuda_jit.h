// The CUDA JIT: compile_cuda (nvrtc.h) behind the verified on-disk cache the CPU JIT uses
// (runtime/jit_cache_entries.h: the same directory, entry locks, recency stamps, size bound and
// least-recently-used eviction), and loading a cached image with its key checked.
//
// An entry stax_<key> holds the image (stax_<key>.cubin, or .ptx when NVRTC lacks the arch) and
// NVRTC's log (stax_<key>.log, which carries ptxas' report), each with a SHA-256 checksum file
// beside it, and the source as compiled (stax_<key>.cu, for reading only). A hit needs both
// checksums to agree with the files' bytes; anything else (missing, damaged, truncated, a
// checksum of another entry) is a miss that recompiles and replaces the entry atomically.
//
// The key covers: the cache format, the Stax version, NVRTC's version and library size, the
// target (sm_XY or compute_XY), the NVRTC options, a digest of every file under each include
// directory (the CUDA kernel headers), the program name and the source. The compiled source also
// defines `extern "C" __device__ const char stax_cache_key[]` holding the key, which
// load_cuda_module checks after loading, so a module of another entry never runs under this key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/nvrtc.h"

namespace stax::runtime::cuda {

struct CudaJitOptions {
  CudaCompileOptions compile;
  // Empty: the CPU JIT's directory (runtime::resolve_cache_dir: $STAX_CACHE_DIR, else
  // $XDG_CACHE_HOME/stax, else ~/.cache/stax).
  std::string cache_dir;
  // Bound on the bytes of all cache entries; unset: runtime::resolve_max_cache_bytes's rules.
  std::optional<int64_t> max_cache_bytes;
};

struct CudaJitResult {
  CudaCompileResult compiled;  // image, target, log, ptxas report (also on a hit)
  std::string key;             // 32 hex digits
  std::string image_path;      // <cache_dir>/stax_<key>.cubin or .ptx; empty if not cached
  bool cache_hit = false;      // no NVRTC compile ran
};

// Everything the key of compile_cuda_cached(source, name, options) is derived from.
struct CudaCacheKeyInputs {
  std::string stax_version;
  std::string nvrtc_version;  // "13.0"
  int64_t nvrtc_file_bytes = 0;
  std::string target;  // nvrtc_target(options.compile.arch)
  std::vector<std::string> options;
  std::vector<std::string> include_digests;  // directory digest of each include dir, in order
  std::string name;
  std::string source;
};
CudaCacheKeyInputs cuda_cache_key_inputs(const std::string& source, const std::string& name,
                                         const CudaJitOptions& options);
std::string cuda_cache_key(const CudaCacheKeyInputs& inputs);

// The name of the __device__ variable holding the key in every image the cache compiles.
inline constexpr const char* kCudaCacheKeySymbol = "stax_cache_key";

// compile_cuda through the cache. Throws what compile_cuda throws. A cache directory that
// cannot be created or written is no error: the compile's result is returned uncached
// (image_path empty).
CudaJitResult compile_cuda_cached(const std::string& source, const std::string& name,
                                  const CudaJitOptions& options = {});

// Loads `result.compiled.image` into the current context and checks that it defines
// stax_cache_key equal to `result.key`. CudaError when it does not, when the driver's CUDA major
// version is older than NVRTC's (the driver may refuse or misread the image), and when the
// driver fails.
CudaModule load_cuda_module(const CudaJitResult& result);

}  // namespace stax::runtime::cuda
