// Prints a host program as one C++ translation unit: the kernel functions (their loops printed
// by kernel/printer.h) and the wrapper `stax_graph_run` (Listing 8.1). It takes no decision:
// every choice it prints was made by a pass of program/pipeline.cpp.
#pragma once

#include <string>

#include "program/host_program.h"
#include "runtime/simd.h"

namespace stax::program {

std::string print_host_program(const HostProgram& program, runtime::SimdLevel simd,
                               int num_threads);

}  // namespace stax::program
