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

std::vector<int64_t> live_bytes(const MemoryDag& dag, const std::vector<int>& order) {
  const auto n = static_cast<size_t>(dag.num_nodes);
  if (order.size() != n) throw std::invalid_argument("simulate_peak: order misses nodes");
  std::vector<int> position(n, -1);
  for (size_t t = 0; t < n; ++t) {
    const auto v = static_cast<size_t>(order[t]);
    if (v >= n || position[v] != -1) throw std::invalid_argument("simulate_peak: not an order");
    position[v] = static_cast<int>(t);
  }
  // Live bytes change by +b at def(v) and by -b after last(v).
  std::vector<int64_t> change(n + 1, 0);
  for (const MemoryDag::Buffer& b : dag.buffers) {
    const int def = position[static_cast<size_t>(b.producer)];
    int last = def;
    for (int r : b.readers) last = std::max(last, position[static_cast<size_t>(r)]);
    if (b.is_output) last = static_cast<int>(n) - 1;
    change[static_cast<size_t>(def)] += b.bytes;
    change[static_cast<size_t>(last) + 1] -= b.bytes;
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
