// The peak-memory condition of can_fuse (line 3 of Algorithm 7.1, Section 7.3): horizontal
// fusion must not "extend excessively the lifetime of the input the two share, which would
// significantly raise peak memory". Stax checks the peak itself rather than a distance: each
// round of greedy fusion simulates its groups in their order with Definition 7.5, and a
// horizontal pair is accepted only if the same simulation with the two merged into one group
// gives no higher peak.
//
// Where the merged group runs: as early as it can without moving anything else, which is where
// the earlier of the two ran unless the later one depends on groups between them; then it runs
// right after the last of those, and the groups between that depend on the earlier one wait
// until it has run. Every other group keeps its place. (This is the order the schedule's
// topological sort by first member gives, restricted to the groups between the two.)
//
// Only the steps between the two change, so a merge is evaluated in the size of that stretch:
// the steps outside it keep their live bytes (prefix and suffix maxima of the round's profile),
// and inside it only the buffers the groups there read or write change their lifetimes. Where
// one of those may be written in place of another or have its storage taken (peak_model.h),
// which choices the simulation makes depends on the whole order: such a merge is simulated in
// full (simulate_peak over the merged order).
//
// The model is the schedule's (peak_model.h: predicted_storage_dag over the round's groups).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scheduler/memory_order.h"

namespace stax::scheduler {

// `dag` with nodes x and y merged into one, numbered min(x, y); the nodes numbered above
// max(x, y) move down by one.
MemoryDag merge_nodes(const MemoryDag& dag, int x, int y);

// Definition 7.5 over one round's groups, and over the same groups with a pair merged.
// Not thread-safe: merged_peak reuses scratch space.
class MergePeak {
 public:
  // The nodes of `dag` are numbered in the order that breaks ties (the groups' first members);
  // their order is the topological sort that takes the smallest ready number first.
  explicit MergePeak(MemoryDag dag);

  const std::vector<int>& order() const { return order_; }
  const MemoryDag& dag() const { return dag_; }
  int64_t peak() const { return peak_; }
  // The simulated peak with nodes x and y merged (placed as above); nullopt when one reaches
  // the other, so that no order runs them as one node (Proposition 7.1).
  std::optional<int64_t> merged_peak(int x, int y) const;
  // merged_peak when it exceeds peak(), else nullopt; bounded cheaply first when the later of
  // the two depends on nothing between them (the common case).
  std::optional<int64_t> raised_peak(int x, int y) const;
  // The order merged_peak simulates, numbered as merge_nodes(dag, x, y) numbers the nodes
  // (for tests: simulate_peak over it gives merged_peak).
  std::optional<std::vector<int>> merged_order(int x, int y) const;

 private:
  // The nodes at steps s1..s2 of the order in their merged order, the node at s1 standing for
  // the merged node and the node at s2 left out; nullopt when the one at s1 reaches the other.
  std::optional<std::vector<int>> merged_stretch(int s1, int s2) const;
  // Stamps of the current query (desc: reached from the node at s1; anc: reaches the one at
  // s2; both only between them).
  bool marked(const std::vector<int>& marks, int v) const {
    return marks[static_cast<size_t>(v)] == stamp_;
  }

  MemoryDag dag_;
  std::vector<int> order_;
  std::vector<int> step_;  // node -> step
  std::vector<std::vector<int>> preds_;
  std::vector<std::vector<int>> writes_;  // node -> buffers it writes
  std::vector<std::vector<int>> reads_;   // node -> buffers it reads (distinct)
  std::vector<int> def_;                  // buffer -> step of its producer
  std::vector<int> last_;                 // buffer -> step of its last reader (def if none)
  std::vector<int64_t> live_;             // step -> live bytes
  std::vector<int64_t> prefix_max_;       // step -> max of live_ up to it
  std::vector<int64_t> suffix_max_;       // step -> max of live_ from it
  int64_t peak_ = 0;

  mutable int stamp_ = 0;
  mutable std::vector<int> desc_;
  mutable std::vector<int> anc_;
  mutable std::vector<int> new_step_;      // node -> step in the merged order (when stamped)
  mutable std::vector<int> touched_;       // buffer -> stamp
  mutable std::vector<int> new_def_;       // buffer -> step (-1: produced outside the stretch)
  mutable std::vector<int> new_last_;      // buffer -> last reader's step inside the stretch
  mutable std::vector<int> touched_list_;  // buffers of the current query
  mutable std::vector<int64_t> change_;    // live-byte changes over the stretch
  // Buffers that take or may give storage in place (MemoryDag::may_take).
  std::vector<char> in_place_;
  bool any_in_place_ = false;
  // Whether a node at steps s1..s2 reads or writes such a buffer.
  bool stretch_touches_in_place(int s1, int s2) const;
};

}  // namespace stax::scheduler
