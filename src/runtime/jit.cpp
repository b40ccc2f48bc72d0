// compile_and_load: cache-key derivation, the on-disk kernel cache, GCC precompiled headers
// for stax_kernel.h, compiler invocation and library loading.
//
// Nothing found in the cache directory is trusted. Every published file F (a kernel library
// or a precompiled header) has a checksum file F.sha256 beside it, and is used only when the
// two agree, checked by reading F (never by mapping it: dlopen of a truncated library can
// SIGBUS). Kernel libraries also embed their cache key (a second translation unit the JIT
// adds to every build, defining `stax_cache_key`), checked with dlsym after loading; so a
// library from another cache entry never runs under this key. Any mismatch is a miss: the
// entry is rebuilt and replaced by rename, the library first and its checksum file after
// it, so readers only ever see complete files and a crash in between leaves a miss.
//
// Each entry is locked (jit_cache_entries.h) while it is looked up, built or loaded; after a
// new entry is published, least recently used entries are evicted down to the size bound.
#include "runtime/jit.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "runtime/jit_cache_entries.h"
#include "runtime/subprocess.h"

#if !defined(STAX_KERNEL_INCLUDE_DIR) || !defined(STAX_SLEEF_INCLUDE_DIR) || \
    !defined(STAX_SLEEF_LIBRARY_DIR) || !defined(STAX_VERSION)
#error \
    "the build must define STAX_KERNEL_INCLUDE_DIR, STAX_SLEEF_INCLUDE_DIR, STAX_SLEEF_LIBRARY_DIR, STAX_VERSION"
#endif

namespace fs = std::filesystem;

namespace stax::runtime {

using cache::checksum_matches;
using cache::ensure_directory;
using cache::KeyBuilder;
using cache::publish_with_checksum;
using cache::remove_quietly;
using cache::temp_path_for;
using cache::write_file_atomically;

namespace {

// Bump when the cache layout or the meaning of a key changes.
constexpr std::string_view kCacheFormat = "stax-jit-3";
constexpr std::string_view kKernelHeader = "stax_kernel.h";
// Exported by every kernel library: the key it was built for, as a NUL-terminated string.
constexpr const char* kCacheKeySymbol = "stax_cache_key";

std::atomic<int64_t> g_compiler_invocations{0};

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Digest of every file under the kernel include directory `root`, so header edits invalidate
// cached kernels. Computed once per directory and process ($STAX_KERNEL_INCLUDE_DIR may name
// another directory later in the same process).
std::string kernel_headers_digest(const fs::path& root) {
  static std::mutex mutex;
  static std::map<std::string, std::string> digests;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = digests.find(root.string());
  if (it != digests.end()) return it->second;
  return digests.emplace(root.string(), cache::directory_digest(root)).first->second;
}

struct CompilerInfo {
  std::string identity;  // `<compiler> --version` output
  bool is_gcc = false;   // GCC-style precompiled headers available
};

// `--version` runs once per process per compiler command.
const CompilerInfo& compiler_info(const std::vector<std::string>& command) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, CompilerInfo> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(command);
  if (it != cache.end()) return it->second;
  std::vector<std::string> argv = command;
  argv.push_back("--version");
  const ProcessResult result = run_process(argv);
  CompilerInfo info;
  if (result.started && result.exit_code == 0) {
    info.identity = result.output;
    info.is_gcc = result.output.find("Free Software Foundation") != std::string::npos &&
                  result.output.find("clang") == std::string::npos;
  } else {
    info.identity = "unavailable: " + result.output;
  }
  return cache.emplace(command, std::move(info)).first->second;
}

std::vector<std::string> base_flags(SimdLevel level, bool host_extensions) {
  std::vector<std::string> flags = {"-std=c++17",
                                    "-O2",
                                    "-fPIC",
                                    "-fopenmp",
                                    "-ffp-contract=off",
                                    "-fno-math-errno",
                                    "-fno-semantic-interposition"};
  for (std::string& flag : simd_compiler_flags(level, host_extensions)) {
    flags.push_back(std::move(flag));
  }
  return flags;
}

// Compile flags; `pch_dir` (may be empty) is searched before kernel_include/ so GCC picks up
// the precompiled stax_kernel.h.gch.
std::vector<std::string> compile_flags(SimdLevel level, bool host_extensions,
                                       const std::string& pch_dir) {
  std::vector<std::string> flags = base_flags(level, host_extensions);
  if (!pch_dir.empty()) flags.push_back("-I" + pch_dir);
  flags.push_back("-I" + kernel_include_dir());
  flags.push_back("-I" STAX_SLEEF_INCLUDE_DIR);
  return flags;
}

// Identity of a file's current contents on disk, as far as stat tells: any write or
// replacement changes it.
struct FileStamp {
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

std::optional<FileStamp> stamp_of(const fs::path& path) {
  struct stat info{};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return FileStamp{static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino),
                   static_cast<int64_t>(info.st_size),
                   static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
}

// Guards the precompiled-header state below and serializes building them in this process.
std::mutex g_pch_mutex;
// Precompiled-header directories known to be unbuildable in this process.
std::set<std::string> g_failed_pch;
// Precompiled headers whose checksum this process verified, with the stamp they had then:
// hashing a header costs about as much as the compile time it saves, so it is done once per
// process and again only when the file changes.
std::map<std::string, FileStamp> g_verified_pch;

// Whether `gch` matches its checksum file (see g_verified_pch). Caller holds g_pch_mutex.
bool precompiled_header_intact(const fs::path& gch, const std::string& entry_name) {
  const std::optional<FileStamp> stamp = stamp_of(gch);
  if (!stamp) return false;
  auto it = g_verified_pch.find(gch.string());
  if (it != g_verified_pch.end() && it->second == *stamp) return true;
  if (!checksum_matches(gch, entry_name)) return false;
  g_verified_pch[gch.string()] = *stamp;
  return true;
}

// Returns a directory holding an intact stax_kernel.h.gch for these flags, building it when
// it is missing, fails its checksum, or `rebuild` is set (the compiler rejected it); empty
// when it cannot be built (compilation then simply parses the header).
std::string ensure_precompiled_header(const fs::path& cache_dir,
                                      const std::vector<std::string>& command,
                                      const CompilerInfo& info, SimdLevel level,
                                      bool host_extensions, bool rebuild) {
  const std::vector<std::string> flags = compile_flags(level, host_extensions, "");
  KeyBuilder builder;
  builder.field("pch");
  builder.field(kCacheFormat);
  builder.field(STAX_VERSION);
  builder.fields(command);
  builder.field(info.identity);
  builder.fields(flags);
  builder.field(kernel_headers_digest(kernel_include_dir()));
  const std::string dir_name = "pch-" + builder.key();
  const std::string gch_name = std::string(kKernelHeader) + ".gch";
  const std::string entry_name = dir_name + "/" + gch_name;
  const fs::path dir = cache_dir / dir_name;
  const fs::path gch = dir / gch_name;

  std::lock_guard<std::mutex> lock(g_pch_mutex);
  if (g_failed_pch.count(dir.string()) != 0) return "";
  // Held while the header is checked or built, so a process that waits for a concurrent
  // build then finds it intact. Kernel compiles read it unlocked: if it is evicted under
  // them, GCC finds no .gch and parses stax_kernel.h from kernel_include/ instead.
  const std::optional<cache::EntryLock> entry_lock = cache::EntryLock::acquire(cache_dir, dir_name);
  if (!rebuild && precompiled_header_intact(gch, entry_name)) {
    cache::touch_entry(cache_dir, dir_name);
    return dir.string();
  }
  ensure_directory(dir);
  const fs::path temp = temp_path_for(gch);
  std::vector<std::string> argv = command;
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const char* arg : {"-x", "c++-header"}) argv.push_back(arg);
  argv.push_back((fs::path(kernel_include_dir()) / kKernelHeader).string());
  argv.push_back("-o");
  argv.push_back(temp.string());
  ++g_compiler_invocations;
  const ProcessResult result = run_process(argv);
  if (!result.started || result.exit_code != 0) {
    remove_quietly(temp);
    g_failed_pch.insert(dir.string());
    return "";
  }
  // Stamped before the rename, which keeps inode and mtime: the stamp is of our own build.
  const std::optional<FileStamp> stamp = stamp_of(temp);
  try {
    publish_with_checksum(temp, gch, entry_name);
  } catch (const std::runtime_error&) {
    g_failed_pch.insert(dir.string());
    return "";
  }
  g_verified_pch.erase(gch.string());
  if (stamp) g_verified_pch[gch.string()] = *stamp;
  cache::touch_entry(cache_dir, dir_name);
  return dir.string();
}

// GCC's diagnostics for a precompiled header it found but cannot read all say so.
bool rejected_precompiled_header(const ProcessResult& result) {
  return result.output.find("precompiled header") != std::string::npos;
}

// Libraries loaded by this process, by path: repeated requests share one handle.
std::mutex g_loaded_mutex;
std::map<std::string, std::weak_ptr<SharedLibrary>> g_loaded;
// One mutex per library path: threads of this process compile each key once.
std::map<std::string, std::shared_ptr<std::mutex>> g_key_mutexes;

std::shared_ptr<SharedLibrary> find_loaded(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_loaded_mutex);
  auto it = g_loaded.find(path);
  return it != g_loaded.end() ? it->second.lock() : nullptr;
}

std::shared_ptr<std::mutex> key_mutex(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_loaded_mutex);
  std::shared_ptr<std::mutex>& mutex = g_key_mutexes[path];
  if (!mutex) mutex = std::make_shared<std::mutex>();
  return mutex;
}

// Kernels pull in the OpenMP runtime. Its worker threads outlive parallel regions, so the
// runtime must never be unmapped when the last kernel library is closed: mark it NODELETE.
void pin_openmp_runtime() {
  for (const char* name : {"libgomp.so.1", "libomp.so", "libomp.so.5"}) {
    ::dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);  // no-op unless already loaded
  }
}

void remember_loaded(const std::string& path, const std::shared_ptr<SharedLibrary>& library) {
  std::lock_guard<std::mutex> lock(g_loaded_mutex);
  g_loaded[path] = library;
}

// The second translation unit of every kernel library: its key, checked after loading.
std::string key_source_text(const std::string& key) {
  return "// Written by the Stax JIT: the cache key of the kernel library this is linked into.\n"
         "extern \"C\" __attribute__((visibility(\"default\"))) const char " +
         std::string(kCacheKeySymbol) + "[] = \"" + key + "\";\n";
}

bool carries_key(const SharedLibrary& library, const std::string& key) {
  if (!library.has_symbol(kCacheKeySymbol)) return false;
  const char* embedded = static_cast<const char*>(library.symbol(kCacheKeySymbol));
  return std::strncmp(embedded, key.c_str(), key.size() + 1) == 0;
}

std::shared_ptr<SharedLibrary> open_if_key(const fs::path& path, const std::string& key) {
  auto library = std::make_shared<SharedLibrary>(path.string());
  pin_openmp_runtime();
  return carries_key(*library, key) ? library : nullptr;
}

// Loads the library at `path` if it embeds `key`, nullptr if not; throws std::runtime_error
// when dlopen fails. dlopen hands out the image already mapped under a path even after the
// file was replaced, and a rejected library may stay mapped (one with unique symbols cannot
// be unloaded). So when the image carries another key, the file is opened once more through
// a fresh name (a hard link), which maps its current contents.
std::shared_ptr<SharedLibrary> load_keyed_library(const fs::path& path, const std::string& key) {
  if (std::shared_ptr<SharedLibrary> library = open_if_key(path, key)) return library;
  const fs::path alias = temp_path_for(path);
  std::error_code ec;
  fs::create_hard_link(path, alias, ec);
  if (ec) fs::copy_file(path, alias, ec);
  if (ec) {
    remove_quietly(alias);
    return nullptr;
  }
  std::shared_ptr<SharedLibrary> library;
  try {
    library = open_if_key(alias, key);
  } catch (const std::runtime_error&) {
    remove_quietly(alias);
    throw;
  }
  remove_quietly(alias);  // the mapping stays valid
  return library;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  std::string word;
  while (in >> word) words.push_back(word);
  return words;
}

}  // namespace

std::string locate_kernel_include_dir(const std::string& env_value,
                                      const std::string& module_file) {
  if (!env_value.empty()) {
    const fs::path dir = fs::absolute(env_value).lexically_normal();
    if (!fs::is_regular_file(dir / kKernelHeader)) {
      throw std::runtime_error("STAX_KERNEL_INCLUDE_DIR is '" + env_value + "', which has no " +
                               std::string(kKernelHeader));
    }
    return dir.string();
  }
  if (!module_file.empty()) {
    const fs::path beside =
        (fs::absolute(module_file).parent_path() / "kernel_include").lexically_normal();
    std::error_code ec;
    if (fs::is_regular_file(beside / kKernelHeader, ec)) return beside.string();
    // An installed libstax (lib/libstax.so): the headers in share/stax/kernel_include.
    const fs::path installed =
        (fs::absolute(module_file).parent_path() / ".." / "share" / "stax" / "kernel_include")
            .lexically_normal();
    if (fs::is_regular_file(installed / kKernelHeader, ec)) return installed.string();
  }
  return STAX_KERNEL_INCLUDE_DIR;
}

std::string runtime_module_file() {
  // The module that defines this variable: the Python extension, a shared library or the
  // executable that stax_runtime is linked into.
  static const char anchor = 0;
  static const std::string file = [] {
    Dl_info info{};
    if (::dladdr(&anchor, &info) == 0 || info.dli_fname == nullptr) return std::string();
    return std::string(info.dli_fname);
  }();
  return file;
}

std::string kernel_include_dir() {
  return locate_kernel_include_dir(env_or_empty("STAX_KERNEL_INCLUDE_DIR"), runtime_module_file());
}

std::string resolve_cache_dir(const JitOptions& options) {
  fs::path dir;
  if (!options.cache_dir.empty()) {
    dir = options.cache_dir;
  } else if (std::string env = env_or_empty("STAX_CACHE_DIR"); !env.empty()) {
    dir = env;
  } else if (std::string xdg = env_or_empty("XDG_CACHE_HOME"); !xdg.empty()) {
    dir = fs::path(xdg) / "stax";
  } else if (std::string home = env_or_empty("HOME"); !home.empty()) {
    dir = fs::path(home) / ".cache" / "stax";
  } else {
    dir = fs::temp_directory_path() / ("stax-cache-" + std::to_string(::getuid()));
  }
  return fs::absolute(dir).lexically_normal().string();
}

int64_t resolve_max_cache_bytes(const JitOptions& options) {
  if (options.max_cache_bytes) {
    if (*options.max_cache_bytes <= 0) {
      throw std::invalid_argument(
          "JitOptions::max_cache_bytes = " + std::to_string(*options.max_cache_bytes) +
          ": the cache size bound must be a positive number of bytes");
    }
    return *options.max_cache_bytes;
  }
  const std::string env = env_or_empty("STAX_CACHE_MAX_BYTES");
  if (env.empty()) return kDefaultMaxCacheBytes;
  int64_t bytes = 0;
  const auto [end, error] = std::from_chars(env.data(), env.data() + env.size(), bytes);
  if (error != std::errc() || end != env.data() + env.size() || bytes <= 0) {
    throw std::invalid_argument("STAX_CACHE_MAX_BYTES='" + env +
                                "': the cache size bound must be a positive integer number of "
                                "bytes below 2^63 (e.g. 2147483648 for 2 GiB)");
  }
  return bytes;
}

std::vector<std::string> resolve_compiler(const JitOptions& options) {
  std::vector<std::string> command = split_words(options.compiler);
  if (command.empty()) command = split_words(env_or_empty("CXX"));
  if (command.empty()) command = {"c++"};
  return command;
}

std::vector<std::string> kernel_compile_flags(SimdLevel level, bool host_extensions) {
  return compile_flags(level, host_extensions, "");
}

std::vector<std::string> kernel_link_flags() {
  return {"-L" STAX_SLEEF_LIBRARY_DIR, "-Wl,-rpath," STAX_SLEEF_LIBRARY_DIR, "-lsleef"};
}

int64_t compiler_invocations() {
  return g_compiler_invocations.load();
}

std::string stax_version() {
  return STAX_VERSION;
}

CacheKeyInputs cache_key_inputs(const std::string& source, const JitOptions& options) {
  CacheKeyInputs inputs;
  inputs.stax_version = stax_version();
  inputs.compiler_command = resolve_compiler(options);
  inputs.compiler_identity = compiler_info(inputs.compiler_command).identity;
  inputs.compile_flags = kernel_compile_flags(options.simd, options.host_extensions);
  inputs.link_flags = kernel_link_flags();
  inputs.kernel_headers_digest = kernel_headers_digest(kernel_include_dir());
  inputs.source = source;
  return inputs;
}

std::string cache_key(const CacheKeyInputs& inputs) {
  KeyBuilder builder;
  builder.field("kernel");
  builder.field(kCacheFormat);
  builder.field(inputs.stax_version);
  builder.fields(inputs.compiler_command);
  builder.field(inputs.compiler_identity);
  builder.fields(inputs.compile_flags);
  builder.fields(inputs.link_flags);
  builder.field(inputs.kernel_headers_digest);
  builder.field(inputs.source);
  return builder.key();
}

JitResult compile_and_load(const std::string& source, const JitOptions& options) {
  // First, so a bad bound is reported on a hit too, not only when a write would evict.
  const int64_t max_cache_bytes = resolve_max_cache_bytes(options);
  const fs::path cache_dir = resolve_cache_dir(options);
  const CacheKeyInputs key_inputs = cache_key_inputs(source, options);
  const std::vector<std::string>& command = key_inputs.compiler_command;
  const std::vector<std::string>& link_flags = key_inputs.link_flags;
  const CompilerInfo& info = compiler_info(command);
  const std::string key = cache_key(key_inputs);

  JitResult result;
  const std::string entry_id = "stax_" + key;
  const std::string entry_name = entry_id + ".so";
  const fs::path library_path = cache_dir / entry_name;
  result.source_path = (cache_dir / (entry_id + ".cpp")).string();
  result.library_path = library_path.string();

  const std::shared_ptr<std::mutex> mutex = key_mutex(result.library_path);
  std::lock_guard<std::mutex> lock(*mutex);
  if ((result.library = find_loaded(result.library_path))) {
    // Unlocked: if the entry is being evicted, at worst a stray stamp is left, which counts
    // as a tiny entry of its own and is evicted in turn.
    std::error_code ec;
    if (fs::exists(library_path, ec)) cache::touch_entry(cache_dir, entry_id);
    result.cache_hit = true;
    return result;
  }
  ensure_directory(cache_dir);
  // Held to the end: eviction by other processes cannot remove the entry between its check
  // and its load, nor its files while they are written and compiled, and a process that
  // waited here for another's build finds the entry built.
  const std::optional<cache::EntryLock> entry_lock = cache::EntryLock::acquire(cache_dir, entry_id);
  // The checksum comes first: dlopen of a damaged file can crash this process.
  if (checksum_matches(library_path, entry_name)) {
    try {
      result.library = load_keyed_library(library_path, key);
    } catch (const std::runtime_error&) {
      // Intact but unloadable (e.g. built on an incompatible system, or removed since the
      // check by a process that does not lock): rebuild it below.
    }
    if (result.library) {
      remember_loaded(result.library_path, result.library);
      cache::touch_entry(cache_dir, entry_id);
      result.cache_hit = true;
      return result;
    }
  }

  write_file_atomically(result.source_path, source);
  const fs::path key_source_path = cache_dir / (entry_id + ".key.cpp");
  write_file_atomically(key_source_path, key_source_text(key));
  const bool wants_pch = options.use_precompiled_header && info.is_gcc &&
                         source.find(kKernelHeader) != std::string::npos;
  std::string pch_dir = wants_pch
                            ? ensure_precompiled_header(cache_dir, command, info, options.simd,
                                                        options.host_extensions, false)
                            : "";
  const fs::path temp_library = temp_path_for(library_path);
  std::vector<std::string> argv;
  auto run_compiler = [&]() {
    argv = command;
    for (std::string& flag : compile_flags(options.simd, options.host_extensions, pch_dir))
      argv.push_back(std::move(flag));
    for (const char* arg : {"-shared", "-o"}) argv.push_back(arg);
    argv.push_back(temp_library.string());
    argv.push_back(result.source_path);
    argv.push_back(key_source_path.string());
    argv.insert(argv.end(), link_flags.begin(), link_flags.end());
    ++g_compiler_invocations;
    return run_process(argv);
  };

  ProcessResult process = run_compiler();
  const bool failed = !process.started || process.exit_code != 0;
  if (failed && !pch_dir.empty() && rejected_precompiled_header(process)) {
    // An intact-looking header GCC cannot read: build it afresh and compile once more.
    pch_dir = ensure_precompiled_header(cache_dir, command, info, options.simd,
                                        options.host_extensions, true);
    process = run_compiler();
  }
  if (!process.started || process.exit_code != 0) {
    remove_quietly(temp_library);
    std::string message = process.started ? "kernel compilation failed (exit status " +
                                                std::to_string(process.exit_code) + ")"
                                          : "cannot run the kernel compiler";
    message += "\n  source: " + result.source_path;
    message += "\n  command: " + format_command(argv);
    message += "\n" + process.output;
    throw CompileError(message, result.source_path, process.output);
  }
  cache::touch_entry(cache_dir, entry_id);  // before it is published: never unstamped
  publish_with_checksum(temp_library, library_path, entry_name);
  result.library = load_keyed_library(library_path, key);
  if (!result.library) {
    throw std::runtime_error("the freshly built kernel library '" + result.library_path +
                             "' does not export " + kCacheKeySymbol + " = \"" + key + "\"");
  }
  remember_loaded(result.library_path, result.library);
  result.cache_hit = false;
  std::set<std::string> keep = {entry_id};
  if (!pch_dir.empty()) keep.insert(fs::path(pch_dir).filename().string());
  cache::evict_to_bound(cache_dir, max_cache_bytes, keep);
  return result;
}

}  // namespace stax::runtime
