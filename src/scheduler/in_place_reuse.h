// Section 7.5's in-place reuse, the inverse of functionalization: a loop node writes its
// buffer into the storage of an intermediate it reads whose last use it is, saving that
// allocation. Legal when the two have the same dtype and bytes and every read of the old
// buffer in the fused node is at the element being written, by a node no later in the loop
// body (read and write indices agree: each element is read before it is overwritten, the
// argument of Proposition 7.2). A graph output may take an intermediate's storage (the
// intermediate is then allocated as the output); outputs are never taken, and inputs and
// buffers that never reach memory (elided, localized) take no part.
#pragma once

#include "scheduler/peak_model.h"
#include "scheduler/schedule.h"

namespace stax::scheduler {

// For each buffer written in `groups`, the buffers whose storage it may take, preferred first:
// every condition above but the one that depends on the order of the groups (that its
// producer reads the old buffer for the last time), which in_place_choices (memory_order.h)
// decides for a given order. The peak model (peak_model.h) and plan_in_place_reuse share it.
InPlaceCandidates in_place_candidates(const std::vector<SchedulerNode>& nodes,
                                      const std::vector<FusedNode>& groups,
                                      const std::vector<StorageDecision>& decisions);

// Sets BufferPlan::in_place_of (and its reason) of each buffer written in place of another;
// the other is then not released after the fused node (its storage lives on as the new
// buffer's). Run after the order, elision and localization are final; `decisions` are step 6's
// (decide_storage over s.kernels), one per plan in the same order.
void plan_in_place_reuse(Schedule& s, const std::vector<StorageDecision>& decisions);

}  // namespace stax::scheduler
