// Section 7.5's in-place reuse (see in_place_reuse.h).
#include "scheduler/in_place_reuse.h"

#include <algorithm>
#include <unordered_map>

namespace stax::scheduler {

namespace {

// Why the buffer of `writer` (in fused node `g`) cannot take the storage of `old` in any
// order; empty when it can wherever `g` is the last reader of `old`.
std::string refusal(const std::vector<SchedulerNode>& nodes, const FusedNode& group, int g,
                    const SchedulerNode& writer, const StorageDecision& mine,
                    const StorageDecision& old) {
  if (old.is_output) return old.buffer + " is a graph output";
  if (!old.stored()) return old.buffer + " never reaches memory";
  if (old.producer == g) return old.buffer + " is written in this kernel";
  if (old.size != mine.size) return "sizes differ";  // as expressions: equal at every size
  if (nodes[static_cast<size_t>(old.node)].buffer->dtype != writer.buffer->dtype) {
    return "dtypes differ";
  }
  MemoryDep written = writer.write_dep;
  written.buffer = old.buffer;
  for (int id : group.members()) {
    std::string why = in_place_conflict(writer, written, nodes[static_cast<size_t>(id)],
                                        group.runs_before(writer.id, id));
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

InPlaceCandidates in_place_candidates(const std::vector<SchedulerNode>& nodes,
                                      const std::vector<FusedNode>& groups,
                                      const std::vector<StorageDecision>& decisions) {
  std::unordered_map<std::string, const StorageDecision*> decision_of;
  for (const StorageDecision& d : decisions) decision_of[d.buffer] = &d;
  InPlaceCandidates candidates;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<int> members = groups[g].members();
    const bool external = std::any_of(members.begin(), members.end(), [&](int id) {
      return nodes[static_cast<size_t>(id)].is_external();
    });
    if (external) continue;  // a library call's operands are read whole, in its own order
    for (int id : members) {
      const SchedulerNode& writer = nodes[static_cast<size_t>(id)];
      const auto mine = decision_of.find(writer.write.buffer);
      if (mine == decision_of.end() || writer.is_reduction()) continue;
      // A graph output may take an intermediate's storage too: the intermediate is then
      // allocated as the output (program/place_buffers.cpp), so that a gradient summed from a
      // product (the tied embedding of a language model's head: 154 MiB for GPT-2) is not held
      // twice, as the product's intermediate and as the output.
      if (!mine->second->stored() || !mine->second->input_storage.empty()) continue;
      std::vector<std::string> olds;
      for (const Access& read : writer.reads) {
        const auto old = decision_of.find(read.buffer);
        if (old == decision_of.end()) continue;
        if (std::find(olds.begin(), olds.end(), read.buffer) != olds.end()) continue;
        if (!refusal(nodes, groups[g], static_cast<int>(g), writer, *mine->second, *old->second)
                 .empty()) {
          continue;
        }
        olds.push_back(read.buffer);
      }
      if (!olds.empty()) candidates[writer.write.buffer] = std::move(olds);
    }
  }
  return candidates;
}

void plan_in_place_reuse(Schedule& s, const std::vector<StorageDecision>& decisions) {
  // The simulation's own choice in the final order (peak_model.h): the peak step 5 chose by
  // is the peak of what is planned here.
  const MemoryDag dag = storage_dag(s.nodes, s.kernels, decisions,
                                    in_place_candidates(s.nodes, s.kernels, decisions));
  std::vector<int> order(s.kernels.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = static_cast<int>(g);
  const std::vector<int> taken_from = in_place_choices(dag, order);
  for (size_t k = 0; k < taken_from.size(); ++k) {
    if (taken_from[k] < 0) continue;
    BufferPlan& mine = s.buffers.at(k);
    const BufferPlan& old = s.buffers.at(static_cast<size_t>(taken_from[k]));
    mine.in_place_of = old.buffer;
    mine.in_place_reason = s.nodes[static_cast<size_t>(decisions[k].node)].name + " reads " +
                           old.buffer + " for the last time, at the element it writes (same " +
                           "dtype and " + std::to_string(old.bytes) + " bytes)";
  }
}

}  // namespace stax::scheduler
