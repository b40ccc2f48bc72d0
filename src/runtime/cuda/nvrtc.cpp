// NVRTC through dlopen: finding the library and its builtins, compiling to a cubin (or PTX when
// NVRTC lacks the architecture), and ptxas' resource report.
#include "runtime/cuda/nvrtc.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>

#include "runtime/cuda/cuda_abi.h"
#include "runtime/shared_library.h"

namespace fs = std::filesystem;

namespace stax::runtime::cuda {

namespace {

using namespace abi;  // NOLINT: the CUDA names read as in CUDA code

// The loader names tried when no path is given, newest first.
const std::vector<std::string>& loader_names() {
  static const std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  return names;
}

constexpr const char* kInstallHint = "set STAX_NVRTC_LIBRARY or pip install nvidia-cuda-nvrtc";

// A loaded NVRTC: the library, the builtins kept loaded beside it, and its entry points.
struct NvrtcApi {
  std::unique_ptr<SharedLibrary> library;
  std::unique_ptr<SharedLibrary> builtins;
  NvrtcLibrary info;
  std::vector<int> supported_archs;

  PFN_nvrtcGetErrorString get_error_string = nullptr;
  PFN_nvrtcVersion version = nullptr;
  PFN_nvrtcGetNumSupportedArchs get_num_supported_archs = nullptr;
  PFN_nvrtcGetSupportedArchs get_supported_archs = nullptr;
  PFN_nvrtcCreateProgram create_program = nullptr;
  PFN_nvrtcDestroyProgram destroy_program = nullptr;
  PFN_nvrtcCompileProgram compile_program = nullptr;
  PFN_nvrtcGetSize get_program_log_size = nullptr;
  PFN_nvrtcGetBytes get_program_log = nullptr;
  PFN_nvrtcGetSize get_ptx_size = nullptr;
  PFN_nvrtcGetBytes get_ptx = nullptr;
  PFN_nvrtcGetSize get_cubin_size = nullptr;
  PFN_nvrtcGetBytes get_cubin = nullptr;

  std::string error_name(nvrtcResult result) const {
    const char* text = get_error_string != nullptr ? get_error_string(result) : nullptr;
    return text != nullptr ? text : "NVRTC error " + std::to_string(result);
  }
};

// The file the loader mapped for `library` (the path of a library found by soname).
std::string mapped_path(const SharedLibrary& library) {
  link_map* map = nullptr;
  if (::dlinfo(library.handle(), RTLD_DI_LINKMAP, &map) == 0 && map != nullptr &&
      map->l_name != nullptr && map->l_name[0] != '\0') {
    return fs::absolute(map->l_name).lexically_normal().string();
  }
  return library.path();
}

template <class Fn>
void resolve(const SharedLibrary& library, const char* name, Fn& fn) {
  if (!library.has_symbol(name)) {
    throw CudaError("the NVRTC at '" + library.path() + "' has no " + name +
                    " (Stax needs NVRTC 11.2 or newer; " + kInstallHint + ")");
  }
  fn = library.function<Fn>(name);
}

// Loads `library`'s entry points, version, supported architectures and builtins.
std::unique_ptr<NvrtcApi> finish_loading(std::unique_ptr<SharedLibrary> library) {
  auto api = std::make_unique<NvrtcApi>();
  const SharedLibrary& lib = *library;
  resolve(lib, "nvrtcGetErrorString", api->get_error_string);
  resolve(lib, "nvrtcVersion", api->version);
  resolve(lib, "nvrtcGetNumSupportedArchs", api->get_num_supported_archs);
  resolve(lib, "nvrtcGetSupportedArchs", api->get_supported_archs);
  resolve(lib, "nvrtcCreateProgram", api->create_program);
  resolve(lib, "nvrtcDestroyProgram", api->destroy_program);
  resolve(lib, "nvrtcCompileProgram", api->compile_program);
  resolve(lib, "nvrtcGetProgramLogSize", api->get_program_log_size);
  resolve(lib, "nvrtcGetProgramLog", api->get_program_log);
  resolve(lib, "nvrtcGetPTXSize", api->get_ptx_size);
  resolve(lib, "nvrtcGetPTX", api->get_ptx);
  resolve(lib, "nvrtcGetCUBINSize", api->get_cubin_size);
  resolve(lib, "nvrtcGetCUBIN", api->get_cubin);

  api->info.path = lib.path();
  api->info.resolved_path = mapped_path(lib);
  std::error_code ec;
  const auto bytes = fs::file_size(api->info.resolved_path, ec);
  api->info.file_bytes = ec ? 0 : static_cast<int64_t>(bytes);
  nvrtcResult status = api->version(&api->info.version.major, &api->info.version.minor);
  if (status != NVRTC_SUCCESS) {
    throw CudaError("nvrtcVersion failed in '" + lib.path() + "': " + api->error_name(status));
  }
  int count = 0;
  status = api->get_num_supported_archs(&count);
  if (status == NVRTC_SUCCESS && count > 0) {
    api->supported_archs.resize(static_cast<size_t>(count));
    status = api->get_supported_archs(api->supported_archs.data());
  }
  if (status != NVRTC_SUCCESS) {
    throw CudaError("nvrtcGetSupportedArchs failed in '" + lib.path() +
                    "': " + api->error_name(status));
  }
  std::sort(api->supported_archs.begin(), api->supported_archs.end());

  // The builtins, by the name libnvrtc will ask the loader for, from NVRTC's own folder.
  const fs::path folder = fs::path(api->info.resolved_path).parent_path();
  const fs::path builtins =
      folder / detail::builtins_file_name(fs::path(api->info.resolved_path).filename().string(),
                                          api->info.version);
  if (fs::is_regular_file(builtins, ec)) {
    std::string error;
    api->builtins = SharedLibrary::try_open(builtins.string(), &error);
    if (!api->builtins) {
      throw CudaError("cannot load NVRTC's builtins '" + builtins.string() + "': " + error);
    }
    api->info.builtins_path = builtins.string();
  }
  api->library = std::move(library);
  return api;
}

std::unique_ptr<NvrtcApi> open_nvrtc(const std::vector<std::string>& candidates, bool required) {
  std::string tried;
  for (const std::string& candidate : candidates) {
    std::string error;
    std::unique_ptr<SharedLibrary> library = SharedLibrary::try_open(candidate, &error);
    if (library) return finish_loading(std::move(library));
    if (required) {
      throw CudaError("cannot load NVRTC from '" + candidate + "': " + error);
    }
    tried += (tried.empty() ? "" : ", ") + candidate + " (" + error + ")";
  }
  throw CudaError("no NVRTC found: tried " + tried + " (" + kInstallHint + ")");
}

// Process-wide state: the explicit path and the loaded library (never unloaded: compiles may
// run on other threads until exit).
std::mutex g_mutex;
std::string g_explicit_path;  // set_nvrtc_library
NvrtcApi* g_api = nullptr;
std::atomic<int64_t> g_compiles{0};

const NvrtcApi& api() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_api != nullptr) return *g_api;
  std::unique_ptr<NvrtcApi> loaded;
  if (!g_explicit_path.empty()) {
    loaded = open_nvrtc({g_explicit_path}, true);
  } else if (const char* env = std::getenv("STAX_NVRTC_LIBRARY"); env != nullptr && *env) {
    try {
      loaded = open_nvrtc({env}, true);
    } catch (const CudaError& error) {
      throw CudaError(std::string(error.what()) + " (from STAX_NVRTC_LIBRARY)");
    }
  } else {
    loaded = open_nvrtc(loader_names(), false);
  }
  g_api = loaded.release();
  return *g_api;
}

// "sm_90" -> 90, "sm_90a" -> 90 (suffix "a"); nullopt for anything else.
std::optional<int> arch_number(const std::string& arch, std::string* suffix) {
  if (arch.rfind("sm_", 0) != 0) return std::nullopt;
  size_t end = 3;
  while (end < arch.size() && std::isdigit(static_cast<unsigned char>(arch[end]))) ++end;
  if (end == 3 || end - 3 > 4) return std::nullopt;
  const std::string rest = arch.substr(end);
  if (!rest.empty() && rest != "a" && rest != "f") return std::nullopt;
  if (suffix != nullptr) *suffix = rest;
  return std::stoi(arch.substr(3, end - 3));
}

std::string join_archs(const std::vector<int>& archs) {
  std::string text;
  for (int arch : archs) text += (text.empty() ? "sm_" : ", sm_") + std::to_string(arch);
  return text;
}

class Program {
 public:
  Program(const NvrtcApi& api, const std::string& source, const std::string& name) : api_(api) {
    const nvrtcResult status =
        api.create_program(&program_, source.c_str(), name.c_str(), 0, nullptr, nullptr);
    if (status != NVRTC_SUCCESS) {
      throw CudaError("nvrtcCreateProgram failed for " + name + ": " + api.error_name(status));
    }
  }
  ~Program() { api_.destroy_program(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  nvrtcProgram get() const { return program_; }

  // The bytes of the log, PTX or cubin.
  std::string read(PFN_nvrtcGetSize size_fn, PFN_nvrtcGetBytes bytes_fn, const char* what) const {
    size_t size = 0;
    nvrtcResult status = size_fn(program_, &size);
    std::string bytes(size, '\0');
    if (status == NVRTC_SUCCESS && size > 0) status = bytes_fn(program_, bytes.data());
    if (status != NVRTC_SUCCESS) {
      throw CudaError(std::string("NVRTC could not return the ") + what + ": " +
                      api_.error_name(status));
    }
    return bytes;
  }

 private:
  const NvrtcApi& api_;
  nvrtcProgram program_ = nullptr;
};

// Text up to the first NUL (NVRTC's sizes count the terminator).
std::string until_nul(std::string text) {
  const size_t nul = text.find('\0');
  if (nul != std::string::npos) text.resize(nul);
  return text;
}

// The integer that starts `text` after blanks (0 when none).
int64_t leading_int(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  int64_t value = 0;
  bool any = false;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    value = value * 10 + (text[i] - '0');
    any = true;
    ++i;
  }
  return any ? value : 0;
}

// The quoted name after `marker` in `line` ("... function 'row_sum' for 'sm_90'").
std::string quoted_after(const std::string& line, const std::string& marker) {
  const size_t at = line.find(marker);
  if (at == std::string::npos) return "";
  const size_t open = line.find('\'', at + marker.size());
  if (open == std::string::npos) return "";
  const size_t close = line.find('\'', open + 1);
  if (close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

std::string trim(std::string_view text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

}  // namespace

namespace detail {

std::string builtins_file_name(const std::string& nvrtc_file_name, const NvrtcVersion& version) {
  const bool alt = nvrtc_file_name.find(".alt.") != std::string::npos;
  return std::string("libnvrtc-builtins") + (alt ? ".alt" : "") + ".so." +
         std::to_string(version.major) + "." + std::to_string(version.minor);
}

NvrtcLibrary probe_nvrtc(const std::vector<std::string>& candidates, bool required) {
  return open_nvrtc(candidates, required)->info;
}

}  // namespace detail

const NvrtcLibrary& nvrtc_library() {
  return api().info;
}

void set_nvrtc_library(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_api != nullptr) {
    std::error_code ec;
    const bool same =
        path == g_api->info.path || fs::equivalent(path, g_api->info.resolved_path, ec);
    if (!same) {
      throw CudaError("NVRTC is already loaded from '" + g_api->info.resolved_path +
                      "'; cannot switch to '" + path + "'");
    }
    return;
  }
  g_explicit_path = path;
}

NvrtcVersion nvrtc_version() {
  return api().info.version;
}

std::vector<int> nvrtc_supported_archs() {
  return api().supported_archs;
}

int64_t nvrtc_compile_count() {
  return g_compiles.load();
}

std::string nvrtc_target(const std::string& arch, std::string* note) {
  std::string suffix;
  const std::optional<int> number = arch_number(arch, &suffix);
  if (!number) {
    throw CudaError("CUDA architecture '" + arch + "' is not of the form sm_XY (e.g. sm_90)");
  }
  const NvrtcApi& nvrtc = api();
  const std::vector<int>& archs = nvrtc.supported_archs;
  if (std::find(archs.begin(), archs.end(), *number) != archs.end()) {
    if (note != nullptr) note->clear();
    return arch;
  }
  // jiterator's rule: PTX for the newest virtual architecture NVRTC has that the device runs.
  int best = 0;
  for (int candidate : archs) {
    if (candidate <= *number) best = std::max(best, candidate);
  }
  if (best == 0) {
    throw CudaError("NVRTC " + nvrtc.info.version.to_string() + " cannot compile for " + arch +
                    ": it supports " + join_archs(archs));
  }
  const std::string target = "compute_" + std::to_string(best);
  if (note != nullptr) {
    *note = "NVRTC " + nvrtc.info.version.to_string() + " has no " + arch + " among " +
            join_archs(archs) + ": compiled to PTX for " + target +
            ", which the driver compiles when the module is loaded";
  }
  return target;
}

std::vector<std::string> nvrtc_options(const CudaCompileOptions& options,
                                       const std::string& target) {
  std::vector<std::string> list = {"--std=c++17", "-default-device", "--gpu-architecture=" + target,
                                   "-DNDEBUG"};
  list.push_back(options.fmad ? "--fmad=true" : "--fmad=false");
  if (target.rfind("sm_", 0) == 0) list.push_back("--ptxas-options=-v");
  if (options.lineinfo) list.push_back("-lineinfo");
  if (options.max_registers)
    list.push_back("--maxrregcount=" + std::to_string(*options.max_registers));
  for (const std::string& dir : options.include_dirs) list.push_back("-I" + dir);
  list.insert(list.end(), options.extra_options.begin(), options.extra_options.end());
  return list;
}

std::vector<KernelResources> parse_ptxas_report(const std::string& log) {
  std::vector<KernelResources> kernels;
  int entry = -1;       // the entry function whose report is being read
  int properties = -1;  // the entry a "Function properties" block belongs to, or -1
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("ptxas") == std::string::npos) continue;
    if (line.find("Compiling entry function") != std::string::npos) {
      KernelResources kernel;
      kernel.name = quoted_after(line, "entry function");
      kernel.arch = quoted_after(line, "' for");
      kernels.push_back(std::move(kernel));
      entry = static_cast<int>(kernels.size()) - 1;
      properties = -1;
      continue;
    }
    if (const size_t at = line.find("Function properties for "); at != std::string::npos) {
      const std::string name = trim(std::string_view(line).substr(at + 24));
      properties = entry >= 0 && kernels[static_cast<size_t>(entry)].name == name ? entry : -1;
      continue;
    }
    if (line.find("bytes stack frame") != std::string::npos) {
      if (properties < 0) continue;
      KernelResources& kernel = kernels[static_cast<size_t>(properties)];
      std::istringstream parts(line.substr(line.find_first_of("0123456789")));
      std::string part;
      while (std::getline(parts, part, ',')) {
        const int64_t value = leading_int(part);
        if (part.find("stack frame") != std::string::npos) kernel.stack_frame_bytes = value;
        if (part.find("spill stores") != std::string::npos) kernel.spill_store_bytes = value;
        if (part.find("spill loads") != std::string::npos) kernel.spill_load_bytes = value;
      }
      continue;
    }
    if (const size_t at = line.find("Used ");
        at != std::string::npos && entry >= 0 && line.find("registers") != std::string::npos) {
      KernelResources& kernel = kernels[static_cast<size_t>(entry)];
      std::istringstream parts(line.substr(at + 5));
      std::string part;
      while (std::getline(parts, part, ',')) {
        std::string text = trim(part);
        if (text.rfind("used ", 0) == 0) text = text.substr(5);
        const int64_t value = leading_int(text);
        if (text.find("registers") != std::string::npos) {
          kernel.registers = static_cast<int>(value);
        } else if (text.find("barriers") != std::string::npos) {
          kernel.barriers = static_cast<int>(value);
        } else if (text.find("bytes smem") != std::string::npos) {
          kernel.shared_bytes = value;
        } else if (text.find("bytes cmem[0]") != std::string::npos) {
          kernel.constant_bytes = value;
        }
      }
    }
  }
  return kernels;
}

CudaCompileResult compile_cuda(const std::string& source, const std::string& name,
                               const CudaCompileOptions& options) {
  CudaCompileResult result;
  result.target = nvrtc_target(options.arch, &result.note);
  result.is_ptx = result.target.rfind("compute_", 0) == 0;
  result.options = nvrtc_options(options, result.target);
  const NvrtcApi& nvrtc = api();

  Program program(nvrtc, source, name);
  std::vector<const char*> argv;
  argv.reserve(result.options.size());
  for (const std::string& option : result.options) argv.push_back(option.c_str());
  ++g_compiles;
  const nvrtcResult status =
      nvrtc.compile_program(program.get(), static_cast<int>(argv.size()), argv.data());
  result.log =
      until_nul(program.read(nvrtc.get_program_log_size, nvrtc.get_program_log, "compile log"));
  if (status != NVRTC_SUCCESS) {
    std::string message = "NVRTC " + nvrtc.info.version.to_string() + " could not compile " + name +
                          " for " + result.target + ": " + nvrtc.error_name(status);
    if (status == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE && nvrtc.info.builtins_path.empty()) {
      message += " (no " +
                 detail::builtins_file_name(fs::path(nvrtc.info.resolved_path).filename().string(),
                                            nvrtc.info.version) +
                 " beside '" + nvrtc.info.resolved_path + "', nor on the loader's search path)";
    }
    if (!result.log.empty()) message += "\n" + result.log;
    throw CudaError(message, result.log);
  }
  if (result.is_ptx) {
    result.image = program.read(nvrtc.get_ptx_size, nvrtc.get_ptx, "PTX");
  } else {
    result.image = program.read(nvrtc.get_cubin_size, nvrtc.get_cubin, "cubin");
    result.kernels = parse_ptxas_report(result.log);
  }
  return result;
}

}  // namespace stax::runtime::cuda
