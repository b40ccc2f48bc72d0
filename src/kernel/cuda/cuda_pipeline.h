// Lowering of one fused node to a CUDA kernel (issue 35, point 3): the shared build, then the
// CUDA passes in order (cuda_pipeline.cpp lists them in one function, as kernel/pipeline.cpp
// does for the CPU), each verified and loggable.
#pragma once

#include <functional>
#include <string>

#include "kernel/kernel_ir.h"
#include "scheduler/schedule.h"
#include "target/cuda_device.h"

namespace stax::kernel::cuda {

struct CudaPipelineOptions {
  target::CudaDevice device;
  // Called after every pass with the pass name and the kernel (explain --ir, STAX_LOGS=ir).
  std::function<void(const std::string& pass, const Kernel& kernel)> after_pass;
};

Kernel lower_fused_node_cuda(const scheduler::Schedule& schedule, const scheduler::FusedNode& fused,
                             const CudaPipelineOptions& options, int& next_error_code);

// The structural rules of a kernel after map_threads; std::logic_error naming the rule broken:
// each nest is one GpuRows loop; a Reduce is inside a GpuLanes loop of a row of more than one
// thread, or in a row of one; each accumulator a GpuLanes loop updates is combined right
// after it; stores after a row's combines are its first thread's.
void verify_cuda(const Kernel& kernel, const std::string& after_pass);

}  // namespace stax::kernel::cuda
