// MKL's sgemm loaded at run time (blas_library.h says why and where from).
#include "external/blas_library.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "external/matmul.h"
#include "runtime/shared_library.h"

namespace stax::external::detail {

// MKL's Fortran-style sgemm (column-major; every argument by address, LP64 ints) and its
// service functions, as mkl_blas.h and mkl_service.h declare them. The Fortran entry because
// every MKL exports it: libmkl_rt and the MKL linked into PyTorch's libtorch_cpu (which
// exports no CBLAS). The layer setters exist in libmkl_rt only.
struct BlasLibrary::Functions {
  void (*sgemm)(const char* trans_a, const char* trans_b, const int* m, const int* n, const int* k,
                const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                const float* beta, float* c, const int* ldc);
  int (*set_num_threads_local)(int threads);
  void (*get_version_string)(char* buffer, int length);
  int (*set_threading_layer)(int layer) = nullptr;
  int (*set_interface_layer)(int layer) = nullptr;
  void (*set_dynamic)(int dynamic) = nullptr;
};

namespace {

constexpr int kThreadingGnu = 3;   // MKL_THREADING_GNU
constexpr int kInterfaceLp64 = 0;  // MKL_INTERFACE_LP64

std::mutex& path_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::string& configured_path() {
  static std::string path;
  return path;
}

struct Loaded {
  std::unique_ptr<runtime::SharedLibrary> library;
  BlasLibrary::Functions functions{};
  std::unique_ptr<BlasLibrary> blas;
  std::string why;
};

// Opens the first candidate that loads; the reasons of those that did not, joined.
std::unique_ptr<runtime::SharedLibrary> open_first(const std::vector<std::string>& candidates,
                                                   std::string* why) {
  std::string reasons;
  for (const std::string& candidate : candidates) {
    try {
      return std::make_unique<runtime::SharedLibrary>(candidate);
    } catch (const std::exception& e) {
      reasons += (reasons.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  *why = "no MKL found (" + reasons + ")";
  return nullptr;
}

}  // namespace

const BlasLibrary* blas_library(std::string* why) {
  static Loaded* loaded = [] {
    auto* result = new Loaded;  // kept for the process: MKL's threads outlive any scope
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("STAX_BLAS_LIBRARY"); env != nullptr) {
      if (std::string(env) == "none") {
        result->why = "turned off (STAX_BLAS_LIBRARY=none)";
        return result;
      }
      candidates.push_back(env);
    } else {
      std::lock_guard<std::mutex> lock(path_mutex());
      if (!configured_path().empty()) candidates.push_back(configured_path());
      candidates.push_back("libmkl_rt.so.3");
      candidates.push_back("libmkl_rt.so.2");
    }
    // MKL's GNU threading layer calls libgomp without naming it as a dependency: the libgomp
    // the process already runs on must be visible to it (a Python extension's dependencies
    // are loaded privately).
    if (void* gomp = ::dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
        gomp == nullptr) {
      result->why = "libgomp.so.1 is not loaded in this process, so MKL cannot share its threads";
      return result;
    }
    result->library = open_first(candidates, &result->why);
    if (!result->library) return result;
    BlasLibrary::Functions& f = result->functions;
    const runtime::SharedLibrary& lib = *result->library;
    try {
      f.sgemm = lib.function<decltype(f.sgemm)>("sgemm_");
      f.set_num_threads_local =
          lib.function<decltype(f.set_num_threads_local)>("MKL_Set_Num_Threads_Local");
      f.get_version_string = lib.function<decltype(f.get_version_string)>("MKL_Get_Version_String");
    } catch (const std::exception& e) {
      result->why = lib.path() + " holds no MKL: " + e.what();
      return result;
    }
    std::string layer_note;
    if (lib.has_symbol("MKL_Set_Threading_Layer")) {
      // MKL's single dynamic library: its layers are chosen at run time, before any other
      // call (once MKL has run, they are fixed).
      f.set_threading_layer =
          lib.function<decltype(f.set_threading_layer)>("MKL_Set_Threading_Layer");
      f.set_interface_layer =
          lib.function<decltype(f.set_interface_layer)>("MKL_Set_Interface_Layer");
      f.set_dynamic = lib.function<decltype(f.set_dynamic)>("MKL_Set_Dynamic");
      f.set_interface_layer(kInterfaceLp64);
      if (const int layer = f.set_threading_layer(kThreadingGnu); layer != kThreadingGnu) {
        result->why = lib.path() + " runs on another OpenMP layer (" + std::to_string(layer) +
                      ") than the process's libgomp: loaded before Stax with other settings";
        return result;
      }
      // The thread count asked for, as eager's MKL calls run (MKL_VERBOSE: Dyn:0).
      f.set_dynamic(0);
      layer_note = "its GNU OpenMP layer: the process's libgomp";
    } else {
      // An MKL linked into another library (PyTorch's): its threading is fixed at link time.
      // It is the process's libgomp only if the OpenMP it calls resolves there.
      void* gomp = ::dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
      void* own =
          lib.has_symbol("omp_get_max_threads") ? lib.symbol("omp_get_max_threads") : nullptr;
      const bool shared =
          gomp != nullptr && own != nullptr && own == ::dlsym(gomp, "omp_get_max_threads");
      if (gomp != nullptr) ::dlclose(gomp);
      if (!shared) {
        result->why = "the MKL in " + lib.path() +
                      " does not run on the process's libgomp (its OpenMP resolves elsewhere)";
        return result;
      }
      layer_note = "linked to the process's libgomp";
    }
    char version[256] = {};
    f.get_version_string(version, sizeof version - 1);
    std::string description(version);
    // "... Version 2026.2-Product Build 20260915 for Intel(R) 64 architecture applications":
    // the version is what a reader needs.
    if (const size_t product = description.find("Product Build"); product != std::string::npos) {
      description.resize(product);
      while (!description.empty() && (description.back() == '-' || description.back() == ' ')) {
        description.pop_back();
      }
    }
    description += " (" + lib.path() + ", " + layer_note + ")";
    result->blas.reset(new BlasLibrary(&result->functions, description));
    return result;
  }();
  if (why != nullptr) *why = loaded->why;
  return loaded->blas.get();
}

bool BlasLibrary::fits(int64_t value) {
  return value >= 0 && value <= INT_MAX;
}

void BlasLibrary::sgemm(bool a_transposed, bool b_transposed, int64_t m, int64_t n, int64_t k,
                        float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                        float beta, float* c, int64_t ldc, int threads) const {
  for (int64_t value : {m, n, k, lda, ldb, ldc}) {
    if (!fits(value)) {
      throw std::invalid_argument("sgemm: a size or leading dimension above MKL's 32-bit range");
    }
  }
  // Row-major c = op(a) op(b) is column-major c^T = op(b)^T op(a)^T: the Fortran call takes
  // b first, and each matrix as stored is its transpose in column-major terms.
  const char trans_a = a_transposed ? 'T' : 'N', trans_b = b_transposed ? 'T' : 'N';
  const int rows = static_cast<int>(n), cols = static_cast<int>(m), depth = static_cast<int>(k);
  const int ld_b = static_cast<int>(ldb), ld_a = static_cast<int>(lda),
            ld_c = static_cast<int>(ldc);
  // Per call and per calling thread: the caller's count, restored after.
  const int previous = functions_->set_num_threads_local(threads);
  functions_->sgemm(&trans_b, &trans_a, &rows, &cols, &depth, &alpha, b, &ld_b, a, &ld_a, &beta, c,
                    &ld_c);
  functions_->set_num_threads_local(previous);
}

}  // namespace stax::external::detail

namespace stax::external {

std::string blas_description(std::string* why) {
  const detail::BlasLibrary* blas = detail::blas_library(why);
  return blas != nullptr ? blas->description() : "";
}

void set_blas_library_path(const std::string& path) {
  std::lock_guard<std::mutex> lock(detail::path_mutex());
  detail::configured_path() = path;
}

}  // namespace stax::external
