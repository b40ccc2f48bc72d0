// The scheduling pipeline of Section 7.6: nodes and dependences, dead-node elimination,
// greedy fusion (its cycle test keeps a topological order of the fused groups, see
// cycle_check.h), kernel order, and the last use of every buffer with the allocation and
// release points that code generation emits.
#pragma once

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "lowering/loop_ir.h"
#include "scheduler/epilogue_fusion.h"
#include "scheduler/greedy_fusion.h"
#include "scheduler/memory_order.h"
#include "scheduler/split_inner_loops.h"

namespace stax::scheduler {

struct BufferPlan {
  std::string buffer;
  // Its bytes as an expression over the size symbols (issue 33; what the wrapper allocates),
  // and their value at the symbols' hints (what the memory model and explain weigh).
  index::Expr size;
  int64_t bytes = 0;
  int producer = -1;  // fused node index that writes it
  int last_use = -1;  // last fused node index that reads it (producer if none)
  bool is_output = false;
  // Issue 16, point 6: the graph input whose memory the buffer is (copy_ writes it in place):
  // never allocated or freed, live like an output.
  std::string input_storage;
  // Section 7.5's in-place reuse (in_place_reuse.h): the intermediate whose storage it takes,
  // read for the last time by its producer at the element written; empty: its own.
  std::string in_place_of;
  std::string in_place_reason;
  // Written and read only inside one loop nest at the same index: never stored to memory.
  bool elided = false;
  // Written and read only within one outer iteration of an outer-loop fused node: each
  // iteration gets a local array of `local_elements` (its slice), indexed without the outer
  // variables, which stays in L1 instead of going to memory.
  bool localized = false;
  int64_t local_elements = 0;  // 1: a scalar, held in a register
  std::string local_reason;    // why it is (or is not) localized, for explain
};

struct Schedule {
  const lowering::LoweredGraph* graph = nullptr;
  std::vector<SchedulerNode> nodes;  // indexed by node id; dead ones included
  std::vector<bool> dead;
  std::vector<std::string> dead_node_log;
  FusionLog fusion_log;
  EpilogueLog epilogue_log;        // each external call's epilogue decision (epilogue_fusion.h)
  LoopSplitLog loop_split_log;     // innermost loops split for contiguity (split_inner_loops.h)
  std::vector<FusedNode> kernels;  // fused nodes in execution order
  // Step 5's choice of that order (memory_order.h); no candidates when reordering is off.
  // Its `order` lists positions in the topological order fusion left.
  MemoryOrder memory_order;
  std::vector<BufferPlan> buffers;                     // one per live computed buffer
  std::unordered_map<std::string, size_t> plan_index;  // buffer name -> index into buffers
  // Per fused node: buffers allocated before it runs and released after it (Section 7.5's
  // allocation and release records; inputs are only released, never freed).
  std::vector<std::vector<std::string>> allocate_before;
  std::vector<std::vector<std::string>> release_after;
  // M* of Definition 7.5 over the buffers the wrapper allocates (outputs included, inputs
  // not), in the chosen order.
  int64_t peak_bytes = 0;

  const BufferPlan* plan_of(const std::string& buffer) const;
  bool is_elided(const std::string& buffer) const;
  bool is_localized(const std::string& buffer) const;
  // Whether the wrapper allocates the buffer (neither elided nor localized).
  bool is_allocated(const std::string& buffer) const;
};

struct ScheduleOptions {
  FusionLimits limits;
  // Issue 35: the GPU partition (Definition 7.2 by element count, compatibility_gpu.h; rows
  // of a reduction with the pointwise work over them, fusion_rules_gpu.cpp), one-element
  // local slices only, no split of innermost loops for the CPU's vectors.
  lowering::Device device = lowering::Device::Cpu;
  bool fuse = true;
  // Give buffers that live within one outer iteration a local array (see BufferPlan).
  bool localize = true;
  // Section 7.5's in-place reuse (in_place_reuse.h).
  bool in_place_reuse = true;
  // Step 5: order the fused nodes by simulated peak memory (memory_order.h); false keeps the
  // topological order fusion left.
  bool reorder_for_memory = true;
  // What the target's library applies to a call's results (epilogue_fusion.h); unset: no
  // epilogue fusion.
  EpilogueCheck epilogue_check;
  // The largest such array, in bytes (target::Target::max_local_bytes).
  int64_t max_local_bytes = 64 * 1024;
  // Float32 lanes of the target's vectors (target::Target::vector_lanes): an innermost loop is
  // split for contiguity only into whole vectors (split_inner_loops.h).
  int64_t vector_lanes = 1;
};

// `graph` must outlive the schedule.
Schedule schedule(const lowering::LoweredGraph& graph, const ScheduleOptions& options = {});

// The graph nodes a fused node computes ("sum 's' at f.stax:3, div 'y' at f.stax:4"), for
// errors raised while scheduling or generating code for it.
std::string describe_sources(const Schedule& schedule, const FusedNode& fused);

}  // namespace stax::scheduler
