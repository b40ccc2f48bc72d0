// compile_and_load: cache-key derivation, the on-disk kernel cache (atomic renames so
// concurrent processes agree), GCC precompiled headers for stax_kernel.h, compiler
// invocation and library loading.
#include "runtime/jit.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "runtime/sha256.h"
#include "runtime/subprocess.h"

#if !defined(STAX_KERNEL_INCLUDE_DIR) || !defined(STAX_SLEEF_INCLUDE_DIR) || \
    !defined(STAX_SLEEF_LIBRARY_DIR)
#error \
    "the build must define STAX_KERNEL_INCLUDE_DIR, STAX_SLEEF_INCLUDE_DIR, STAX_SLEEF_LIBRARY_DIR"
#endif

namespace fs = std::filesystem;

namespace stax::runtime {

namespace {

// Bump when the cache layout or the meaning of a key changes.
constexpr std::string_view kCacheFormat = "stax-jit-1";
constexpr std::string_view kKernelHeader = "stax_kernel.h";

std::atomic<int64_t> g_compiler_invocations{0};
std::atomic<uint64_t> g_temp_counter{0};

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path.string() + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A name next to `path` that no other thread or process uses.
fs::path temp_path_for(const fs::path& path) {
  return fs::path(path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                  std::to_string(++g_temp_counter));
}

void remove_quietly(const fs::path& path) {
  std::error_code ignored;
  fs::remove(path, ignored);
}

// Writes `contents` to a temporary file and renames it over `path`, so readers only ever
// see complete files.
void write_file_atomically(const fs::path& path, const std::string& contents) {
  const fs::path temp = temp_path_for(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << contents;
    out.close();
    if (!out) {
      remove_quietly(temp);
      throw std::runtime_error("cannot write '" + temp.string() + "'");
    }
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) {
    remove_quietly(temp);
    throw std::runtime_error("cannot rename '" + temp.string() + "' to '" + path.string() +
                             "': " + ec.message());
  }
}

void ensure_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) {
    throw std::runtime_error("cannot create cache directory '" + dir.string() +
                             "': " + ec.message());
  }
}

// Length-prefixed fields, so different field lists never hash the same byte stream.
class KeyBuilder {
 public:
  void field(std::string_view text) {
    const uint64_t size = text.size();
    hash_.update(&size, sizeof size);
    hash_.update(text);
  }
  void fields(const std::vector<std::string>& list) {
    field("list:" + std::to_string(list.size()));
    for (const std::string& item : list) field(item);
  }
  // 128 bits of SHA-256, as 32 hex characters.
  std::string key() { return hash_.hex_digest().substr(0, 32); }

 private:
  Sha256 hash_;
};

// Digest of every file under kernel_include/, so header edits invalidate cached kernels.
const std::string& kernel_headers_digest() {
  static const std::string digest = [] {
    const fs::path root = kernel_include_dir();
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    KeyBuilder builder;
    for (const fs::path& file : files) {
      builder.field(file.lexically_relative(root).string());
      builder.field(read_file(file));
    }
    return builder.key();
  }();
  return digest;
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

std::vector<std::string> base_flags(SimdLevel level) {
  std::vector<std::string> flags = {"-std=c++17",
                                    "-O2",
                                    "-fPIC",
                                    "-fopenmp",
                                    "-ffp-contract=off",
                                    "-fno-math-errno",
                                    "-fno-semantic-interposition"};
  for (std::string& flag : simd_compiler_flags(level)) flags.push_back(std::move(flag));
  return flags;
}

// Compile flags; `pch_dir` (may be empty) is searched before kernel_include/ so GCC picks up
// the precompiled stax_kernel.h.gch.
std::vector<std::string> compile_flags(SimdLevel level, const std::string& pch_dir) {
  std::vector<std::string> flags = base_flags(level);
  if (!pch_dir.empty()) flags.push_back("-I" + pch_dir);
  flags.push_back("-I" + kernel_include_dir());
  flags.push_back("-I" STAX_SLEEF_INCLUDE_DIR);
  return flags;
}

// Precompiled-header directories known to be unbuildable in this process.
std::mutex g_pch_mutex;
std::set<std::string> g_failed_pch;

// Returns a directory holding stax_kernel.h.gch for these flags, building it on first use;
// empty when it cannot be built (compilation then simply parses the header).
std::string ensure_precompiled_header(const fs::path& cache_dir,
                                      const std::vector<std::string>& command,
                                      const CompilerInfo& info, SimdLevel level) {
  const std::vector<std::string> flags = compile_flags(level, "");
  KeyBuilder builder;
  builder.field("pch");
  builder.field(kCacheFormat);
  builder.fields(command);
  builder.field(info.identity);
  builder.fields(flags);
  builder.field(kernel_headers_digest());
  const fs::path dir = cache_dir / ("pch-" + builder.key());
  const fs::path gch = dir / (std::string(kKernelHeader) + ".gch");

  std::lock_guard<std::mutex> lock(g_pch_mutex);
  if (fs::exists(gch)) return dir.string();
  if (g_failed_pch.count(dir.string()) != 0) return "";
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
  std::error_code ec;
  if (result.started && result.exit_code == 0) fs::rename(temp, gch, ec);
  if (!result.started || result.exit_code != 0 || ec) {
    remove_quietly(temp);
    g_failed_pch.insert(dir.string());
    return "";
  }
  return dir.string();
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

std::shared_ptr<SharedLibrary> load_library(const std::string& path) {
  auto library = std::make_shared<SharedLibrary>(path);
  pin_openmp_runtime();
  std::lock_guard<std::mutex> lock(g_loaded_mutex);
  g_loaded[path] = library;
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

std::string kernel_include_dir() {
  return STAX_KERNEL_INCLUDE_DIR;
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

std::vector<std::string> resolve_compiler(const JitOptions& options) {
  std::vector<std::string> command = split_words(options.compiler);
  if (command.empty()) command = split_words(env_or_empty("CXX"));
  if (command.empty()) command = {"c++"};
  return command;
}

std::vector<std::string> kernel_compile_flags(SimdLevel level) {
  return compile_flags(level, "");
}

std::vector<std::string> kernel_link_flags() {
  return {"-L" STAX_SLEEF_LIBRARY_DIR, "-Wl,-rpath," STAX_SLEEF_LIBRARY_DIR, "-lsleef"};
}

int64_t compiler_invocations() {
  return g_compiler_invocations.load();
}

JitResult compile_and_load(const std::string& source, const JitOptions& options) {
  const fs::path cache_dir = resolve_cache_dir(options);
  const std::vector<std::string> command = resolve_compiler(options);
  const CompilerInfo& info = compiler_info(command);
  const std::vector<std::string> flags = kernel_compile_flags(options.simd);
  const std::vector<std::string> link_flags = kernel_link_flags();

  KeyBuilder builder;
  builder.field("kernel");
  builder.field(kCacheFormat);
  builder.fields(command);
  builder.field(info.identity);
  builder.fields(flags);
  builder.fields(link_flags);
  builder.field(kernel_headers_digest());
  builder.field(source);
  const std::string key = builder.key();

  JitResult result;
  result.source_path = (cache_dir / ("stax_" + key + ".cpp")).string();
  result.library_path = (cache_dir / ("stax_" + key + ".so")).string();

  const std::shared_ptr<std::mutex> mutex = key_mutex(result.library_path);
  std::lock_guard<std::mutex> lock(*mutex);
  if ((result.library = find_loaded(result.library_path))) {
    result.cache_hit = true;
    return result;
  }
  if (fs::exists(result.library_path)) {
    try {
      result.library = load_library(result.library_path);
      result.cache_hit = true;
      return result;
    } catch (const std::runtime_error&) {
      // Unloadable cache entry (e.g. from an incompatible system): rebuild it below.
    }
  }

  ensure_directory(cache_dir);
  write_file_atomically(result.source_path, source);
  std::string pch_dir;
  if (options.use_precompiled_header && info.is_gcc &&
      source.find(kKernelHeader) != std::string::npos) {
    pch_dir = ensure_precompiled_header(cache_dir, command, info, options.simd);
  }
  const fs::path temp_library = temp_path_for(result.library_path);
  std::vector<std::string> argv = command;
  for (std::string& flag : compile_flags(options.simd, pch_dir)) argv.push_back(std::move(flag));
  for (const char* arg : {"-shared", "-o"}) argv.push_back(arg);
  argv.push_back(temp_library.string());
  argv.push_back(result.source_path);
  argv.insert(argv.end(), link_flags.begin(), link_flags.end());

  ++g_compiler_invocations;
  const ProcessResult process = run_process(argv);
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
  std::error_code ec;
  fs::rename(temp_library, result.library_path, ec);
  if (ec) {
    remove_quietly(temp_library);
    throw std::runtime_error("cannot rename '" + temp_library.string() + "' to '" +
                             result.library_path + "': " + ec.message());
  }
  result.library = load_library(result.library_path);
  result.cache_hit = false;
  return result;
}

}  // namespace stax::runtime
