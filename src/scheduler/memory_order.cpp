// Step 5 of Section 7.6 (see memory_order.h).
#include "scheduler/memory_order.h"

#include <algorithm>
#include <queue>
#include <set>
#include <stdexcept>
#include <utility>

namespace stax::scheduler {

namespace {

// What the strategies look at for each node: the buffers it writes and the distinct buffers of
// other nodes it reads.
struct NodeBuffers {
  std::vector<std::vector<int>> writes;
  std::vector<std::vector<int>> reads;
  std::vector<std::vector<int>> successors;
  std::vector<int> indegree;
};

NodeBuffers node_buffers(const MemoryDag& dag) {
  const auto n = static_cast<size_t>(dag.num_nodes);
  NodeBuffers nb;
  nb.writes.assign(n, {});
  nb.reads.assign(n, {});
  for (size_t b = 0; b < dag.buffers.size(); ++b) {
    const MemoryDag::Buffer& buf = dag.buffers[b];
    nb.writes.at(static_cast<size_t>(buf.producer)).push_back(static_cast<int>(b));
    std::set<int> readers(buf.readers.begin(), buf.readers.end());
    for (int r : readers) {
      if (r != buf.producer) nb.reads.at(static_cast<size_t>(r)).push_back(static_cast<int>(b));
    }
  }
  const std::vector<std::vector<int>> preds = dag.predecessors();
  nb.successors.assign(n, {});
  nb.indegree.assign(n, 0);
  for (size_t v = 0; v < n; ++v) {
    nb.indegree[v] = static_cast<int>(preds[v].size());
    for (int p : preds[v]) nb.successors[static_cast<size_t>(p)].push_back(static_cast<int>(v));
  }
  return nb;
}

void check_complete(const MemoryDag& dag, const std::vector<int>& order) {
  if (order.size() != static_cast<size_t>(dag.num_nodes)) {
    throw std::logic_error("memory order: the nodes form a cycle");
  }
}

}  // namespace

std::vector<std::vector<int>> MemoryDag::predecessors() const {
  std::vector<std::set<int>> preds(static_cast<size_t>(num_nodes));
  for (const Buffer& b : buffers) {
    for (int r : b.readers) {
      if (r != b.producer) preds.at(static_cast<size_t>(r)).insert(b.producer);
    }
  }
  for (const auto& [before, after] : extra_edges) {
    if (before != after) preds.at(static_cast<size_t>(after)).insert(before);
  }
  std::vector<std::vector<int>> out;
  for (const auto& p : preds) out.emplace_back(p.begin(), p.end());
  return out;
}

namespace {

// Each node's position in `order`, checked to be a permutation.
std::vector<int> positions(const MemoryDag& dag, const std::vector<int>& order) {
  const auto n = static_cast<size_t>(dag.num_nodes);
  if (order.size() != n) throw std::invalid_argument("simulate_peak: order misses nodes");
  std::vector<int> position(n, -1);
  for (size_t t = 0; t < n; ++t) {
    const auto v = static_cast<size_t>(order[t]);
    if (v >= n || position[v] != -1) throw std::invalid_argument("simulate_peak: not an order");
    position[v] = static_cast<int>(t);
  }
  return position;
}

// The step of each buffer's last reader (its producer's if none; the last step for an output).
std::vector<int> last_steps(const MemoryDag& dag, const std::vector<int>& position) {
  std::vector<int> last(dag.buffers.size());
  for (size_t k = 0; k < dag.buffers.size(); ++k) {
    const MemoryDag::Buffer& b = dag.buffers[k];
    last[k] = position[static_cast<size_t>(b.producer)];
    for (int r : b.readers) last[k] = std::max(last[k], position[static_cast<size_t>(r)]);
    if (b.is_output) last[k] = dag.num_nodes - 1;
  }
  return last;
}

}  // namespace

std::vector<int> in_place_choices(const MemoryDag& dag, const std::vector<int>& order) {
  std::vector<int> taken_from(dag.buffers.size(), -1);
  if (dag.may_take.empty()) return taken_from;
  // Each node's buffers that may take another's storage, in increasing number, and each one's
  // candidates in preference order.
  std::vector<std::vector<int>> candidates(dag.buffers.size());
  for (auto [buffer, old] : dag.may_take) candidates.at(static_cast<size_t>(buffer)).push_back(old);
  std::vector<std::vector<int>> writes(static_cast<size_t>(dag.num_nodes));
  for (size_t k = 0; k < dag.buffers.size(); ++k) {
    if (!candidates[k].empty()) {
      writes.at(static_cast<size_t>(dag.buffers[k].producer)).push_back(static_cast<int>(k));
    }
  }
  const std::vector<int> position = positions(dag, order);
  const std::vector<int> last = last_steps(dag, position);
  std::vector<char> taken(dag.buffers.size(), 0);
  for (size_t t = 0; t < order.size(); ++t) {
    for (int k : writes[static_cast<size_t>(order[t])]) {
      const MemoryDag::Buffer& mine = dag.buffers[static_cast<size_t>(k)];
      for (int old : candidates[static_cast<size_t>(k)]) {
        const auto o = static_cast<size_t>(old);
        if (taken[o] || last[o] != static_cast<int>(t) ||
            dag.buffers[o].producer == mine.producer) {
          continue;
        }
        // An output takes only a buffer with storage of its own: that buffer is then allocated
        // as the output, which a buffer continuing a third one's storage cannot be.
        if (mine.is_output && taken_from[o] >= 0) continue;
        taken[o] = 1;
        taken_from[static_cast<size_t>(k)] = old;
        break;
      }
    }
  }
  return taken_from;
}

std::vector<int64_t> live_bytes(const MemoryDag& dag, const std::vector<int>& order) {
  const auto n = static_cast<size_t>(dag.num_nodes);
  const std::vector<int> position = positions(dag, order);
  std::vector<int> last = last_steps(dag, position);
  // A buffer written in place continues the storage of the one it takes (whose producer ran
  // earlier): the storage of a chain is its first buffer's, live to the last one's last use.
  const std::vector<int> taken_from = in_place_choices(dag, order);
  std::vector<int> storage(dag.buffers.size());
  std::vector<size_t> by_def(dag.buffers.size());
  for (size_t k = 0; k < by_def.size(); ++k) by_def[k] = k;
  std::stable_sort(by_def.begin(), by_def.end(), [&](size_t x, size_t y) {
    return position[static_cast<size_t>(dag.buffers[x].producer)] <
           position[static_cast<size_t>(dag.buffers[y].producer)];
  });
  for (size_t k : by_def) {
    storage[k] =
        taken_from[k] < 0 ? static_cast<int>(k) : storage[static_cast<size_t>(taken_from[k])];
    const auto root = static_cast<size_t>(storage[k]);
    last[root] = std::max(last[root], last[k]);
  }
  // Live bytes change by +b at def(v) and by -b after last(v).
  std::vector<int64_t> change(n + 1, 0);
  for (size_t k = 0; k < dag.buffers.size(); ++k) {
    if (storage[k] != static_cast<int>(k)) continue;
    const MemoryDag::Buffer& b = dag.buffers[k];
    const int def = position[static_cast<size_t>(b.producer)];
    change[static_cast<size_t>(def)] += b.bytes;
    change[static_cast<size_t>(last[k]) + 1] -= b.bytes;
  }
  std::vector<int64_t> live(n, 0);
  int64_t total = 0;
  for (size_t t = 0; t < n; ++t) {
    total += change[t];
    live[t] = total;
  }
  return live;
}

int64_t simulate_peak(const MemoryDag& dag, const std::vector<int>& order) {
  const std::vector<int64_t> live = live_bytes(dag, order);
  int64_t peak = 0;
  for (int64_t l : live) peak = std::max(peak, l);
  return peak;
}

std::vector<int> min_increment_order(const MemoryDag& dag) {
  NodeBuffers nb = node_buffers(dag);
  // Readers of each buffer not yet placed (its producer excluded).
  std::vector<int> unplaced_readers(dag.buffers.size(), 0);
  for (const auto& reads : nb.reads) {
    for (int b : reads) ++unplaced_readers[static_cast<size_t>(b)];
  }
  auto increment = [&](int v) {
    int64_t delta = 0;
    for (int b : nb.writes[static_cast<size_t>(v)]) {
      const MemoryDag::Buffer& buf = dag.buffers[static_cast<size_t>(b)];
      // A buffer no later node reads is gone after this step.
      if (buf.is_output || unplaced_readers[static_cast<size_t>(b)] > 0) delta += buf.bytes;
    }
    for (int b : nb.reads[static_cast<size_t>(v)]) {
      const MemoryDag::Buffer& buf = dag.buffers[static_cast<size_t>(b)];
      if (!buf.is_output && unplaced_readers[static_cast<size_t>(b)] == 1) delta -= buf.bytes;
    }
    return delta;
  };
  std::set<int> ready;
  for (int v = 0; v < dag.num_nodes; ++v) {
    if (nb.indegree[static_cast<size_t>(v)] == 0) ready.insert(v);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    int best = *ready.begin();
    int64_t best_increment = increment(best);
    for (int v : ready) {
      const int64_t inc = increment(v);
      if (inc < best_increment) {
        best = v;
        best_increment = inc;
      }
    }
    ready.erase(best);
    order.push_back(best);
    for (int b : nb.reads[static_cast<size_t>(best)]) --unplaced_readers[static_cast<size_t>(b)];
    for (int s : nb.successors[static_cast<size_t>(best)]) {
      if (--nb.indegree[static_cast<size_t>(s)] == 0) ready.insert(s);
    }
  }
  check_complete(dag, order);
  return order;
}

std::vector<int> breadth_first_order(const MemoryDag& dag) {
  NodeBuffers nb = node_buffers(dag);
  const std::vector<std::vector<int>> preds = dag.predecessors();
  std::vector<int> position(static_cast<size_t>(dag.num_nodes), -1);
  // (latest position of a predecessor, node): smallest first.
  std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>> ready;
  for (int v = 0; v < dag.num_nodes; ++v) {
    if (nb.indegree[static_cast<size_t>(v)] == 0) ready.push({-1, v});
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int v = ready.top().second;
    ready.pop();
    position[static_cast<size_t>(v)] = static_cast<int>(order.size());
    order.push_back(v);
    for (int s : nb.successors[static_cast<size_t>(v)]) {
      if (--nb.indegree[static_cast<size_t>(s)] != 0) continue;
      int latest = -1;
      for (int p : preds[static_cast<size_t>(s)]) {
        latest = std::max(latest, position[static_cast<size_t>(p)]);
      }
      ready.push({latest, s});
    }
  }
  check_complete(dag, order);
  return order;
}

std::vector<int> depth_first_order(const MemoryDag& dag) {
  const NodeBuffers nb = node_buffers(dag);
  const auto n = static_cast<size_t>(dag.num_nodes);
  std::vector<int64_t> size(n, 0);
  for (size_t v = 0; v < n; ++v) {
    for (int b : nb.writes[v]) size[v] += dag.buffers[static_cast<size_t>(b)].bytes;
    for (int b : nb.reads[v]) size[v] += dag.buffers[static_cast<size_t>(b)].bytes;
  }
  auto by_size = [&](int x, int y) {
    return std::pair(size[static_cast<size_t>(x)], x) < std::pair(size[static_cast<size_t>(y)], y);
  };
  std::vector<std::vector<int>> preds = dag.predecessors();
  for (auto& p : preds) std::sort(p.begin(), p.end(), by_size);
  std::vector<int> sinks;
  for (size_t v = 0; v < n; ++v) {
    if (nb.successors[v].empty()) sinks.push_back(static_cast<int>(v));
  }
  std::sort(sinks.begin(), sinks.end(), by_size);
  // Iterative post-order: long chains must not overflow the stack.
  std::vector<char> state(n, 0);  // 0 unvisited, 1 on the stack, 2 placed
  std::vector<int> order;
  for (int sink : sinks) {
    std::vector<std::pair<int, size_t>> stack{{sink, 0}};
    state[static_cast<size_t>(sink)] = 1;
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      const auto& p = preds[static_cast<size_t>(v)];
      if (next < p.size()) {
        const int u = p[next++];
        if (state[static_cast<size_t>(u)] == 0) {
          state[static_cast<size_t>(u)] = 1;
          stack.push_back({u, 0});
        } else if (state[static_cast<size_t>(u)] == 1) {
          throw std::logic_error("memory order: the nodes form a cycle");
        }
        continue;
      }
      state[static_cast<size_t>(v)] = 2;
      order.push_back(v);
      stack.pop_back();
    }
  }
  check_complete(dag, order);
  return order;
}

MemoryOrder choose_memory_order(const MemoryDag& dag) {
  std::vector<std::pair<std::string, std::vector<int>>> orders;
  std::vector<int> original(static_cast<size_t>(dag.num_nodes));
  for (int v = 0; v < dag.num_nodes; ++v) original[static_cast<size_t>(v)] = v;
  orders.emplace_back("original", original);
  orders.emplace_back("minimum-peak-first", min_increment_order(dag));
  orders.emplace_back("breadth-first", breadth_first_order(dag));
  orders.emplace_back("depth-first", depth_first_order(dag));
  MemoryOrder result;
  for (size_t k = 0; k < orders.size(); ++k) {
    result.candidates.push_back({orders[k].first, simulate_peak(dag, orders[k].second)});
    if (result.candidates[k].peak < result.candidates[result.chosen].peak) result.chosen = k;
  }
  result.order = orders[result.chosen].second;
  std::string peaks;
  for (const OrderCandidate& c : result.candidates) {
    peaks += (peaks.empty() ? "" : ", ") + c.strategy + " " + std::to_string(c.peak);
  }
  const OrderCandidate& chosen = result.candidates[result.chosen];
  result.reason = result.chosen == 0
                      ? "original order kept: no strategy lowers its simulated peak of " +
                            std::to_string(chosen.peak) + " bytes (" + peaks + ")"
                      : chosen.strategy + " order: simulated peak " + std::to_string(chosen.peak) +
                            " bytes against " + std::to_string(result.candidates[0].peak) +
                            " in the original order (" + peaks + ")";
  return result;
}

}  // namespace stax::scheduler
