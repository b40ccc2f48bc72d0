// freeze_parameters (docs/freeze_parameters.md): which library calls of a compiled graph read a
// graph input as their convolution weights. A caller that can promise such an input did not
// change between calls (the torch.compile bridge, for nn.Parameters and buffers, checked by
// version counter and data pointer before each call) packs it once into the primitive's
// format (ExternalPlans::pack_weights), and the calls skip the per-call weight reorder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "driver/compiler.h"

namespace stax::driver {

struct WeightSite {
  size_t site = 0;     // the library call's index (ExternalPlans)
  std::string source;  // the graph node it computes
  // The graph input that is its weights (its position and name), -1 and "" when the weights
  // are computed in the graph.
  int input = -1;
  std::string input_name;
  int64_t offset_bytes = 0;  // where the weights start in that input
  // "" when the input's weights may be packed once; else why not.
  std::string why_not;
};

// Every convolution call that reads weights (forward and backward-data), in site order.
std::vector<WeightSite> weight_sites(const Compilation& compilation);

}  // namespace stax::driver
