// The materialization rule of lowering (the seed's Section 6.6): whether an unrealized
// pointwise value with several users is computed once into a buffer or recomputed inside each
// consumer. The answer comes from a per-device cost model: on the CPU a transcendental op is
// expensive next to a memory round trip, so it is materialized (Example 7.2); on the GPU it
// is cheap and inlined.
#pragma once

#include <string>

#include "lowering/loop_ir.h"

namespace stax::lowering {

enum class Device { Cpu, Gpu };

// What a loader computes per element, measured by running it under a counting handler.
struct BodyStats {
  int loads = 0;
  int cheap_ops = 0;
  int moderate_ops = 0;
  int transcendental_ops = 0;
};
BodyStats measure_body(const Loader& loader, size_t rank);

struct MaterializationDecision {
  bool materialize = false;
  std::string reason;
};
MaterializationDecision decide_materialization(Device device, const BodyStats& stats,
                                               int num_users);

}  // namespace stax::lowering
