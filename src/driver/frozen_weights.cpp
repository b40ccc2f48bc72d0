// Which library calls may keep their weights packed (frozen_weights.h).
#include "driver/frozen_weights.h"

#include <algorithm>

#include "index/shape_exprs.h"

namespace stax::driver {

std::vector<WeightSite> weight_sites(const Compilation& compilation) {
  const lowering::LoweredGraph& lowered = compilation.lowered;
  std::vector<WeightSite> sites;
  const std::vector<program::ExternalSite>& externals = compilation.module.externals;
  for (size_t k = 0; k < externals.size(); ++k) {
    const lowering::ExternalCall& call = *externals[k].call;
    if (!call.convolution) continue;
    using Direction = lowering::ConvolutionWindow::Direction;
    if (call.convolution->direction == Direction::BackwardWeight) continue;  // writes them
    WeightSite w;
    w.site = k;
    w.source = externals[k].source;
    if (call.convolution->direction == Direction::BackwardInput) {
      // Backward graphs run in training, where an optimizer changes the weights every step.
      w.why_not = "a backward pass (training changes the weights every step)";
    }
    if (call.b.is_input) {
      const auto& inputs = lowered.inputs;
      const auto it = std::find_if(inputs.begin(), inputs.end(),
                                   [&](const auto& in) { return in.name == call.b.buffer; });
      if (it != inputs.end()) {
        w.input = static_cast<int>(it - inputs.begin());
        w.input_name = it->name;
        w.offset_bytes = index::static_value(call.b.offset, "freeze_parameters") *
                         static_cast<int64_t>(dtype_size(call.b.dtype));
      }
    }
    if (w.why_not.empty() && w.input < 0) {
      w.why_not = "the weights are computed in the graph, not a graph input";
    }
    const bool written =
        w.input >= 0 && std::any_of(lowered.buffers.begin(), lowered.buffers.end(),
                                    [&](auto& b) { return b.mutated_input == w.input_name; });
    if (w.why_not.empty() && written) {
      w.why_not = "the graph writes input " + w.input_name + " in place";
    }
    sites.push_back(std::move(w));
  }
  return sites;
}

}  // namespace stax::driver
