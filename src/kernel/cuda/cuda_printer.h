// Prints a kernel after the CUDA pass list (gpu_form.h) as one CUDA C++ __global__ function
// against Stax's own CUDA headers (src/runtime/kernel_include_cuda/stax_cuda.cuh): no toolkit
// header, so NVRTC compiles it with no include path but Stax's. It takes no decision: the
// form, the thread mapping, the combines and which thread stores are all in the IR.
#pragma once

#include <string>
#include <vector>

#include "kernel/kernel_ir.h"

namespace stax::kernel::cuda {

// One parameter of a kernel, in order: a buffer's pointer, or a size symbol's value.
struct KernelParam {
  std::string name;  // in_x, buf0, s0
  bool buffer = true;
  bool written = false;
  bool is_input = false;  // a graph input's buffer (pointer named in_<buffer>)
  std::string buffer_name;
  DType dtype = DType::Float32;  // the element type in memory
};

// The kernel's parameters: its buffers in name order, then the size symbols in name order.
std::vector<KernelParam> kernel_params(const Kernel& kernel);

// The __global__ function `stax_<kernel name>`, preceded by the comment naming its ops.
std::string print_cuda_kernel(const Kernel& kernel);

// The CUDA spelling of a dtype in memory (float, stax::bf16, stax::i64, ...).
std::string cuda_storage_type(DType dtype);

}  // namespace stax::kernel::cuda
