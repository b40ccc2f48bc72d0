// Step 4c of the schedule: a pointwise loop nest whose innermost loop its accesses reach only
// through floor division and modulo (a flattened view of a permuted tensor: attention heads
// merged back into the hidden dimension for the next matrix product) gets that loop split,
// n -> (n/d, d), so that the inner loop walks every access with a constant stride and can be
// vectorized (index::contiguous_split finds d). Nodes keep their own loops: place() re-splits
// them into the nest's finer ones, as for COMPATIBLE_RANGES_NO_REDUCTION fusion.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/fused_node.h"

namespace stax::scheduler {

struct LoopSplitLog {
  std::vector<std::string> lines;  // "op16: innermost loop 1024 split as (16, 64): ..."
};

// `vector_lanes`: the target's float32 lanes; a split is only made when its inner extent is a
// whole number of vectors, so the split loop vectorizes without a masked tail.
void split_inner_loops(const std::vector<SchedulerNode>& nodes, std::vector<FusedNode>& groups,
                       int64_t vector_lanes, LoopSplitLog& log);

}  // namespace stax::scheduler
