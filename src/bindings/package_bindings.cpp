// stax._C's package functions (package_bindings.h). The Python side (python/stax/aot.py)
// exports and translates the model; this writes what it compiled and loads it back.
#include "bindings/package_bindings.h"

#include <dlpack/dlpack.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>

#include "bindings/output_pool.h"
#include "ir/graph.h"
#include "package/package.h"
#include "package/program_json.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace stax::bindings {
namespace {

PyObject* package_error_type = nullptr;

// What a weight's capsule owns: a tensor sharing the package's storage (which keeps the
// package's mapping alive) and the arrays its DLTensor points into.
struct WeightCapsule {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

void delete_weight(DLManagedTensor* managed) {
  delete static_cast<WeightCapsule*>(managed->manager_ctx);
}

void delete_unused(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

nb::object weight_capsule(const Tensor& t) {
  auto owned = std::make_unique<WeightCapsule>();
  owned->tensor = t;
  owned->sizes = t.sizes();
  owned->strides = t.strides();
  DLTensor& dl = owned->managed.dl_tensor;
  dl.data = t.data();
  dl.device = {kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(owned->sizes.size());
  dl.dtype = dlpack_type(t.dtype());  // bool as uint8: the Python side views it as bool
  dl.shape = owned->sizes.data();
  dl.strides = owned->strides.data();
  owned->managed.manager_ctx = owned.get();
  owned->managed.deleter = delete_weight;
  PyObject* capsule = PyCapsule_New(&owned->managed, "dltensor", delete_unused);
  if (capsule == nullptr) throw nb::python_error();
  owned.release();
  return nb::steal(capsule);
}

void translate_package_error(const std::exception_ptr& error, void*) {
  try {
    std::rethrow_exception(error);
  } catch (const package::PackageError& e) {
    PyErr_SetString(package_error_type, e.what());
  }
}

// (graph input, weight name, data pointer, dtype, sizes) of a contiguous weight the caller
// owns during the call.
using WeightInfo =
    std::tuple<std::string, std::string, uintptr_t, std::string, std::vector<int64_t>>;

void save(const CompiledGraph& compiled, const std::string& text, const std::string& filename,
          const std::string& path, const std::vector<WeightInfo>& weights,
          const std::map<std::string, std::string>& metadata) {
  PackageSaveOptions options;
  options.metadata = metadata;
  for (const auto& [input, name, address, dtype_text, sizes] : weights) {
    const std::optional<DType> dtype = parse_dtype(dtype_text);
    if (!dtype) throw std::invalid_argument("save_package: unknown dtype " + dtype_text);
    Tensor value = Tensor::empty(*dtype, sizes);
    const size_t bytes = static_cast<size_t>(value.numel()) * dtype_size(*dtype);
    if (bytes > 0) std::memcpy(value.data(), reinterpret_cast<const void*>(address), bytes);
    options.weights.push_back({input, name, std::move(value)});
  }
  const ir::Graph graph = ir::parse_graph(text, filename);
  nb::gil_scoped_release release;
  save_package(compiled, graph, path, options);
}

}  // namespace

void bind_packages(nb::module_& m) {
  package_error_type = PyErr_NewException("stax._C.PackageError", PyExc_RuntimeError, nullptr);
  if (package_error_type == nullptr) throw nb::python_error();
  m.attr("PackageError") = nb::borrow(package_error_type);
  nb::register_exception_translator(&translate_package_error);

  m.def("save_package", &save, "compiled"_a, "text"_a, "filename"_a, "path"_a, "weights"_a,
        "metadata"_a,
        "Writes a compiled graph (compiled from `text`) as an ahead-of-time package; weights: "
        "(graph input, name, data pointer, dtype, sizes) of contiguous tensors the package "
        "keeps and binds to those inputs. PackageError when it cannot be packaged.");
  m.def("build_identity", &stax_build_identity,
        "the Stax build a package must have been written by to load here");

  nb::class_<Package>(m, "Package", "An ahead-of-time package, loaded")
      .def_prop_ro(
          "program", [](const Package& p) -> const CompiledGraph& { return p.program(); },
          nb::rv_policy::reference_internal, "the compiled graph (stax._C.Compiled)")
      .def_prop_ro("graph_text", &Package::graph_text)
      .def_prop_ro("metadata", &Package::metadata)
      .def(
          "weights",
          [](const Package& p) {
            std::vector<nb::object> out;
            for (const Tensor& t : p.bound_inputs()) {
              out.push_back(t.defined() ? weight_capsule(t) : nb::none());
            }
            return out;
          },
          "per graph input: a DLPack capsule over the weight the package binds to it (read in "
          "place from the package, copy-on-write), or None for an input the caller passes");

  m.def(
      "load_package",
      [](const std::string& path, bool measure_matmul_weights, const std::string& cache_dir) {
        PackageLoadOptions options;
        options.measure_matmul_weights = measure_matmul_weights;
        options.cache_dir = cache_dir;
        nb::gil_scoped_release release;
        return std::make_shared<Package>(Package::load(path, options));
      },
      "path"_a, nb::kw_only(), "measure_matmul_weights"_a = true, "cache_dir"_a = "",
      "Loads a package without compiling: PackageError naming what is wrong with it (another "
      "Stax build, another CPU, truncated or damaged, a missing library).");
}

}  // namespace stax::bindings
