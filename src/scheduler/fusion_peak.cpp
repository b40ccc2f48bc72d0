// Definition 7.5 for horizontal fusion (see fusion_peak.h).
#include "scheduler/fusion_peak.h"

#include <algorithm>
#include <queue>
#include <stdexcept>

namespace stax::scheduler {

MemoryDag merge_nodes(const MemoryDag& dag, int x, int y) {
  const int keep = std::min(x, y);
  const int drop = std::max(x, y);
  auto renumber = [&](int v) { return v == drop ? keep : v > drop ? v - 1 : v; };
  MemoryDag out;
  out.num_nodes = dag.num_nodes - (x == y ? 0 : 1);
  for (MemoryDag::Buffer b : dag.buffers) {
    b.producer = renumber(b.producer);
    for (int& r : b.readers) r = renumber(r);
    out.buffers.push_back(b);
  }
  for (auto [before, after] : dag.extra_edges) {
    out.extra_edges.push_back({renumber(before), renumber(after)});
  }
  out.may_take = dag.may_take;
  return out;
}

MergePeak::MergePeak(MemoryDag dag) : dag_(std::move(dag)) {
  const auto n = static_cast<size_t>(dag_.num_nodes);
  preds_ = dag_.predecessors();
  std::vector<std::vector<int>> succs(n);
  std::vector<int> indegree(n, 0);
  for (size_t v = 0; v < n; ++v) {
    indegree[v] = static_cast<int>(preds_[v].size());
    for (int p : preds_[v]) succs[static_cast<size_t>(p)].push_back(static_cast<int>(v));
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (size_t v = 0; v < n; ++v) {
    if (indegree[v] == 0) ready.push(static_cast<int>(v));
  }
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    order_.push_back(v);
    for (int s : succs[static_cast<size_t>(v)]) {
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push(s);
    }
  }
  if (order_.size() != n) throw std::logic_error("merge peak: the groups form a cycle");
  step_.assign(n, 0);
  for (size_t t = 0; t < n; ++t) step_[static_cast<size_t>(order_[t])] = static_cast<int>(t);

  writes_.assign(n, {});
  reads_.assign(n, {});
  def_.assign(dag_.buffers.size(), 0);
  last_.assign(dag_.buffers.size(), 0);
  for (size_t b = 0; b < dag_.buffers.size(); ++b) {
    const MemoryDag::Buffer& buf = dag_.buffers[b];
    writes_[static_cast<size_t>(buf.producer)].push_back(static_cast<int>(b));
    def_[b] = step_[static_cast<size_t>(buf.producer)];
    last_[b] = def_[b];
    for (int r : buf.readers) {
      auto& reads = reads_[static_cast<size_t>(r)];
      if (reads.empty() || reads.back() != static_cast<int>(b))
        reads.push_back(static_cast<int>(b));
      last_[b] = std::max(last_[b], step_[static_cast<size_t>(r)]);
    }
    if (buf.is_output) last_[b] = static_cast<int>(n) - 1;
  }
  live_ = n == 0 ? std::vector<int64_t>{} : live_bytes(dag_, order_);
  prefix_max_ = live_;
  suffix_max_ = live_;
  for (size_t t = 1; t < n; ++t) prefix_max_[t] = std::max(prefix_max_[t], prefix_max_[t - 1]);
  for (size_t t = n; t-- > 1;) suffix_max_[t - 1] = std::max(suffix_max_[t - 1], suffix_max_[t]);
  peak_ = n == 0 ? 0 : prefix_max_.back();

  in_place_.assign(dag_.buffers.size(), 0);
  for (auto [buffer, old] : dag_.may_take) {
    in_place_.at(static_cast<size_t>(buffer)) = 1;
    in_place_.at(static_cast<size_t>(old)) = 1;
  }
  any_in_place_ = !dag_.may_take.empty();
  desc_.assign(n, 0);
  anc_.assign(n, 0);
  new_step_.assign(n, 0);
  touched_.assign(dag_.buffers.size(), 0);
  new_def_.assign(dag_.buffers.size(), -1);
  new_last_.assign(dag_.buffers.size(), -1);
}

bool MergePeak::stretch_touches_in_place(int s1, int s2) const {
  if (!any_in_place_) return false;
  for (int t = s1; t <= s2; ++t) {
    const auto v = static_cast<size_t>(order_[static_cast<size_t>(t)]);
    for (const auto* list : {&writes_[v], &reads_[v]}) {
      for (int b : *list) {
        if (in_place_[static_cast<size_t>(b)]) return true;
      }
    }
  }
  return false;
}

std::optional<std::vector<int>> MergePeak::merged_stretch(int s1, int s2) const {
  const int first = order_[static_cast<size_t>(s1)];
  const int second = order_[static_cast<size_t>(s2)];
  // What `first` reaches between the two, and whether it reaches `second`.
  desc_[static_cast<size_t>(first)] = stamp_;
  for (int t = s1 + 1; t <= s2; ++t) {
    const int v = order_[static_cast<size_t>(t)];
    for (int p : preds_[static_cast<size_t>(v)]) {
      if (marked(desc_, p)) {
        desc_[static_cast<size_t>(v)] = stamp_;
        break;
      }
    }
  }
  if (marked(desc_, second)) return std::nullopt;
  // What reaches `second` between the two (none of it reached from `first`, or `first` would
  // reach `second`).
  anc_[static_cast<size_t>(second)] = stamp_;
  int ancestors = 0;
  for (int t = s2; t > s1; --t) {
    const int v = order_[static_cast<size_t>(t)];
    if (!marked(anc_, v)) continue;
    for (int p : preds_[static_cast<size_t>(v)]) {
      if (step_[static_cast<size_t>(p)] > s1 && !marked(anc_, p)) {
        anc_[static_cast<size_t>(p)] = stamp_;
        ++ancestors;
      }
    }
  }
  std::vector<int> stretch;
  stretch.reserve(static_cast<size_t>(s2 - s1));
  std::vector<int> waiting;  // reached from `first`, before the merged node can run
  bool placed = ancestors == 0;
  if (placed) stretch.push_back(first);
  for (int t = s1 + 1; t < s2; ++t) {
    const int v = order_[static_cast<size_t>(t)];
    if (!placed && marked(desc_, v)) {
      waiting.push_back(v);
      continue;
    }
    stretch.push_back(v);
    if (!placed && marked(anc_, v) && --ancestors == 0) {
      placed = true;
      stretch.push_back(first);
      stretch.insert(stretch.end(), waiting.begin(), waiting.end());
      waiting.clear();
    }
  }
  return stretch;
}

std::optional<int64_t> MergePeak::raised_peak(int x, int y) const {
  if (x == y) return std::nullopt;
  int s1 = step_.at(static_cast<size_t>(x));
  int s2 = step_.at(static_cast<size_t>(y));
  if (s1 > s2) std::swap(s1, s2);
  // The common case, cheaply: when the later one depends on nothing between the two, the
  // merged node runs at s1 and nothing else moves, so each step between holds at most what it
  // held plus what the later one writes (what it reads can only die sooner). In-place
  // writes keep the bound: a pair the move breaks is one the later one's buffer was in, whose
  // bytes the bound adds in full, and pairs it makes only lower the live bytes.
  const int second = order_[static_cast<size_t>(s2)];
  bool moves_up_alone = true;
  for (int p : preds_[static_cast<size_t>(second)]) {
    moves_up_alone = moves_up_alone && step_[static_cast<size_t>(p)] < s1;
  }
  if (moves_up_alone) {
    int64_t bound = 0;
    for (int t = s1; t < s2; ++t) bound = std::max(bound, live_[static_cast<size_t>(t)]);
    for (int b : writes_[static_cast<size_t>(second)]) {
      bound += dag_.buffers[static_cast<size_t>(b)].bytes;
    }
    if (bound <= peak_) return std::nullopt;
  }
  const auto merged = merged_peak(x, y);
  if (!merged || *merged <= peak_) return std::nullopt;
  return merged;
}

std::optional<int64_t> MergePeak::merged_peak(int x, int y) const {
  if (x == y) return peak_;
  int s1 = step_.at(static_cast<size_t>(x));
  int s2 = step_.at(static_cast<size_t>(y));
  if (s1 > s2) std::swap(s1, s2);
  const int first = order_[static_cast<size_t>(s1)];
  const int second = order_[static_cast<size_t>(s2)];
  const auto n = static_cast<int>(order_.size());
  if (stretch_touches_in_place(s1, s2)) {
    const auto order = merged_order(x, y);
    if (!order) return std::nullopt;
    return simulate_peak(merge_nodes(dag_, x, y), *order);
  }
  const int64_t outside = std::max(s1 > 0 ? prefix_max_[static_cast<size_t>(s1 - 1)] : 0,
                                   s2 + 1 < n ? suffix_max_[static_cast<size_t>(s2 + 1)] : 0);
  ++stamp_;
  const auto stretch = merged_stretch(s1, s2);
  if (!stretch) return std::nullopt;
  // The stretch's new steps s1 .. s2 - 1; `second` runs as part of `first`.
  for (size_t k = 0; k < stretch->size(); ++k) {
    new_step_[static_cast<size_t>((*stretch)[k])] = s1 + static_cast<int>(k);
  }
  new_step_[static_cast<size_t>(second)] = new_step_[static_cast<size_t>(first)];
  touched_list_.clear();
  auto touch = [&](int b) {
    if (touched_[static_cast<size_t>(b)] == stamp_) return;
    touched_[static_cast<size_t>(b)] = stamp_;
    new_def_[static_cast<size_t>(b)] = -1;
    new_last_[static_cast<size_t>(b)] = -1;
    touched_list_.push_back(b);
  };
  for (int t = s1; t <= s2; ++t) {
    const int v = order_[static_cast<size_t>(t)];
    const int at = new_step_[static_cast<size_t>(v)];
    for (int b : writes_[static_cast<size_t>(v)]) {
      touch(b);
      new_def_[static_cast<size_t>(b)] = at;
    }
    for (int b : reads_[static_cast<size_t>(v)]) {
      touch(b);
      new_last_[static_cast<size_t>(b)] = std::max(new_last_[static_cast<size_t>(b)], at);
    }
  }
  // The buffers no node of the stretch touches are live over all of it or none of it: those
  // live at s1 before the merge, less the touched ones live there.
  int64_t untouched = live_[static_cast<size_t>(s1)];
  const int end = s2 - 1;  // the stretch's last step after the merge
  change_.assign(static_cast<size_t>(s2 - s1) + 1, 0);
  for (int b : touched_list_) {
    const MemoryDag::Buffer& buf = dag_.buffers[static_cast<size_t>(b)];
    if (def_[static_cast<size_t>(b)] <= s1 && s1 <= last_[static_cast<size_t>(b)]) {
      untouched -= buf.bytes;
    }
    const int def = new_def_[static_cast<size_t>(b)] >= 0 ? new_def_[static_cast<size_t>(b)]
                                                          : def_[static_cast<size_t>(b)];
    const int last = buf.is_output || last_[static_cast<size_t>(b)] > s2
                         ? end
                         : std::max(def, new_last_[static_cast<size_t>(b)]);
    const int lo = std::max(def, s1);
    if (last < lo) continue;
    change_[static_cast<size_t>(lo - s1)] += buf.bytes;
    change_[static_cast<size_t>(last - s1) + 1] -= buf.bytes;
  }
  int64_t live = untouched;
  int64_t inside = 0;
  for (int t = s1; t <= end; ++t) {
    live += change_[static_cast<size_t>(t - s1)];
    inside = std::max(inside, live);
  }
  return std::max(outside, inside);
}

std::optional<std::vector<int>> MergePeak::merged_order(int x, int y) const {
  int s1 = step_.at(static_cast<size_t>(x));
  int s2 = step_.at(static_cast<size_t>(y));
  if (s1 > s2) std::swap(s1, s2);
  if (s1 == s2) return order_;
  ++stamp_;
  const auto stretch = merged_stretch(s1, s2);
  if (!stretch) return std::nullopt;
  const int keep = std::min(x, y);
  const int drop = std::max(x, y);
  const int first = order_[static_cast<size_t>(s1)];
  auto renumber = [&](int v) { return v == first ? keep : v > drop ? v - 1 : v; };
  std::vector<int> out;
  for (int t = 0; t < s1; ++t) out.push_back(renumber(order_[static_cast<size_t>(t)]));
  for (int v : *stretch) out.push_back(renumber(v));
  for (size_t t = static_cast<size_t>(s2) + 1; t < order_.size(); ++t) {
    out.push_back(renumber(order_[t]));
  }
  return out;
}

}  // namespace stax::scheduler
