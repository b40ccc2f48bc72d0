// The Section 7.6 pipeline.
#include "scheduler/schedule.h"

#include "ir/graph.h"
#include "scheduler/fusion_peak.h"
#include "scheduler/in_place_reuse.h"
#include "scheduler/peak_model.h"

#include <algorithm>
#include <map>
#include <optional>
#include <queue>
#include <stdexcept>

namespace stax::scheduler {

using index::Expr;

const BufferPlan* Schedule::plan_of(const std::string& buffer) const {
  auto it = plan_index.find(buffer);
  return it == plan_index.end() ? nullptr : &buffers[it->second];
}

bool Schedule::is_elided(const std::string& buffer) const {
  const BufferPlan* p = plan_of(buffer);
  return p != nullptr && p->elided;
}

bool Schedule::is_localized(const std::string& buffer) const {
  const BufferPlan* p = plan_of(buffer);
  return p != nullptr && p->localized;
}

bool Schedule::is_allocated(const std::string& buffer) const {
  const BufferPlan* p = plan_of(buffer);
  return p != nullptr && !p->elided && !p->localized;
}

namespace {

// Kahn's algorithm over fused nodes; ties broken by the original position.
std::vector<FusedNode> topological_order(std::vector<FusedNode> groups,
                                         const std::vector<SchedulerNode>& nodes) {
  std::map<std::string, size_t> writer_group;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int id : groups[g].members())
      writer_group[nodes[static_cast<size_t>(id)].write.buffer] = g;
  }
  std::vector<std::set<size_t>> succs(groups.size());
  std::vector<int> indegree(groups.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int id : groups[g].members()) {
      for (const auto& r : nodes[static_cast<size_t>(id)].reads) {
        auto it = writer_group.find(r.buffer);
        if (it == writer_group.end() || it->second == g) continue;
        if (succs[it->second].insert(g).second) ++indegree[g];
      }
    }
  }
  // Weak dependences (in-place writes run after the readers of the old contents).
  std::map<int, size_t> group_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int id : groups[g].members()) group_of[id] = g;
  }
  for (auto [before, after] : weak_edges(nodes)) {
    const auto b = group_of.find(before);
    const auto a = group_of.find(after);
    if (b == group_of.end() || a == group_of.end() || b->second == a->second) continue;
    if (succs[b->second].insert(a->second).second) ++indegree[a->second];
  }
  auto first = [&](size_t g) {
    const auto m = groups[g].members();
    return *std::min_element(m.begin(), m.end());
  };
  auto later = [&](size_t x, size_t y) { return first(x) > first(y); };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> ready(later);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (indegree[g] == 0) ready.push(g);
  }
  std::vector<FusedNode> ordered;
  while (!ready.empty()) {
    const size_t g = ready.top();
    ready.pop();
    ordered.push_back(groups[g]);
    for (size_t s : succs[g]) {
      if (--indegree[s] == 0) ready.push(s);
    }
  }
  if (ordered.size() != groups.size()) throw std::logic_error("fused nodes form a cycle");
  return ordered;
}

// The computed buffers the graph returns (an output that is an input is not computed).
std::set<std::string> returned_buffers(const lowering::LoweredGraph& graph) {
  std::set<std::string> outputs;
  for (const auto& out : graph.outputs) {
    if (!out.is_input) outputs.insert(out.buffer);
  }
  return outputs;
}

// Definition 7.5 over the buffers the wrapper allocates, in the final order: the model fusion
// and step 5 simulate (peak_model.h), told what step 6 decided.
int64_t allocated_peak(const Schedule& s, std::vector<StorageDecision> decisions) {
  InPlaceCandidates taken;
  for (size_t k = 0; k < s.buffers.size(); ++k) {
    const BufferPlan& p = s.buffers[k];
    decisions[k].elided = p.elided;
    decisions[k].localized = p.localized;
    if (!p.in_place_of.empty()) taken[p.buffer] = {p.in_place_of};
  }
  std::vector<int> order(s.kernels.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = static_cast<int>(g);
  return simulate_peak(storage_dag(s.nodes, s.kernels, decisions, taken), order);
}

}  // namespace

Schedule schedule(const lowering::LoweredGraph& graph, const ScheduleOptions& options) {
  Schedule s;
  s.graph = &graph;
  // Step 1: one node per buffer, with its dependences.
  for (size_t k = 0; k < graph.buffers.size(); ++k) {
    try {
      s.nodes.push_back(make_scheduler_node(static_cast<int>(k), graph.buffers[k], graph.symbols));
    } catch (const std::exception&) {
      ir::rethrow_with_context("scheduling " + graph.buffers[k].source);
    }
  }
  add_weak_dependences(s.nodes);
  // Step 2: dead-node elimination, from the outputs backwards (buffers are in execution
  // order, so one reverse sweep suffices). A write into an input is an effect: never dead.
  std::set<std::string> needed;
  for (const auto& out : graph.outputs) needed.insert(out.buffer);
  for (const auto& n : s.nodes) {
    if (!n.buffer->mutated_input.empty()) needed.insert(n.write.buffer);
  }
  s.dead.assign(s.nodes.size(), false);
  for (size_t k = s.nodes.size(); k-- > 0;) {
    const SchedulerNode& n = s.nodes[k];
    if (!needed.count(n.write.buffer)) {
      s.dead[k] = true;
      s.dead_node_log.push_back("removed " + n.name + " (" + n.write.buffer +
                                "): its result is never used");
      continue;
    }
    for (const auto& r : n.reads) needed.insert(r.buffer);
  }
  std::reverse(s.dead_node_log.begin(), s.dead_node_log.end());

  std::vector<FusedNode> groups;
  for (const auto& n : s.nodes) {
    if (s.dead[static_cast<size_t>(n.id)]) continue;
    FusedNode f;
    f.name = n.name;
    f.nests = {LoopNest{n.sizes(), n.reduction_sizes(), {n.id}}};
    groups.push_back(f);
  }
  // Steps 3-4: greedy fusion; its cycle test (Proposition 7.1) keeps a topological order of
  // the groups instead of ancestor sets (cycle_check.h).
  const std::set<std::string> outputs = returned_buffers(graph);
  StorageOptions storage_options;
  const bool gpu = options.device == lowering::Device::Gpu;
  storage_options.localize = options.localize;
  // On the GPU a row's threads each hold a one-element slice (a reduction's result they all
  // combined) in a register; a longer slice stays in memory.
  if (gpu) storage_options.max_local_elements = 1;
  storage_options.max_local_bytes = options.max_local_bytes;
  storage_options.in_place_reuse = options.in_place_reuse;
  if (options.fuse) {
    FusionLimits limits = options.limits;
    limits.device = options.device;
    greedy_fusion(s.nodes, groups, outputs, s.fusion_log, limits, storage_options);
  }
  // Step 4b: external calls absorb the pointwise loops they can run as epilogues.
  if (options.fuse) {
    std::set<std::string> graph_outputs;
    for (const auto& out : graph.outputs) graph_outputs.insert(out.buffer);
    fuse_epilogues(s.nodes, groups, graph_outputs, options.epilogue_check, s.epilogue_log);
  }
  // Step 4c: innermost loops that accesses divide are split so they walk memory contiguously.
  if (!gpu) split_inner_loops(s.nodes, groups, options.vector_lanes, s.loop_split_log);
  s.kernels = topological_order(std::move(groups), s.nodes);
  // Step 5: the order of smallest simulated peak memory (Section 7.5).
  if (options.reorder_for_memory) {
    // The model greedy fusion's peak check simulates too, with step 6's storage decisions
    // (peak_model.h).
    s.memory_order =
        choose_memory_order(predicted_storage_dag(s.nodes, s.kernels, outputs, storage_options));
    std::vector<FusedNode> reordered;
    for (int g : s.memory_order.order) reordered.push_back(s.kernels[static_cast<size_t>(g)]);
    s.kernels = std::move(reordered);
  }

  // Step 6: producers, last uses, and buffers that never leave a loop nest or an outer
  // iteration (decide_storage, which fusion and step 5 simulate too).
  const std::vector<StorageDecision> decisions =
      decide_storage(s.nodes, s.kernels, outputs, storage_options);
  auto& plan_index = s.plan_index;
  for (const StorageDecision& d : decisions) {
    BufferPlan p;
    p.buffer = d.buffer;
    p.size = d.size;
    p.bytes = d.bytes;
    p.producer = d.producer;
    p.last_use = d.group;
    p.input_storage = d.input_storage;
    p.is_output = d.is_output;
    p.elided = d.elided;
    p.localized = d.localized;
    p.local_elements = d.local_elements;
    p.local_reason = d.local_reason;
    plan_index[p.buffer] = s.buffers.size();
    s.buffers.push_back(p);
  }
  std::map<std::string, int> input_last_use;
  for (size_t g = 0; g < s.kernels.size(); ++g) {
    for (int id : s.kernels[g].members()) {
      for (const auto& r : s.nodes[static_cast<size_t>(id)].reads) {
        if (auto it = plan_index.find(r.buffer); it != plan_index.end()) {
          s.buffers[it->second].last_use =
              std::max(s.buffers[it->second].last_use, static_cast<int>(g));
        } else {
          input_last_use[r.buffer] = static_cast<int>(g);
        }
      }
    }
  }

  if (options.in_place_reuse) plan_in_place_reuse(s, decisions);

  // Allocation and release records. A buffer whose storage another takes in place is not
  // released: that storage lives on as the other's.
  std::set<std::string> taken_in_place;
  for (const auto& p : s.buffers) {
    if (!p.in_place_of.empty()) taken_in_place.insert(p.in_place_of);
  }
  s.allocate_before.assign(s.kernels.size(), {});
  s.release_after.assign(s.kernels.size(), {});
  for (const auto& p : s.buffers) {
    if (p.elided || p.localized) continue;
    s.allocate_before[static_cast<size_t>(p.producer)].push_back(p.buffer);
    if (!p.is_output && !taken_in_place.count(p.buffer)) {
      s.release_after[static_cast<size_t>(p.last_use)].push_back(p.buffer);
    }
  }
  std::set<std::string> written_inputs;
  for (const auto& p : s.buffers) {
    if (!p.input_storage.empty()) written_inputs.insert(p.input_storage);
  }
  for (const auto& [name, g] : input_last_use) {
    // An input written in place is the caller's result: never handed back early.
    if (!written_inputs.count(name)) s.release_after[static_cast<size_t>(g)].push_back(name);
  }
  s.peak_bytes = allocated_peak(s, decisions);
  return s;
}

std::string describe_sources(const Schedule& schedule, const FusedNode& fused) {
  std::string out;
  for (int id : fused.members()) {
    const std::string& source = schedule.nodes[static_cast<size_t>(id)].buffer->source;
    out += (out.empty() ? "" : ", ") +
           (source.empty() ? schedule.nodes[static_cast<size_t>(id)].name : source);
  }
  return out;
}

}  // namespace stax::scheduler
