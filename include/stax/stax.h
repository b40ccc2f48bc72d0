// Stax's C++ API (issue 34, point 2): what a program that compiles graphs or runs packages
// includes, with `find_package(Stax)` and `target_link_libraries(app Stax::stax)` (or
// `pkg-config --cflags --libs stax`).
//
//   Graph text in, compiled program out:
//     stax::ir::Graph graph = stax::ir::parse_graph(text, "model.stax");
//     stax::CompiledGraph program = stax::compile(graph);          // CompileOptions
//     std::vector<stax::Tensor> outputs = program.run(inputs);     // RunOptions
//   Ahead-of-time packages (written by stax.aot_compile, `stax compile` or save_package),
//   loaded without compiling:
//     stax::Package package = stax::Package::load("model.staxpkg");
//     std::vector<stax::Tensor> outputs = package.run(inputs);
//   Tensors: stax::Tensor::empty(dtype, sizes), data(), or safetensors files
//   (stax::package::load_safetensors_file / save_safetensors_file).
//
// Errors are exceptions: stax::InputError (a std::invalid_argument) for inputs that break a
// program, stax::package::PackageError for a package that cannot be loaded, ir::ParseError
// and ir::GraphError for bad graph text. The headers these include are installed under
// include/stax/internal/, which the Stax::stax target and stax.pc put on the include path;
// only the names shown here are the supported API.
#pragma once

#include "driver/compiler.h"
#include "ir/graph.h"
#include "package/package.h"
#include "package/package_file.h"
#include "package/program_json.h"
#include "package/safetensors.h"
#include "runtime/tensor.h"
