// Section 7.5's in-place reuse, the inverse of functionalization: a loop node writes its
// buffer into the storage of an intermediate it reads whose last use it is, saving that
// allocation. Legal when the two have the same dtype and bytes and every read of the old
// buffer in the fused node is at the element being written, by a node no later in the loop
// body (read and write indices agree: each element is read before it is overwritten, the
// argument of Proposition 7.2). Graph outputs, inputs and buffers that never reach memory
// (elided, localized) take no part.
#pragma once

#include "scheduler/schedule.h"

namespace stax::scheduler {

// Sets BufferPlan::in_place_of (and its reason) of each buffer written in place of another;
// the other is then not released after the fused node (its storage lives on as the new
// buffer's). Run after the order, elision and localization are final.
void plan_in_place_reuse(Schedule& s);

}  // namespace stax::scheduler
