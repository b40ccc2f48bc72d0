// Step 5 of Section 7.6: the order of the fused nodes, chosen by peak memory (Section 7.5).
// Finding the order of least peak is NP-complete (Proposition 7.4), so Stax simulates four
// candidates (the original topological order and one order from each of three greedy
// strategies) with Definition 7.5 and keeps the one of smallest peak. The original order is a
// candidate, so the chosen order is never worse than it.
//
// The strategies work on a MemoryDag (nodes, the buffers each writes and reads), so that they
// can be tested on random graphs against the brute-force optimum.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stax::scheduler {

struct MemoryDag {
  struct Buffer {
    int64_t bytes = 0;
    int producer = 0;          // node index
    std::vector<int> readers;  // node indices (the producer may be among them)
    bool is_output = false;    // live until the graph returns
  };
  int num_nodes = 0;
  std::vector<Buffer> buffers;
  // Orderings besides the reads of buffers (none yet; a node that must follow another).
  std::vector<std::pair<int, int>> extra_edges;  // (before, after)
  // Section 7.5's in-place reuse (peak_model.h): (buffer, a buffer whose storage it may take),
  // each buffer's candidates in its preference order. In a given order a buffer takes the first
  // that its producer reads for the last time and no other buffer has taken
  // (in_place_choices); it then adds no storage but keeps the taken one's storage live to its
  // own last reader.
  std::vector<std::pair<int, int>> may_take;

  // Each node's predecessors, without repeats.
  std::vector<std::vector<int>> predecessors() const;
};

// For each buffer, the buffer whose storage it takes in place in `order` (-1: its own). The
// nodes are visited in `order`, a node's buffers in increasing number, each buffer's
// candidates in its preference order: the rule step 6 applies to the final order
// (in_place_reuse.h), here for any order.
std::vector<int> in_place_choices(const MemoryDag& dag, const std::vector<int>& order);

// Definition 7.5: the largest total size of the live buffers over the steps of `order` (a
// topological order of all nodes). A buffer is live from its producer to its last reader
// (to the end for an output), both included; one written in place of another extends that
// one's storage to its own last reader instead of adding its own.
int64_t simulate_peak(const MemoryDag& dag, const std::vector<int>& order);
// The same simulation step by step: the total size of the live set L(τ) at each step τ of
// `order` (simulate_peak is its maximum).
std::vector<int64_t> live_bytes(const MemoryDag& dag, const std::vector<int>& order);

// Among the ready nodes, the one of smallest increment (bytes it writes minus bytes whose
// last reader it is); ties by node index.
std::vector<int> min_increment_order(const MemoryDag& dag);
// Among the ready nodes, the one whose predecessors ran earliest (the latest of their
// positions); ties by node index.
std::vector<int> breadth_first_order(const MemoryDag& dag);
// Depth-first from the nodes nothing reads, each node's predecessors visited in increasing
// size (the bytes it writes plus the bytes it reads), a node placed after its predecessors.
std::vector<int> depth_first_order(const MemoryDag& dag);

struct OrderCandidate {
  std::string strategy;  // "original", "minimum-peak-first", "breadth-first", "depth-first"
  int64_t peak = 0;
};

struct MemoryOrder {
  std::vector<int> order;                  // the chosen order
  std::vector<OrderCandidate> candidates;  // in the order they were tried
  size_t chosen = 0;                       // index into candidates
  std::string reason;                      // for explain
};

// The candidate of smallest simulated peak; the original order (0, 1, ..., n-1, which must be
// topological) wins ties.
MemoryOrder choose_memory_order(const MemoryDag& dag);

}  // namespace stax::scheduler
