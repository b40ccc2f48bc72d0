// The CUDA module of a scheduled graph (issue 35): one CUDA kernel per fused node, through
// the CUDA pass list (kernel/cuda/cuda_pipeline.h), printed into one source (one NVRTC
// program per graph), with each kernel's launch shape for the launch plan. A fused node the
// backend has no form for yet keeps the reason instead of a kernel, for explain; compiling
// such a module is refused naming it.
#pragma once

#include <string>
#include <vector>

#include "kernel/cuda/cuda_printer.h"
#include "runtime/cuda/launch_plan.h"
#include "kernel/kernel_ir.h"
#include "scheduler/schedule.h"
#include "target/target.h"

namespace stax::codegen {

struct CudaKernel {
  std::string fused_node;  // op0_op1
  std::string function;    // stax_op0_op1 (empty when refused)
  std::string refused;     // why there is no kernel
  std::vector<kernel::cuda::KernelParam> params;
  kernel::GpuDecision launch;
  std::vector<lowering::SourceOp> ops;
};

struct CudaModule {
  std::string arch;    // sm_90
  std::string source;  // every kernel, after #include "stax_cuda.cuh"
  std::vector<CudaKernel> kernels;
  std::vector<std::string> ir_log;  // with record_ir: the kernel IR after each pass
  // The host side: buffers and launches (runtime/cuda/launch_plan.h); empty with
  // `plan_refused` saying why when the program has no plan yet (an output that is an input or
  // a view, a kernel without a form).
  runtime::cuda::LaunchPlan plan;
  std::string plan_refused;
  bool complete() const;  // every fused node has a kernel and the program a plan
};

CudaModule generate_cuda(const scheduler::Schedule& schedule, const target::Target& target,
                         bool record_ir = false);

}  // namespace stax::codegen
