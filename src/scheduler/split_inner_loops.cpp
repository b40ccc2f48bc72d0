// Step 4c: innermost loops split where their accesses divide them (split_inner_loops.h).
#include "scheduler/split_inner_loops.h"

#include <optional>

#include "index/expr.h"
#include "index/shape_exprs.h"
#include "scheduler/fusion_rules.h"

namespace stax::scheduler {

namespace {

// The accesses of every member of a single-nest group, in the group's loop variables.
std::vector<index::Expr> placed_accesses(const std::vector<SchedulerNode>& nodes,
                                         const FusedNode& group) {
  std::vector<index::Expr> out;
  for (int id : group.members()) {
    const SchedulerNode& node = nodes.at(static_cast<size_t>(id));
    const Placement p = place(group, node);
    for (const Access& r : node.reads) out.push_back(placed_index(group, node, r.index, p));
    out.push_back(placed_index(group, node, node.write.index, p));
  }
  return out;
}

bool has_external_member(const std::vector<SchedulerNode>& nodes, const FusedNode& group) {
  for (int id : group.members()) {
    if (nodes.at(static_cast<size_t>(id)).is_external()) return true;
  }
  return false;
}

}  // namespace

void split_inner_loops(const std::vector<SchedulerNode>& nodes, std::vector<FusedNode>& groups,
                       int64_t vector_lanes, LoopSplitLog& log) {
  for (FusedNode& group : groups) {
    // Reduction nests and outer-loop fused nodes place their members loop for loop; only a
    // pointwise nest re-splits its members' loops (place()).
    if (group.outer_loop_fused || group.nests.size() != 1) continue;
    LoopNest& nest = group.nests[0];
    if (!nest.reduction_sizes.empty() || nest.sizes.empty()) continue;
    if (has_external_member(nodes, group)) continue;
    const std::string inner = "x" + std::to_string(group.outer.size() + nest.sizes.size() - 1);
    // Issue 33: a split needs the innermost extent's value (a symbolic innermost loop is
    // kept); the outer loops' may be symbolic.
    const std::optional<int64_t> known = nest.sizes.back().constant_value();
    if (!known) continue;
    const int64_t extent = *known;
    const std::optional<int64_t> period = index::contiguous_split(
        placed_accesses(nodes, group), inner,
        nest_domain(group, 0, nodes.at(static_cast<size_t>(group.members().front())).symbols));
    if (!period) continue;
    const std::string what = group.name + ": innermost loop " + std::to_string(extent);
    if (*period % vector_lanes != 0) {
      log.lines.push_back(what + " kept: its accesses divide it by " + std::to_string(*period) +
                          ", not a whole number of " + std::to_string(vector_lanes) +
                          "-lane vectors");
      continue;
    }
    nest.sizes.back() = index::Expr(extent / *period);
    nest.sizes.push_back(*period);
    log.lines.push_back(what + " split as (" + std::to_string(extent / *period) + ", " +
                        std::to_string(*period) + "): accesses divide it by " +
                        std::to_string(*period) + "; split, every access walks the inner " +
                        std::to_string(*period) + " with a constant stride");
  }
}

}  // namespace stax::scheduler
