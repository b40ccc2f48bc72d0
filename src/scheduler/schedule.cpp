// The Section 7.6 pipeline.
#include "scheduler/schedule.h"

#include "ir/graph.h"
#include "scheduler/fusion_peak.h"
#include "scheduler/in_place_reuse.h"

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

// The slice of `buffer` one outer iteration of `f` touches, when every access splits into
// the same function of the outer variables plus an offset of the inner ones; 0 otherwise.
int64_t local_slice(const Schedule& s, const FusedNode& f, const std::string& buffer) {
  std::map<std::string, Expr> zero_outer;
  std::set<std::string> outer_vars;
  for (size_t j = 0; j < f.outer.size(); ++j) {
    zero_outer["x" + std::to_string(j)] = Expr(0);
    outer_vars.insert("x" + std::to_string(j));
  }
  std::optional<Expr> common_outer;
  int64_t slice = 0;
  for (int id : f.members()) {
    const SchedulerNode& n = s.nodes[static_cast<size_t>(id)];
    std::vector<Expr> accesses;
    if (n.write.buffer == buffer) accesses.push_back(n.write.index);
    for (const auto& r : n.reads) {
      if (r.buffer == buffer) accesses.push_back(r.index);
    }
    const Placement p = place(f, n);
    for (const Expr& raw : accesses) {
      const Expr idx = placed_index(f, n, raw, p);
      const Expr inner =
          index::simplify(index::substitute(idx, zero_outer), nest_ranges(f, p.nest));
      const Expr outer = idx - inner;
      for (const auto& v : index::free_vars(outer)) {
        if (!outer_vars.count(v)) return 0;
      }
      if (common_outer && *common_outer != outer) return 0;
      common_outer = outer;
      const auto b = index::bounds(inner, nest_ranges(f, p.nest));
      if (!b || b->lo < 0) return 0;
      slice = std::max(slice, b->hi + 1);
    }
  }
  return slice;
}

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

// Definition 7.5 over the buffers the wrapper allocates, in the final order.
int64_t allocated_peak(const Schedule& s) {
  MemoryDag dag;
  dag.num_nodes = static_cast<int>(s.kernels.size());
  // A buffer written in place of another extends that one's storage to its own last use.
  std::map<std::string, const BufferPlan*> successor;
  for (const BufferPlan& p : s.buffers) {
    if (!p.in_place_of.empty()) successor[p.in_place_of] = &p;
  }
  for (const BufferPlan& p : s.buffers) {
    if (p.elided || p.localized || !p.in_place_of.empty()) continue;
    // An input written in place takes no memory of the program's.
    const int64_t bytes = p.input_storage.empty() ? p.bytes : 0;
    const BufferPlan* last = &p;
    for (auto it = successor.find(p.buffer); it != successor.end();
         it = successor.find(it->second->buffer)) {
      last = it->second;
    }
    dag.buffers.push_back({bytes, p.producer, {last->last_use}, last->is_output});
  }
  std::vector<int> order(s.kernels.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = static_cast<int>(g);
  return simulate_peak(dag, order);
}

}  // namespace

Schedule schedule(const lowering::LoweredGraph& graph, const ScheduleOptions& options) {
  Schedule s;
  s.graph = &graph;
  // Step 1: one node per buffer, with its dependences.
  for (size_t k = 0; k < graph.buffers.size(); ++k) {
    try {
      s.nodes.push_back(make_scheduler_node(static_cast<int>(k), graph.buffers[k]));
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
  if (options.fuse) greedy_fusion(s.nodes, groups, outputs, s.fusion_log, options.limits);
  // Step 4b: external calls absorb the pointwise loops they can run as epilogues.
  if (options.fuse) {
    std::set<std::string> graph_outputs;
    for (const auto& out : graph.outputs) graph_outputs.insert(out.buffer);
    fuse_epilogues(s.nodes, groups, graph_outputs, options.epilogue_check, s.epilogue_log);
  }
  // Step 4c: innermost loops that accesses divide are split so they walk memory contiguously.
  split_inner_loops(s.nodes, groups, options.vector_lanes, s.loop_split_log);
  s.kernels = topological_order(std::move(groups), s.nodes);
  // Step 5: the order of smallest simulated peak memory (Section 7.5).
  if (options.reorder_for_memory) {
    // Each member's buffer, written by its group and read by the groups that read it: the
    // model greedy fusion's peak check simulates too (fusion_peak.h).
    s.memory_order = choose_memory_order(groups_memory_dag(s.nodes, s.kernels, outputs));
    std::vector<FusedNode> reordered;
    for (int g : s.memory_order.order) reordered.push_back(s.kernels[static_cast<size_t>(g)]);
    s.kernels = std::move(reordered);
  }

  // Step 6: producers, last uses, and buffers that never leave a loop nest.
  auto& plan_index = s.plan_index;
  for (size_t g = 0; g < s.kernels.size(); ++g) {
    for (int id : s.kernels[g].members()) {
      const SchedulerNode& n = s.nodes[static_cast<size_t>(id)];
      BufferPlan p;
      p.buffer = n.write.buffer;
      p.bytes = n.buffer->numel() * static_cast<int64_t>(dtype_size(n.buffer->dtype));
      p.producer = static_cast<int>(g);
      p.last_use = static_cast<int>(g);
      p.input_storage = n.buffer->mutated_input;
      p.is_output = outputs.count(p.buffer) > 0 || !p.input_storage.empty();
      plan_index[p.buffer] = s.buffers.size();
      s.buffers.push_back(p);
    }
  }
  // A further result of a call (lowering::ResultOf) is written by the call: it is allocated
  // before the call's kernel, not its own (which runs nothing).
  for (const SchedulerNode& n : s.nodes) {
    const lowering::ExternalCall* call = n.buffer->external.get();
    const auto result = plan_index.find(n.write.buffer);
    if (call == nullptr || !call->result_of || result == plan_index.end()) continue;
    const auto writer = plan_index.find(call->result_of->call_buffer);
    if (writer == plan_index.end()) {
      throw std::logic_error(n.write.buffer + " is a result of " + call->result_of->call_buffer +
                             ", which is not scheduled");
    }
    s.buffers[result->second].producer = s.buffers[writer->second].producer;
  }
  std::map<std::string, int> input_last_use;
  std::map<std::string, std::set<std::pair<int, size_t>>> readers;  // buffer -> (group, nest)
  for (size_t g = 0; g < s.kernels.size(); ++g) {
    const FusedNode& f = s.kernels[g];
    for (size_t nest = 0; nest < f.nests.size(); ++nest) {
      for (int id : f.nests[nest].nodes) {
        for (const auto& r : s.nodes[static_cast<size_t>(id)].reads) {
          readers[r.buffer].insert({static_cast<int>(g), nest});
          if (auto it = plan_index.find(r.buffer); it != plan_index.end()) {
            s.buffers[it->second].last_use =
                std::max(s.buffers[it->second].last_use, static_cast<int>(g));
          } else {
            input_last_use[r.buffer] = static_cast<int>(g);
          }
        }
      }
    }
  }
  for (auto& p : s.buffers) {
    if (p.is_output) continue;
    const FusedNode& f = s.kernels[static_cast<size_t>(p.producer)];
    const SchedulerNode* writer = nullptr;
    size_t writer_nest = 0;
    for (size_t nest = 0; nest < f.nests.size(); ++nest) {
      for (int id : f.nests[nest].nodes) {
        if (s.nodes[static_cast<size_t>(id)].write.buffer == p.buffer) {
          writer = &s.nodes[static_cast<size_t>(id)];
          writer_nest = nest;
        }
      }
    }
    const auto& rs = readers[p.buffer];
    p.elided = writer != nullptr && !writer->is_reduction() && !rs.empty() &&
               std::all_of(rs.begin(), rs.end(), [&](const auto& r) {
                 return r.first == p.producer && r.second == writer_nest;
               });
  }

  // Buffers that live within one outer iteration become per-iteration local arrays.
  for (auto& p : s.buffers) {
    if (!options.localize || p.is_output || p.elided) continue;
    const FusedNode& f = s.kernels[static_cast<size_t>(p.producer)];
    const auto& rs = readers[p.buffer];
    if (f.outer.empty() || rs.empty() ||
        !std::all_of(rs.begin(), rs.end(), [&](const auto& r) { return r.first == p.producer; })) {
      continue;
    }
    // Cost: a per-iteration slice is written and read exactly as often as the buffer would
    // be, but in registers or L1, with no allocation and no write-back to memory; it is
    // never more expensive, so every buffer that can be localized is.
    const int64_t slice = local_slice(s, f, p.buffer);
    const auto* computed = graph.find_buffer(p.buffer);
    const int64_t bytes = slice * static_cast<int64_t>(dtype_size(computed->dtype));
    if (slice <= 0) continue;
    if (bytes > options.max_local_bytes) {
      p.local_reason = "its slice of " + std::to_string(bytes) + " bytes per outer iteration " +
                       "exceeds the " + std::to_string(options.max_local_bytes) +
                       "-byte stack budget";
      continue;
    }
    p.localized = true;
    p.local_elements = slice;
    p.local_reason = slice == 1 ? "one element per outer iteration: a register"
                                : "lives within one outer iteration: a local array of " +
                                      std::to_string(slice) + " elements instead of " +
                                      std::to_string(p.bytes) + " bytes in memory";
  }

  if (options.in_place_reuse) plan_in_place_reuse(s);

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
  s.peak_bytes = allocated_peak(s);
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
