// compile_cuda_cached: the cubin cache on the CPU JIT's verified cache entries.
#include "runtime/cuda/cuda_jit.h"

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "runtime/jit.h"
#include "runtime/jit_cache_entries.h"

namespace fs = std::filesystem;

namespace stax::runtime::cuda {

namespace {

// Bump when the entry layout or the meaning of a key changes.
constexpr std::string_view kCacheFormat = "stax-cuda-1";

// The line every cached program ends with: the key, read back after loading.
std::string key_definition(const std::string& key) {
  return "\n// Written by the Stax CUDA JIT: the cache key of this module.\nextern \"C\" "
         "__device__ "
         "const char " +
         std::string(kCudaCacheKeySymbol) + "[] = \"" + key + "\";\n";
}

// One mutex per key: threads of this process compile each entry once.
std::mutex g_key_mutexes_mutex;
std::map<std::string, std::shared_ptr<std::mutex>> g_key_mutexes;

std::shared_ptr<std::mutex> key_mutex(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_key_mutexes_mutex);
  std::shared_ptr<std::mutex>& mutex = g_key_mutexes[key];
  if (!mutex) mutex = std::make_shared<std::mutex>();
  return mutex;
}

JitOptions cache_options(const CudaJitOptions& options) {
  JitOptions jit;
  jit.cache_dir = options.cache_dir;
  jit.max_cache_bytes = options.max_cache_bytes;
  return jit;
}

// Writes `contents` as `path` with its checksum file (temp file, rename, then checksum).
void publish_bytes(const fs::path& path, const std::string& contents) {
  const fs::path temp = cache::temp_path_for(path);
  cache::write_file_atomically(temp, contents);
  cache::publish_with_checksum(temp, path, path.filename().string());
}

}  // namespace

CudaCacheKeyInputs cuda_cache_key_inputs(const std::string& source, const std::string& name,
                                         const CudaJitOptions& options) {
  CudaCacheKeyInputs inputs;
  inputs.stax_version = stax_version();
  const NvrtcLibrary& nvrtc = nvrtc_library();
  inputs.nvrtc_version = nvrtc.version.to_string();
  inputs.nvrtc_file_bytes = nvrtc.file_bytes;
  inputs.target = nvrtc_target(options.compile.arch);
  inputs.options = nvrtc_options(options.compile, inputs.target);
  for (const std::string& dir : options.compile.include_dirs) {
    std::error_code ec;
    inputs.include_digests.push_back(fs::is_directory(dir, ec) ? cache::directory_digest(dir)
                                                               : "missing");
  }
  inputs.name = name;
  inputs.source = source;
  return inputs;
}

std::string cuda_cache_key(const CudaCacheKeyInputs& inputs) {
  cache::KeyBuilder builder;
  builder.field("cuda");
  builder.field(kCacheFormat);
  builder.field(inputs.stax_version);
  builder.field(inputs.nvrtc_version);
  builder.field(std::to_string(inputs.nvrtc_file_bytes));
  builder.field(inputs.target);
  builder.fields(inputs.options);
  builder.fields(inputs.include_digests);
  builder.field(inputs.name);
  builder.field(inputs.source);
  return builder.key();
}

CudaJitResult compile_cuda_cached(const std::string& source, const std::string& name,
                                  const CudaJitOptions& options) {
  const JitOptions jit = cache_options(options);
  const int64_t max_cache_bytes = resolve_max_cache_bytes(jit);
  const fs::path cache_dir = resolve_cache_dir(jit);
  const CudaCacheKeyInputs inputs = cuda_cache_key_inputs(source, name, options);
  CudaJitResult result;
  result.key = cuda_cache_key(inputs);
  const std::string entry_id = "stax_" + result.key;
  const bool is_ptx = inputs.target.rfind("compute_", 0) == 0;
  const fs::path image_path = cache_dir / (entry_id + (is_ptx ? ".ptx" : ".cubin"));
  const fs::path log_path = cache_dir / (entry_id + ".log");

  const std::shared_ptr<std::mutex> mutex = key_mutex(result.key);
  std::lock_guard<std::mutex> lock(*mutex);
  bool cacheable = true;
  try {
    cache::ensure_directory(cache_dir);
  } catch (const std::runtime_error&) {
    cacheable = false;
  }
  // Held to the end: other processes neither evict the entry between its check and its read nor
  // build it twice.
  const std::optional<cache::EntryLock> entry_lock =
      cacheable ? cache::EntryLock::acquire(cache_dir, entry_id) : std::nullopt;
  if (cacheable && cache::checksum_matches(image_path, image_path.filename().string()) &&
      cache::checksum_matches(log_path, log_path.filename().string())) {
    try {
      CudaCompileResult& compiled = result.compiled;
      compiled.image = cache::read_file(image_path);
      compiled.log = cache::read_file(log_path);
      compiled.is_ptx = is_ptx;
      compiled.target = inputs.target;
      compiled.options = inputs.options;
      nvrtc_target(options.compile.arch, &compiled.note);
      if (!is_ptx) compiled.kernels = parse_ptxas_report(compiled.log);
      result.image_path = image_path.string();
      result.cache_hit = true;
      cache::touch_entry(cache_dir, entry_id);
      return result;
    } catch (const std::runtime_error&) {
      // Removed or unreadable since the check: compile below.
    }
  }

  const std::string keyed_source = source + key_definition(result.key);
  result.compiled = compile_cuda(keyed_source, name, options.compile);
  if (!cacheable) return result;
  try {
    cache::write_file_atomically(cache_dir / (entry_id + ".cu"), keyed_source);
    cache::touch_entry(cache_dir, entry_id);  // before it is published: never unstamped
    // The log first: a reader that finds the image intact finds its log published.
    publish_bytes(log_path, result.compiled.log);
    publish_bytes(image_path, result.compiled.image);
    result.image_path = image_path.string();
  } catch (const std::runtime_error&) {
    return result;  // a read-only or full cache: the compile stands, uncached
  }
  cache::evict_to_bound(cache_dir, max_cache_bytes, {entry_id});
  return result;
}

CudaModule load_cuda_module(const CudaJitResult& result) {
  // A driver older than the NVRTC that wrote an image may refuse it, or worse; say so first.
  const int driver_major = cuda_driver_version() / 1000;
  const NvrtcVersion nvrtc = nvrtc_version();
  if (driver_major > 0 && nvrtc.major > driver_major) {
    throw CudaError("NVRTC " + nvrtc.to_string() + " is newer than the CUDA driver (" +
                    std::to_string(driver_major) + ".x): its modules need a CUDA " +
                    std::to_string(nvrtc.major) + " driver; use an NVRTC " +
                    std::to_string(driver_major) + ".x (STAX_NVRTC_LIBRARY) or update the driver");
  }
  CudaModule module(result.compiled.image);
  const std::optional<std::pair<DevicePtr, size_t>> global =
      module.find_global(kCudaCacheKeySymbol);
  std::string embedded;
  if (global && global->second > 0) {
    embedded.resize(global->second);
    copy_to_host(embedded.data(), global->first, global->second);
    embedded.resize(embedded.find('\0') == std::string::npos ? embedded.size()
                                                             : embedded.find('\0'));
  }
  if (embedded != result.key) {
    throw CudaError("the CUDA module '" + result.image_path + "' does not define " +
                    kCudaCacheKeySymbol + " = \"" + result.key + "\"" +
                    (global ? " (it holds \"" + embedded + "\")" : ""));
  }
  return module;
}

}  // namespace stax::runtime::cuda
