// NVRTC, found and loaded at run time (no CUDA SDK at build time): CUDA C++ source to a cubin
// for one architecture, with ptxas' resource report parsed per kernel. See docs/cuda_runtime.md.
//
// Finding NVRTC, in order:
//   1. a path given to set_nvrtc_library() before the first use (the Python bridge passes
//      PyTorch's copy);
//   2. $STAX_NVRTC_LIBRARY (a path);
//   3. libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so through the dynamic loader's search path.
// A path given by 1 or 2 that cannot be loaded is an error naming it; the loader names are
// tried in turn. Before the first compile, libnvrtc-builtins(.alt).so.<major>.<minor> from the
// folder NVRTC was loaded from is loaded too: libnvrtc opens it by soname, which outside the
// loader's search path (a pip wheel) fails with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE.
//
// Thread-safe: the library is loaded once; compiles on different threads run concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_error.h"

namespace stax::runtime::cuda {

struct NvrtcVersion {
  int major = 0;
  int minor = 0;
  std::string to_string() const { return std::to_string(major) + "." + std::to_string(minor); }
};

// The NVRTC in use: loads it on first use; CudaError when none is found.
struct NvrtcLibrary {
  std::string path;           // as dlopen was given it ("libnvrtc.so.13" from the loader)
  std::string resolved_path;  // the file the loader mapped (for the loader's names)
  std::string builtins_path;  // the libnvrtc-builtins preloaded beside it, empty if none was
  NvrtcVersion version;
  int64_t file_bytes = 0;  // size of resolved_path: tells patch releases apart in cache keys
};
const NvrtcLibrary& nvrtc_library();

// Uses `path` for NVRTC. Before NVRTC is loaded it replaces $STAX_NVRTC_LIBRARY and the
// loader's search; afterwards it is accepted only when it names the library already loaded
// (else CudaError: one process holds one NVRTC).
void set_nvrtc_library(const std::string& path);

NvrtcVersion nvrtc_version();
// Compute capabilities NVRTC can emit cubins for (nvrtcGetSupportedArchs), e.g. {75, 80, ...}.
std::vector<int> nvrtc_supported_archs();

// Number of NVRTC compiles this process ran (tests use it to tell cache hits from misses).
int64_t nvrtc_compile_count();

// What compile_cuda compiles `arch` ("sm_XY", optionally "sm_XYa") to: `arch` itself (a cubin)
// when nvrtc_supported_archs() has XY; else PTX for "compute_ZW", ZW the newest supported
// architecture not above XY (a device newer than NVRTC runs it through the driver's JIT), and
// *note says so. CudaError for a malformed arch or one older than every supported one.
std::string nvrtc_target(const std::string& arch, std::string* note = nullptr);

struct CudaCompileOptions {
  std::string arch = "sm_90";              // "sm_XY"
  std::vector<std::string> include_dirs;   // -I, e.g. the CUDA kernel headers
  bool fmad = true;                        // --fmad
  bool lineinfo = false;                   // -lineinfo
  std::optional<int> max_registers;        // --maxrregcount
  std::vector<std::string> extra_options;  // appended as they are (e.g. -D...)
};

// One __global__ function's resources from ptxas' report (--ptxas-options=-v). Fields ptxas
// did not print stay 0 (it omits smem, cmem and barriers when there are none).
struct KernelResources {
  std::string name;  // as in the cubin (unmangled for extern "C")
  std::string arch;  // "sm_90"
  int registers = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t stack_frame_bytes = 0;
  int64_t shared_bytes = 0;    // static shared memory ("smem")
  int64_t constant_bytes = 0;  // cmem[0], the kernel's parameters and constants
  int barriers = 0;
};

// Parses the ptxas lines of an NVRTC log: one entry per "Compiling entry function" line, in the
// order of the log; device functions and anything else are ignored. Empty when the log has no
// ptxas report (a PTX compile).
std::vector<KernelResources> parse_ptxas_report(const std::string& log);

struct CudaCompileResult {
  std::string image;                     // the cubin, or the PTX (NUL-terminated) when is_ptx
  bool is_ptx = false;                   // true only when NVRTC cannot emit a cubin for the arch
  std::string target;                    // what was compiled for: "sm_90", or "compute_90" for PTX
  std::string log;                       // NVRTC's log (warnings, ptxas' report)
  std::vector<KernelResources> kernels;  // parse_ptxas_report(log); empty for PTX
  std::vector<std::string> options;      // the options NVRTC was given
  std::string note;                      // why PTX was emitted instead of a cubin, else empty
};

// The NVRTC options compile_cuda passes for `options` and `target` ("sm_90" or "compute_90"):
// --std=c++17 -default-device --gpu-architecture=<target> -DNDEBUG --fmad=<fmad>
// [--ptxas-options=-v for a cubin] [-lineinfo] [--maxrregcount=N] [-I<dir>...] extra...
std::vector<std::string> nvrtc_options(const CudaCompileOptions& options,
                                       const std::string& target);

// Compiles `source` (one NVRTC program, `name` as its file name in messages, e.g. "graph.cu") to
// a cubin for options.arch, or to PTX for compute_XY when nvrtc_supported_archs() lacks XY (and
// says so in `note`). CudaError on an arch that is not "sm_<digits>", when NVRTC cannot be
// found, and when the compile fails: the message names the program and holds NVRTC's log
// ("graph.cu(12): error: ...").
CudaCompileResult compile_cuda(const std::string& source, const std::string& name,
                               const CudaCompileOptions& options);

namespace detail {
// Opens NVRTC from the first of `candidates` that loads and, when `required` is set (an explicit
// path), fails on that one alone. CudaError: "no NVRTC found: tried a (error), b (error) (set
// STAX_NVRTC_LIBRARY or pip install nvidia-cuda-nvrtc)". Exposed for tests; loads nothing into
// the process-wide state.
NvrtcLibrary probe_nvrtc(const std::vector<std::string>& candidates, bool required);
// The file name of the builtins library that goes with an NVRTC library file name and version:
// libnvrtc.so.13 + 13.0 -> libnvrtc-builtins.so.13.0; libnvrtc.alt.so.13 ->
// libnvrtc-builtins.alt.so.13.0.
std::string builtins_file_name(const std::string& nvrtc_file_name, const NvrtcVersion& version);
}  // namespace detail

}  // namespace stax::runtime::cuda
