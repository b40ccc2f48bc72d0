// Whether the tensors of a `stax run` fit in this machine's memory, decided from the graph and
// the schedule before anything is allocated: a graph whose values must be materialized at an
// absurd size is refused with a message naming the largest one, instead of being attempted.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "scheduler/schedule.h"

namespace stax::cli {

// Bytes of memory this process may use: physical memory, or the cgroup limit when lower.
int64_t available_memory_bytes();

// Throws std::runtime_error when the inputs, every buffer the compiled wrapper allocates and
// every value the eager interpreter materializes (it keeps them all until the end) need more
// than `budget_bytes` together. Views (expand, permute, ...) of another tensor cost nothing.
void check_run_fits_in_memory(const ir::Graph& graph, const scheduler::Schedule& schedule,
                              int64_t budget_bytes);

}  // namespace stax::cli
