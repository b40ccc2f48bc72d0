// The one peak-memory model of fusion, step 5 and the schedule (see peak_model.h).
#include "scheduler/peak_model.h"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include "index/shape_exprs.h"
#include "scheduler/fusion_rules.h"
#include "scheduler/in_place_reuse.h"

namespace stax::scheduler {

using index::Expr;

namespace {

// The slice of `buffer` one outer iteration of `f` touches, when every access splits into
// the same function of the outer variables plus an offset of the inner ones; 0 otherwise.
int64_t local_slice(const std::vector<SchedulerNode>& nodes, const FusedNode& f,
                    const std::string& buffer) {
  std::map<std::string, Expr> zero_outer;
  std::set<std::string> outer_vars;
  for (size_t j = 0; j < f.outer.size(); ++j) {
    zero_outer["x" + std::to_string(j)] = Expr(0);
    outer_vars.insert("x" + std::to_string(j));
  }
  std::optional<Expr> common_outer;
  int64_t slice = 0;
  for (int id : f.members()) {
    const SchedulerNode& n = nodes[static_cast<size_t>(id)];
    std::vector<Expr> accesses;
    if (n.write.buffer == buffer) accesses.push_back(n.write.index);
    for (const auto& r : n.reads) {
      if (r.buffer == buffer) accesses.push_back(r.index);
    }
    const Placement p = place(f, n);
    // Issue 33: a slice of symbolic extent has no constant size to hold locally (the outer
    // loops, whatever their extents, are fixed at 0 below).
    for (const index::LoopVar& inner_loop : nest_inner_loops(f, p.nest)) {
      if (!inner_loop.extent.is_constant()) return 0;
    }
    const index::Domain domain = nest_domain(f, p.nest, n.symbols);
    for (const Expr& raw : accesses) {
      const Expr idx = placed_index(f, n, raw, p);
      const Expr inner = index::simplify(index::substitute(idx, zero_outer), domain);
      const Expr outer = idx - inner;
      for (const auto& v : index::free_vars(outer)) {
        if (!outer_vars.count(v)) return 0;
      }
      if (common_outer && *common_outer != outer) return 0;
      common_outer = outer;
      const auto b = index::bounds(inner, domain);
      if (!b || b->lo < 0) return 0;
      slice = std::max(slice, b->hi + 1);
    }
  }
  return slice;
}

}  // namespace

std::vector<StorageDecision> decide_storage(const std::vector<SchedulerNode>& nodes,
                                            const std::vector<FusedNode>& groups,
                                            const std::set<std::string>& outputs,
                                            const StorageOptions& options) {
  std::vector<StorageDecision> decisions;
  std::unordered_map<std::string, size_t> index_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int id : groups[g].members()) {
      const SchedulerNode& n = nodes[static_cast<size_t>(id)];
      StorageDecision d;
      d.buffer = n.write.buffer;
      d.node = id;
      d.size = n.buffer->numel() * Expr(static_cast<int64_t>(dtype_size(n.buffer->dtype)));
      d.bytes = index::value_at_hints(d.size, n.symbols);
      d.group = static_cast<int>(g);
      d.producer = d.group;
      d.input_storage = n.buffer->mutated_input;
      d.is_output = outputs.count(d.buffer) > 0 || !d.input_storage.empty();
      index_of[d.buffer] = decisions.size();
      decisions.push_back(std::move(d));
    }
  }
  // A further result of a call (lowering::ResultOf) is written by the call: it is allocated
  // before the call's group, not its own (which runs nothing).
  for (StorageDecision& d : decisions) {
    const lowering::ExternalCall* call = nodes[static_cast<size_t>(d.node)].buffer->external.get();
    if (call == nullptr || !call->result_of) continue;
    const auto writer = index_of.find(call->result_of->call_buffer);
    if (writer == index_of.end()) {
      throw std::logic_error(d.buffer + " is a result of " + call->result_of->call_buffer +
                             ", which is not scheduled");
    }
    d.producer = decisions[writer->second].producer;
  }
  std::unordered_map<std::string, std::set<std::pair<int, size_t>>> readers;  // (group, nest)
  for (size_t g = 0; g < groups.size(); ++g) {
    const FusedNode& f = groups[g];
    for (size_t nest = 0; nest < f.nests.size(); ++nest) {
      for (int id : f.nests[nest].nodes) {
        for (const auto& r : nodes[static_cast<size_t>(id)].reads) {
          if (index_of.count(r.buffer)) readers[r.buffer].insert({static_cast<int>(g), nest});
        }
      }
    }
  }
  static const std::set<std::pair<int, size_t>> kNoReaders;
  for (StorageDecision& d : decisions) {
    if (d.is_output) continue;
    const auto found = readers.find(d.buffer);
    const auto& rs = found == readers.end() ? kNoReaders : found->second;
    const FusedNode& f = groups[static_cast<size_t>(d.producer)];
    // Elided: written and read only inside one loop nest at the same index.
    const SchedulerNode* writer = nullptr;
    size_t writer_nest = 0;
    for (size_t nest = 0; nest < f.nests.size(); ++nest) {
      for (int id : f.nests[nest].nodes) {
        if (nodes[static_cast<size_t>(id)].write.buffer == d.buffer) {
          writer = &nodes[static_cast<size_t>(id)];
          writer_nest = nest;
        }
      }
    }
    d.elided = writer != nullptr && !writer->is_reduction() && !rs.empty() &&
               std::all_of(rs.begin(), rs.end(), [&](const auto& r) {
                 return r.first == d.producer && r.second == writer_nest;
               });
    // Buffers that live within one outer iteration become per-iteration local arrays.
    if (!options.localize || d.elided || f.outer.empty() || rs.empty() ||
        !std::all_of(rs.begin(), rs.end(), [&](const auto& r) { return r.first == d.producer; })) {
      continue;
    }
    // Cost: a per-iteration slice is written and read exactly as often as the buffer would
    // be, but in registers or L1, with no allocation and no write-back to memory; it is
    // never more expensive, so every buffer that can be localized is.
    const int64_t slice = local_slice(nodes, f, d.buffer);
    const auto* computed = nodes[static_cast<size_t>(d.node)].buffer;
    const int64_t bytes = slice * static_cast<int64_t>(dtype_size(computed->dtype));
    if (slice <= 0) continue;
    if (options.max_local_elements > 0 && slice > options.max_local_elements) {
      d.local_reason = "its slice of " + std::to_string(slice) + " elements per outer iteration " +
                       "is more than the target keeps per thread (" +
                       std::to_string(options.max_local_elements) + ")";
      continue;
    }
    if (bytes > options.max_local_bytes) {
      d.local_reason = "its slice of " + std::to_string(bytes) + " bytes per outer iteration " +
                       "exceeds the " + std::to_string(options.max_local_bytes) +
                       "-byte stack budget";
      continue;
    }
    d.localized = true;
    d.local_elements = slice;
    d.local_reason = slice == 1 ? "one element per outer iteration: a register"
                                : "lives within one outer iteration: a local array of " +
                                      std::to_string(slice) + " elements instead of " +
                                      std::to_string(d.bytes) + " bytes in memory";
  }
  return decisions;
}

MemoryDag storage_dag(const std::vector<SchedulerNode>& nodes, const std::vector<FusedNode>& groups,
                      const std::vector<StorageDecision>& decisions,
                      const InPlaceCandidates& may_take) {
  MemoryDag dag;
  dag.num_nodes = static_cast<int>(groups.size());
  std::unordered_map<std::string, int> buffer_index;
  for (const StorageDecision& d : decisions) {
    MemoryDag::Buffer b;
    // An input written in place is the caller's memory, none of the program's.
    b.bytes = d.stored() && d.input_storage.empty() ? d.bytes : 0;
    b.producer = d.producer;
    b.is_output = d.is_output;
    if (d.group != d.producer) b.readers.push_back(d.group);
    buffer_index[d.buffer] = static_cast<int>(dag.buffers.size());
    dag.buffers.push_back(b);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int id : groups[g].members()) {
      for (const auto& r : nodes[static_cast<size_t>(id)].reads) {
        if (auto it = buffer_index.find(r.buffer); it != buffer_index.end()) {
          auto& readers = dag.buffers[static_cast<size_t>(it->second)].readers;
          if (readers.empty() || readers.back() != static_cast<int>(g)) {
            readers.push_back(static_cast<int>(g));
          }
        }
      }
    }
  }
  for (const auto& [buffer, olds] : may_take) {
    for (const std::string& old : olds) {
      dag.may_take.emplace_back(buffer_index.at(buffer), buffer_index.at(old));
    }
  }
  // Weak dependences order groups without a buffer between them (in-place writes).
  std::unordered_map<int, int> group_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int id : groups[g].members()) group_of[id] = static_cast<int>(g);
  }
  for (auto [before, after] : weak_edges(nodes)) {
    const auto b = group_of.find(before);
    const auto a = group_of.find(after);
    if (b != group_of.end() && a != group_of.end() && b->second != a->second) {
      dag.extra_edges.emplace_back(b->second, a->second);
    }
  }
  return dag;
}

MemoryDag predicted_storage_dag(const std::vector<SchedulerNode>& nodes,
                                const std::vector<FusedNode>& groups,
                                const std::set<std::string>& outputs,
                                const StorageOptions& options) {
  const std::vector<StorageDecision> decisions = decide_storage(nodes, groups, outputs, options);
  const InPlaceCandidates may_take =
      options.in_place_reuse ? in_place_candidates(nodes, groups, decisions) : InPlaceCandidates{};
  return storage_dag(nodes, groups, decisions, may_take);
}

}  // namespace stax::scheduler
