// Whether a `stax run` can finish, decided from the graph and the schedule before anything is
// allocated or run: a graph whose values must be materialized at an absurd size, whose eager
// evaluation would take hours, or whose output is too big for the outputs file, is refused with
// a message naming the value responsible, instead of being attempted.
#pragma once

#include <cstdint>
#include <string>

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

// The most element steps (one output element of a pointwise op or copy, one input element of a
// reduction, one multiply-add of a contraction) the eager interpreter is asked to take in one
// run: it reads every element
// through a generic multi-index accessor (tens of millions per second), so this is about a
// minute; the comparison runs it again for the median time.
constexpr int64_t kMaxEagerElementSteps = int64_t{1} << 30;

// Throws std::invalid_argument naming `path` and the output when an output of `graph` has more
// elements than write_tensor_json writes (eager::kMaxJsonElements).
void check_outputs_fit_json(const ir::Graph& graph, const std::string& path);

// Throws std::runtime_error when evaluating `graph` eagerly takes more than `max_steps`
// element steps, naming the node that takes the most. Views take none.
void check_eager_work(const ir::Graph& graph, int64_t max_steps);

}  // namespace stax::cli
