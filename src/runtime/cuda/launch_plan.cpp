// Executes a CUDA program's launch plan (see launch_plan.h).
#include "runtime/cuda/launch_plan.h"

#include <algorithm>
#include <stdexcept>

namespace stax::runtime::cuda {

unsigned grid_blocks(const PlanLaunch& launch, const std::map<std::string, int64_t>& symbols) {
  const int64_t rows = index::evaluate(launch.rows, symbols);
  const int64_t per_block = std::max(1, launch.rows_per_block);
  const int64_t blocks = (rows + per_block - 1) / per_block;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, launch.max_blocks));
}

LoadedCudaProgram::LoadedCudaProgram(LaunchPlan plan, CudaModule module)
    : plan_(std::move(plan)), module_(std::move(module)) {
  for (const PlanLaunch& l : plan_.launches) functions_.push_back(module_.function(l.function));
}

void LoadedCudaProgram::run(const std::vector<DevicePtr>& inputs,
                            const std::vector<DevicePtr>& outputs,
                            const std::map<std::string, int64_t>& symbols,
                            StreamHandle stream) const {
  if (static_cast<int>(inputs.size()) != plan_.num_inputs ||
      static_cast<int>(outputs.size()) != plan_.num_outputs) {
    throw std::invalid_argument("CUDA program: expected " + std::to_string(plan_.num_inputs) +
                                " inputs and " + std::to_string(plan_.num_outputs) +
                                " outputs, got " + std::to_string(inputs.size()) + " and " +
                                std::to_string(outputs.size()));
  }
  std::vector<DevicePtr> pointers(plan_.buffers.size(), 0);
  std::vector<DeviceBuffer> intermediates;
  for (size_t b = 0; b < plan_.buffers.size(); ++b) {
    const PlanBuffer& buffer = plan_.buffers[b];
    switch (buffer.role) {
      case PlanBuffer::Role::Input:
        pointers[b] = inputs[static_cast<size_t>(buffer.position)];
        break;
      case PlanBuffer::Role::Output:
        pointers[b] = outputs[static_cast<size_t>(buffer.position)];
        break;
      case PlanBuffer::Role::Intermediate: {
        const int64_t bytes = std::max<int64_t>(1, index::evaluate(buffer.bytes, symbols));
        intermediates.emplace_back(static_cast<size_t>(bytes));
        pointers[b] = intermediates.back().get();
        break;
      }
    }
  }
  for (size_t k = 0; k < plan_.launches.size(); ++k) {
    const PlanLaunch& l = plan_.launches[k];
    std::vector<int64_t> values(l.args.size(), 0);
    std::vector<void*> args(l.args.size(), nullptr);
    for (size_t a = 0; a < l.args.size(); ++a) {
      if (l.args[a].symbol) {
        values[a] = symbols.at(l.args[a].symbol_name);
        args[a] = &values[a];
      } else {
        args[a] = &pointers[static_cast<size_t>(l.args[a].buffer)];
      }
    }
    launch(functions_[k], Dim3{grid_blocks(l, symbols), 1, 1},
           Dim3{static_cast<unsigned>(l.block), 1, 1}, 0, stream, args.data());
  }
  if (!intermediates.empty()) stream_synchronize(stream);
}

}  // namespace stax::runtime::cuda
