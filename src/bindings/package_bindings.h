// stax._C's ahead-of-time packages (package/package.h): writing a compiled region, loading a
// package and handing its weights to PyTorch without copies.
#pragma once

#include <nanobind/nanobind.h>

namespace stax::bindings {

// Adds save_package, load_package, the Package class and the PackageError exception (a
// RuntimeError) to the module.
void bind_packages(nanobind::module_& m);

}  // namespace stax::bindings
