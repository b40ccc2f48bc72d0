// The host side of a CUDA program (issue 35, point 4; the design's launch plan): no host C++ is
// compiled for the GPU. A plan lists the program's buffers (inputs and outputs the caller
// gives, intermediates the plan allocates) and, in order, each kernel's launch: its function,
// its arguments (buffers and size symbols) and its shape (rows over the size symbols, rows per
// block, threads per block, a cap on the grid). codegen/cuda_codegen.cpp makes it from the
// schedule; LoadedCudaProgram resolves the pointers once per call and issues one cuLaunchKernel
// per launch on the caller's stream.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "index/expr.h"
#include "ir/dtype.h"
#include "runtime/cuda/driver_api.h"

namespace stax::runtime::cuda {

struct PlanBuffer {
  enum class Role : uint8_t { Input, Output, Intermediate };
  std::string name;
  Role role = Role::Intermediate;
  int position = 0;  // among the inputs or the outputs
  DType dtype = DType::Float32;
  index::Expr bytes = index::Expr(0);  // over the size symbols
};

struct PlanArg {
  bool symbol = false;
  int buffer = -1;          // index into LaunchPlan::buffers
  std::string symbol_name;  // a size symbol's value, as a 64-bit integer
};

struct PlanLaunch {
  std::string function;
  std::vector<PlanArg> args;
  int block = 1;
  int rows_per_block = 1;
  index::Expr rows = index::Expr(0);
  int64_t max_blocks = 1;
};

struct LaunchPlan {
  std::vector<PlanBuffer> buffers;
  std::vector<PlanLaunch> launches;
  int num_inputs = 0;
  int num_outputs = 0;
};

// The blocks of `launch` at these symbol values: ceil(rows / rows_per_block), at most
// max_blocks (the kernels stride over the rest), at least 1.
unsigned grid_blocks(const PlanLaunch& launch, const std::map<std::string, int64_t>& symbols);

// A plan with its module loaded in the current context.
class LoadedCudaProgram {
 public:
  LoadedCudaProgram(LaunchPlan plan, CudaModule module);
  // Runs every launch on `stream` with the caller's device pointers, in the plan's input and
  // output order. Intermediates are allocated for the call (cuMemAlloc) and freed after the
  // stream is synchronized. std::invalid_argument on a wrong count; CudaError from the driver.
  void run(const std::vector<DevicePtr>& inputs, const std::vector<DevicePtr>& outputs,
           const std::map<std::string, int64_t>& symbols, StreamHandle stream) const;
  const LaunchPlan& plan() const { return plan_; }

 private:
  LaunchPlan plan_;
  CudaModule module_;
  std::vector<CudaFunction> functions_;
};

}  // namespace stax::runtime::cuda
