// Ahead-of-time packages (issue 34, point 1): a compiled graph written to one file that a
// process without Python, libtorch or a C++ compiler loads and runs. The file
// (package_file.h) holds the compiled kernels and host program (the shared object the JIT
// built), the run-time half of the compilation (program_json.h: the inputs' and outputs'
// layouts, the library call sites whose plans loading rebuilds), the graph text for a program
// over size symbols (each call's sizes are checked against its facts), and optionally weights
// (safetensors.h) bound to some graph inputs so that callers pass only the others.
//
// Loading refuses, naming what differs, a package written by another Stax build, one whose
// kernels use instructions this CPU lacks, one truncated or damaged, and one whose kernels
// need a library the loader cannot find; it never runs code it did not check.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "driver/compiler.h"

namespace stax {

namespace package {
class PackageFile;
}

// A graph input whose value the package keeps (a model's parameter or buffer).
struct PackagedWeight {
  std::string input;  // the graph input it is bound to
  std::string name;   // its name in the weights (a parameter's qualified name)
  Tensor value;
};

struct PackageSaveOptions {
  std::vector<PackagedWeight> weights;
  // Kept as given and shown by `stax explain`-like tools (the model, the exporter).
  std::map<std::string, std::string> metadata;
};

struct PackageLoadOptions {
  // How library matrix products hand B over, and where they keep what they measure (the
  // kernel cache's library-plans/ by default): measured once per machine, as compile does;
  // false keeps B in place unmeasured (no measurement at the first load on a machine).
  bool measure_matmul_weights = true;
  std::string cache_dir;
};

// Writes `compiled` (compiled from `graph`) to `path`. Throws package::PackageError when the
// program cannot be packaged: a graph over size symbols that one program does not serve
// (compiled per size: its reason is named), a weight that names no input or does not match
// its type, or a file that cannot be written.
void save_package(const CompiledGraph& compiled, const ir::Graph& graph, const std::string& path,
                  const PackageSaveOptions& options = {});

class Package {
 public:
  // Throws package::PackageError naming what is wrong (see above).
  static Package load(const std::string& path, const PackageLoadOptions& options = {});

  // Runs the program on the graph inputs the package does not keep, in graph order
  // (input_names()), on RunOptions::num_threads threads (0: this machine's hardware threads,
  // not the count of the machine that wrote the package); InputError for a wrong count,
  // dtype, size or stride, or sizes that break the size symbols' facts.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options = {}) const;

  // The inputs a caller passes, in order, and their types (at the size symbols' hints; the
  // sizes of a symbolic input may vary as its facts allow).
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<ir::TensorType>& input_types() const { return input_types_; }
  const CompiledGraph& program() const { return *program_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The graph text the package was compiled from.
  const std::string& graph_text() const { return graph_text_; }
  // The inputs the package binds to its weights, by graph input name.
  std::vector<std::string> weight_inputs() const;
  // Per graph input (program().input_names()): the weight bound to it, read in place from the
  // package, or an undefined tensor for an input the caller passes.
  const std::vector<Tensor>& bound_inputs() const { return bound_; }

 private:
  std::shared_ptr<const package::PackageFile> file_;
  std::shared_ptr<const CompiledGraph> program_;
  std::vector<std::string> input_names_;
  std::vector<ir::TensorType> input_types_;
  // Per graph input: the weight bound to it, or an undefined tensor for one the caller passes.
  std::vector<Tensor> bound_;
  std::map<std::string, std::string> metadata_;
  std::string graph_text_;
};

// The Stax build this library is: its version and a digest of its sources, which a package
// must match to load.
std::string stax_build_identity();

}  // namespace stax
