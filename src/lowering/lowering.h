// Lowering: graph IR -> loop-level buffers (the seed's Definition 6.1, Sections 6.3 and 6.6).
//
// Each graph value becomes a loader (an index -> element function). Pointwise ops compose
// loaders (function composition) instead of storing results; views rewrite indices; the
// materialization rule decides which multi-user values are stored; reductions and graph
// outputs are always stored in buffers.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "lowering/loop_ir.h"
#include "lowering/materialization.h"

namespace stax::lowering {

struct LoweringOptions {
  Device device = Device::Cpu;
  // The libraries of the target: for a contraction, the name of the library that runs it as
  // an external call ("oneDNN matmul"), or nullopt with `why` saying why not (then it is a
  // loop nest); when it accepts, `why` is how it computes the call where that is worth
  // recording ("through float32 (...)"), appended to the call's reason, or "". Unset: no
  // library, every contraction is a loop nest.
  std::function<std::optional<std::string>(const ExternalCall&, std::string* why)> library_for;
  // For a call library_for accepted (a forward convolution), why the library would rather
  // write its output channels last (it runs in place on that layout), or nullopt. Unset: every
  // call writes a row-major output.
  std::function<std::optional<std::string>(const ExternalCall&)> channels_last_output_for;
  // Intermediates stored channels last where that serves (channels_last.h); false: every
  // value lowering stores is row-major (before/after measurements).
  bool channels_last_intermediates = true;
};

LoweredGraph lower(const ir::Graph& graph, const LoweringOptions& options = {});

}  // namespace stax::lowering
