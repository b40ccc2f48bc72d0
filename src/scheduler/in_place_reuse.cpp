// Section 7.5's in-place reuse (see in_place_reuse.h).
#include "scheduler/in_place_reuse.h"

#include <algorithm>
#include <set>

namespace stax::scheduler {

namespace {

// Why the buffer of `writer` (in fused node `g`) cannot take the storage of `old`; empty
// when it can.
std::string refusal(const Schedule& s, int g, const SchedulerNode& writer, const BufferPlan& mine,
                    const BufferPlan& old) {
  if (old.is_output || !old.input_storage.empty()) return old.buffer + " is a graph output";
  if (old.elided || old.localized) return old.buffer + " never reaches memory";
  if (old.last_use != g) return old.buffer + " is read after this kernel";
  if (old.producer == g) return old.buffer + " is written in this kernel";
  if (old.bytes != mine.bytes) return "sizes differ";
  if (s.graph->find_buffer(old.buffer)->dtype != writer.buffer->dtype) return "dtypes differ";
  MemoryDep written = writer.write_dep;
  written.buffer = old.buffer;
  const FusedNode& kernel = s.kernels[static_cast<size_t>(g)];
  for (int id : kernel.members()) {
    std::string why = in_place_conflict(writer, written, s.nodes[static_cast<size_t>(id)],
                                        kernel.runs_before(writer.id, id));
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

void plan_in_place_reuse(Schedule& s) {
  std::set<std::string> taken;
  for (size_t g = 0; g < s.kernels.size(); ++g) {
    const std::vector<int> members = s.kernels[g].members();
    const bool external = std::any_of(members.begin(), members.end(), [&](int id) {
      return s.nodes[static_cast<size_t>(id)].is_external();
    });
    if (external) continue;  // a library call's operands are read whole, in its own order
    for (int id : members) {
      const SchedulerNode& writer = s.nodes[static_cast<size_t>(id)];
      const auto mine_at = s.plan_index.find(writer.write.buffer);
      if (mine_at == s.plan_index.end() || writer.is_reduction()) continue;
      BufferPlan& mine = s.buffers[mine_at->second];
      if (mine.is_output || mine.elided || mine.localized || !mine.in_place_of.empty()) continue;
      for (const Access& read : writer.reads) {
        const auto old_at = s.plan_index.find(read.buffer);
        if (old_at == s.plan_index.end() || taken.count(read.buffer)) continue;
        const BufferPlan& old = s.buffers[old_at->second];
        if (!refusal(s, static_cast<int>(g), writer, mine, old).empty()) continue;
        mine.in_place_of = old.buffer;
        mine.in_place_reason = writer.name + " reads " + old.buffer + " for the last time, at " +
                               "the element it writes (same dtype and " +
                               std::to_string(old.bytes) + " bytes)";
        taken.insert(old.buffer);
        break;
      }
    }
  }
}

}  // namespace stax::scheduler
