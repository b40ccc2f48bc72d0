// Writing and loading ahead-of-time packages (package.h). Loading checks, in order: the
// container (package_file.h), the Stax build, the CPU's instructions, then reads the manifest
// and loads the kernels; each refusal names what differs.
#include "package/package.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "ir/text_format.h"
#include "package/package_file.h"
#include "package/program_json.h"
#include "package/safetensors.h"
#include "runtime/jit.h"
#include "runtime/simd.h"

namespace stax {

// Defined in the build_identity.cpp the build writes (cmake/build_identity.cmake).
extern const char* const kStaxSourceDigest;

using nlohmann::json;
using package::PackageError;

namespace {

constexpr int kManifestFormat = 1;
constexpr const char* kProgramSection = "program.so";
constexpr const char* kWeightsSection = "weights.safetensors";

// The instruction extensions the JIT adds beyond the SIMD level's baseline
// (runtime::simd_compiler_flags with host extensions), as the flags it passed.
std::vector<std::string> extension_flags(runtime::SimdLevel level) {
  const std::vector<std::string> all = runtime::simd_compiler_flags(level, true);
  const std::vector<std::string> base = runtime::simd_compiler_flags(level, false);
  std::vector<std::string> out;
  for (const std::string& f : all) {
    if (std::find(base.begin(), base.end(), f) == base.end()) out.push_back(f);
  }
  return out;
}

// Whether this CPU runs code built with `flag` (one of extension_flags' answers); a flag this
// build does not know is refused.
bool cpu_runs_extension(const std::string& flag) {
  if (flag == "-mavx512bf16") return runtime::cpu_has_avx512_bf16();
  return false;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PackageError("cannot read the compiled program '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Loads the shared object's bytes through an anonymous file (no file left behind, none
// shared with another process). A library the object needs that the loader cannot find is
// named in the PackageError.
std::shared_ptr<runtime::SharedLibrary> load_program(const std::string& package_path,
                                                     const char* data, size_t bytes) {
  const int fd = ::memfd_create("stax-package", MFD_CLOEXEC);
  if (fd < 0)
    throw PackageError("cannot load package '" + package_path +
                       "': memfd_create: " + std::strerror(errno));
  size_t written = 0;
  while (written < bytes) {
    const ssize_t n = ::write(fd, data + written, bytes - written);
    if (n <= 0) {
      ::close(fd);
      throw PackageError("cannot load package '" + package_path + "': writing its program failed");
    }
    written += static_cast<size_t>(n);
  }
  // The descriptor stays open while the library is loaded: the loader finds a loaded object
  // by its path first, so a number closed and reused for another package would be taken for
  // this one.
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::shared_ptr<runtime::SharedLibrary> library;
  try {
    library = std::shared_ptr<runtime::SharedLibrary>(new runtime::SharedLibrary(path),
                                                      [fd](runtime::SharedLibrary* l) {
                                                        delete l;
                                                        ::close(fd);
                                                      });
  } catch (const std::exception& e) {
    ::close(fd);
    std::string why = e.what();
    const size_t so = why.find(".so");
    const bool missing = why.find("cannot open shared object file") != std::string::npos;
    throw PackageError("cannot load package '" + package_path + "': " +
                       (missing && so != std::string::npos
                            ? "a library its kernels need is missing (" + why +
                                  "; on Debian: apt install libsleef3 libgomp1)"
                            : why));
  }
  return library;
}

bool same_type(const ir::TensorType& type, const Tensor& t) {
  return type.dtype == t.dtype() && type.sizes == t.sizes();
}

}  // namespace

std::string stax_build_identity() {
  return runtime::stax_version() + "+" + std::string(kStaxSourceDigest).substr(0, 16);
}

void save_package(const CompiledGraph& compiled, const ir::Graph& graph, const std::string& path,
                  const PackageSaveOptions& options) {
  if (compiled.is_symbolic() && !compiled.takes_every_size()) {
    throw PackageError("cannot package graph '" + graph.name() +
                       "': no one program takes every size of its symbols (" +
                       compiled.per_size_reason() + "); bind its sizes to package it");
  }
  const Compilation& runtime_half = compiled.runtime_compilation();
  const codegen::GeneratedModule& module = runtime_half.module;
  std::map<std::string, Tensor> weights;
  json bound = json::object();
  for (const PackagedWeight& w : options.weights) {
    const auto& names = compiled.input_names();
    const auto it = std::find(names.begin(), names.end(), w.input);
    if (it == names.end()) {
      throw PackageError("cannot package graph '" + graph.name() + "': weight '" + w.name +
                         "' is bound to input '" + w.input + "', which the graph does not have");
    }
    const ir::TensorType& type = compiled.input_types()[static_cast<size_t>(it - names.begin())];
    const lowering::InputBuffer& in =
        runtime_half.lowered.inputs[static_cast<size_t>(it - names.begin())];
    bool fixed = true;
    for (const index::Expr& s : in.sizes) fixed = fixed && s.is_constant();
    if (!w.value.defined() || !same_type(type, w.value) || !fixed ||
        type.strides != ir::contiguous_strides(type.sizes)) {
      throw PackageError("cannot package graph '" + graph.name() + "': weight '" + w.name +
                         "' does not match input '" + w.input + "' (" + ir::format_type(type) +
                         ", of fixed sizes, contiguous)");
    }
    if (bound.contains(w.input) || weights.count(w.name) != 0) {
      throw PackageError("cannot package graph '" + graph.name() + "': input '" + w.input +
                         "' or weight name '" + w.name + "' is given twice");
    }
    bound[w.input] = w.name;
    weights.emplace(w.name, w.value);
  }
  const std::string library = read_file(compiled.library_path());
  json manifest = {
      {"format", kManifestFormat},
      {"stax", {{"version", runtime::stax_version()}, {"build", stax_build_identity()}}},
      {"cpu",
       {{"simd", std::string(runtime::simd_level_name(module.options.simd))},
        {"extensions", extension_flags(module.options.simd)}}},
      {"graph", ir::print_graph(graph)},
      {"program", package::runtime_compilation_to_json(runtime_half)},
      {"weights", bound},
      {"metadata", options.metadata},
  };
  std::vector<std::pair<std::string, std::string_view>> sections = {{kProgramSection, library}};
  std::string weight_bytes;
  if (!weights.empty()) {
    weight_bytes = package::safetensors_bytes(weights);
    sections.emplace_back(kWeightsSection, weight_bytes);
  }
  package::write_package_file(path, std::move(manifest), sections);
}

Package Package::load(const std::string& path, const PackageLoadOptions& options) {
  auto file = std::make_shared<const package::PackageFile>(path);
  const json& m = file->manifest();
  const auto fail = [&](const std::string& why) -> void {
    throw PackageError("Stax package '" + path + "': " + why);
  };
  try {
    if (m.at("format").get<int>() != kManifestFormat) {
      fail("manifest format " + m.at("format").dump() + ", this Stax reads format " +
           std::to_string(kManifestFormat));
    }
    const std::string build = m.at("stax").at("build").get<std::string>();
    if (build != stax_build_identity()) {
      fail("written by Stax " + build + ", this is Stax " + stax_build_identity() +
           "; a package runs only on the Stax build that wrote it: export it again");
    }
    const std::string simd = m.at("cpu").at("simd").get<std::string>();
    const std::optional<runtime::SimdLevel> level = runtime::parse_simd_level(simd);
    if (!level) fail("unknown SIMD level '" + simd + "'");
    if (!runtime::cpu_supports(*level)) {
      fail("its kernels are built for " + simd + ", which this CPU does not support (it runs " +
           std::string(runtime::simd_level_name(runtime::detect_simd_level())) +
           "): export it on a CPU of this kind");
    }
    for (const std::string& flag : m.at("cpu").at("extensions").get<std::vector<std::string>>()) {
      if (!cpu_runs_extension(flag)) {
        fail("its kernels use instructions (" + flag +
             ") that this CPU does not have: export it on a CPU of this kind");
      }
    }
  } catch (const json::exception& e) {
    fail(std::string("malformed manifest: ") + e.what());
  }

  Package out;
  out.file_ = file;
  std::shared_ptr<Compilation> runtime_half =
      package::runtime_compilation_from_json(m.at("program"));
  std::optional<ir::Graph> graph;
  try {
    out.graph_text_ = m.at("graph").get<std::string>();
    out.metadata_ = m.at("metadata").get<std::map<std::string, std::string>>();
    if (!runtime_half->module.symbols.empty()) graph = ir::parse_graph(out.graph_text_, path);
  } catch (const json::exception& e) {
    fail(std::string("malformed manifest: ") + e.what());
  } catch (const std::exception& e) {
    fail(std::string("its graph does not parse: ") + e.what());
  }
  const auto [so, so_bytes] = file->section(kProgramSection);
  std::shared_ptr<runtime::SharedLibrary> library = load_program(path, so, so_bytes);
  CompileOptions compile_options;
  compile_options.cache_dir = options.cache_dir;
  compile_options.measure_matmul_weights = options.measure_matmul_weights;
  out.program_ = std::make_shared<const CompiledGraph>(
      load_compiled(std::move(runtime_half), std::move(library), path + " (program.so)",
                    graph ? &*graph : nullptr, compile_options));

  // The weights, read in place from the mapping; a tensor keeps the mapping alive.
  std::map<std::string, package::SafetensorsEntry> entries;
  char* weights_base = nullptr;
  if (file->has_section(kWeightsSection)) {
    const auto [data, bytes] = file->section(kWeightsSection);
    weights_base = data;
    entries = package::read_safetensors(std::string_view(data, bytes), path + " (weights)");
  }
  const json& bound = m.at("weights");
  const CompiledGraph& program = *out.program_;
  out.bound_.resize(program.input_names().size());
  for (size_t i = 0; i < program.input_names().size(); ++i) {
    const std::string& input = program.input_names()[i];
    if (!bound.contains(input)) {
      out.input_names_.push_back(input);
      out.input_types_.push_back(program.input_types()[i]);
      continue;
    }
    const std::string name = bound.at(input).get<std::string>();
    const auto it = entries.find(name);
    if (it == entries.end()) fail("weight '" + name + "' of input '" + input + "' is missing");
    const ir::TensorType& type = program.input_types()[i];
    if (it->second.dtype != type.dtype || it->second.sizes != type.sizes) {
      fail("weight '" + name + "' does not match input '" + input + "' (" + ir::format_type(type) +
           ")");
    }
    std::shared_ptr<const package::PackageFile> keep = file;
    auto storage = std::shared_ptr<Storage>(
        new Storage(weights_base + it->second.offset, it->second.bytes, [](void*) {}),
        [keep](Storage* s) { delete s; });
    out.bound_[i] =
        Tensor(std::move(storage), type.dtype, type.sizes, ir::contiguous_strides(type.sizes), 0);
  }
  return out;
}

std::vector<Tensor> Package::run(const std::vector<Tensor>& inputs,
                                 const RunOptions& options) const {
  if (inputs.size() != input_names_.size()) {
    throw InputError("package expects " + std::to_string(input_names_.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  }
  std::vector<Tensor> all;
  all.reserve(bound_.size());
  size_t next = 0;
  for (const Tensor& w : bound_) all.push_back(w.defined() ? w : inputs[next++]);
  // The machine that wrote the package may have had other cores: by default, this one's.
  RunOptions here = options;
  if (here.num_threads == 0) here.num_threads = std::max(1u, std::thread::hardware_concurrency());
  return program_->run(all, here);
}

std::vector<std::string> Package::weight_inputs() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < bound_.size(); ++i) {
    if (bound_[i].defined()) out.push_back(program_->input_names()[i]);
  }
  return out;
}

}  // namespace stax
