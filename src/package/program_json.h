// What a loaded program reads at run time, as JSON (issue 34, point 1): the manifest of an
// ahead-of-time package holds it beside the compiled library, so that loading rebuilds the
// program's library plans, its output layouts and its size checks without lowering,
// scheduling or compiling anything. Every reader validates what it reads (kinds, enum ranges,
// names) and throws PackageError naming the field: a manifest passes its checksum before it
// is read, so a failure here means a writer of another format, never a torn file.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "driver/compiler.h"

namespace stax::package {

// A package that cannot be loaded: truncated, tampered with, from another Stax build, for
// another CPU, or missing a runtime dependency. The message names what differs.
class PackageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Index expressions as their canonical polynomial: {"c": constant, "t": [[coeff, [atom, ...]],
// ...]}, an atom a variable's name or {"div"|"mod": dividend, "by": divisor}.
nlohmann::json expr_to_json(const index::Expr& e);
index::Expr expr_from_json(const nlohmann::json& j);

nlohmann::json symbols_to_json(const index::SymbolTable& symbols);
index::SymbolTable symbols_from_json(const nlohmann::json& j);

// What CompiledGraph keeps of a compilation without its analysis (CompileOptions::
// keep_analysis = false): the inputs' and outputs' layouts, the entry point, the target the
// kernels were built for, and every library call site.
nlohmann::json runtime_compilation_to_json(const Compilation& compilation);
std::shared_ptr<Compilation> runtime_compilation_from_json(const nlohmann::json& j);

}  // namespace stax::package
