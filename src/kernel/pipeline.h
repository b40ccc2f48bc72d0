// Lowering of one fused node to its final kernel IR: the build and the passes in order
// (pipeline.cpp lists them in one function), each verified and loggable.
#pragma once

#include <functional>
#include <string>

#include "kernel/kernel_ir.h"
#include "kernel/passes.h"
#include "scheduler/schedule.h"

namespace stax::kernel {

struct PipelineOptions {
  TargetOptions target;
  // Run the verifier after every pass (default: debug builds or STAX_VERIFY_KERNEL_IR=1).
  bool verify = false;
  // Called after every pass with the pass name and the kernel (explain --ir, STAX_LOGS=ir).
  std::function<void(const std::string& pass, const Kernel& kernel)> after_pass;
};

// `next_error_code` numbers the index checks across a module (ir_builder.h).
Kernel lower_fused_node(const scheduler::Schedule& schedule, const scheduler::FusedNode& fused,
                        const PipelineOptions& options, int& next_error_code);

// "vectorized(W=16) over x1", "tiled(T=64) vectorized(W=16) over x1", "scalar, split across
// threads", ...: one per nest, the forms explain prints.
std::vector<std::string> nest_form_names(const Kernel& kernel);

// The kernel IR as explain --ir prints it after `pass`: a header with the decisions taken so
// far, then the IR as C++.
std::string describe_after_pass(const std::string& pass, const Kernel& kernel);

}  // namespace stax::kernel
