// One model of peak memory (Definition 7.5) for the three places that simulate it (issue 32):
// greedy fusion's peak check (fusion_peak.h), step 5's choice of order (memory_order.h) and the
// schedule's M* of the allocated buffers (Schedule::peak_bytes). All three count what step 6
// allocates: a buffer it elides or localizes takes no memory, and a buffer it writes in place
// of another continues that one's storage (Section 7.5). Each caller says which buffers exist
// and which may take which in place; the MemoryDag built here carries that, and simulate_peak
// is the one piece of code that turns it into a peak.
//
// Elision and localization depend on the fused groups alone, not on their order, so fusion and
// step 5 know them exactly: decide_storage is the code step 6 itself runs. In-place reuse also
// depends on the order (the old buffer's last reader must be the new one's producer), so the
// model carries each buffer's candidates and the simulation decides them for the order it
// simulates, with the same greedy rule step 6 applies to the final order (in_place_choices).
// Fusion sees each round's groups: the effect of a merge on elision is not predicted.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/fused_node.h"
#include "scheduler/memory_order.h"

namespace stax::scheduler {

// The schedule's options that decide storage (ScheduleOptions holds them).
struct StorageOptions {
  bool localize = true;
  int64_t max_local_bytes = 64 * 1024;
  bool in_place_reuse = true;
  // More elements per outer iteration stay in memory (0: no bound). A GPU target sets 1: a
  // row's value is then a register of every thread of the row.
  int64_t max_local_elements = 0;
};

// Step 6's decisions for one computed buffer that depend on the fused groups alone.
struct StorageDecision {
  std::string buffer;
  int node = -1;  // the scheduler node that writes it
  // Its bytes as an expression over the size symbols (issue 33), and their value at the
  // symbols' hints, which only scores and peak estimates read.
  index::Expr size;
  int64_t bytes = 0;
  int group = -1;  // the group of that node
  // The group that runs its producer: `group`, or for a further result of a call
  // (lowering::ResultOf) the call's group, which writes it; it lives at least to `group`.
  int producer = -1;
  bool is_output = false;     // returned by the graph, or written into an input
  std::string input_storage;  // the input written in place (BufferPlan::input_storage)
  bool elided = false;        // written and read only inside one loop nest
  bool localized = false;     // lives within one outer iteration (BufferPlan::localized)
  int64_t local_elements = 0;
  std::string local_reason;
  bool stored() const { return !elided && !localized; }
};

// One decision per member of `groups`, in group order and member order within a group.
// `outputs`: the computed buffers the graph returns.
std::vector<StorageDecision> decide_storage(const std::vector<SchedulerNode>& nodes,
                                            const std::vector<FusedNode>& groups,
                                            const std::set<std::string>& outputs,
                                            const StorageOptions& options);

// Buffer name -> the buffers whose storage it may take in place, preferred first.
using InPlaceCandidates = std::unordered_map<std::string, std::vector<std::string>>;

// The model: node g is groups[g], buffer k is decisions[k] (no bytes when it is not stored or
// is an input's memory), read by the groups that read it; an output lives to the end; weak
// dependences order groups with no buffer between them.
MemoryDag storage_dag(const std::vector<SchedulerNode>& nodes, const std::vector<FusedNode>& groups,
                      const std::vector<StorageDecision>& decisions,
                      const InPlaceCandidates& may_take);

// The model before step 6 has run, for fusion and step 5: decide_storage and, when in-place
// reuse is on, in_place_candidates (in_place_reuse.h) over `groups`.
MemoryDag predicted_storage_dag(const std::vector<SchedulerNode>& nodes,
                                const std::vector<FusedNode>& groups,
                                const std::set<std::string>& outputs,
                                const StorageOptions& options);

}  // namespace stax::scheduler
