// The CUDA pass list over the kernel IR (issue 35, point 3), after the shared `build`:
// choose_gpu_form decides each kernel's form and launch shape (KernelDecisions::gpu, with its
// reasons); map_threads rewrites the loops into the thread mapping that form implies (GpuRows,
// GpuLanes, ThreadCombine). cuda_printer.h then only prints.
#pragma once

#include <stdexcept>
#include <string>

#include "kernel/kernel_ir.h"
#include "target/cuda_device.h"

namespace stax::kernel::cuda {

// A kernel this backend has no form for yet (an index check needing the device error word, a
// Welford or arg reduction, ...), named with the reason.
class NoCudaForm : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Pointwise: one element per thread, 256 threads per block, the grid striding over the
// elements. Row reduction: the reduction loops strided over the threads of a row — a group of
// up to 32 lanes of one warp when the row has at most 1024 elements (several rows per
// 128-thread block when it is shorter than a warp), else a 256-thread block per row — and
// combined by a warp-shuffle tree (then shared memory across warps) in a fixed order.
void choose_gpu_form(Kernel& kernel, const target::CudaDevice& device);

// The loops of the chosen form: the pointwise loops become one GpuRows loop (flattened), the
// reduction loops one GpuLanes loop, a ThreadCombine follows it for each accumulator, and
// the stores after it are written by the row's first thread.
void map_threads(Kernel& kernel);

}  // namespace stax::kernel::cuda
