// The arena of Section 7.5's inference pool: every intermediate of a program at a fixed
// offset in one block, which the program keeps across calls (stax_kernel_scratch.h), so a
// call allocates nothing and touches pages that are already mapped.
//
// The offsets come from a tree of temporal splits (children whose lifetimes are pairwise
// disjoint share one address range) and spatial splits (children side by side). Buffers are
// inserted by decreasing size, longer-lived first; each tries the existing temporal splits
// before opening new space: a greedy approximation of dynamic storage allocation, which is
// NP-hard in general.
#pragma once

#include <cstdint>
#include <vector>

namespace stax::program {

struct ArenaRequest {
  int64_t bytes = 0;
  int first = 0;  // the steps of its lifetime, both included
  int last = 0;
};

// A node of the layout's tree as sizes (issue 33): a buffer's aligned bytes, the largest of a
// temporal split's items or the sum of a spatial split's columns. Lifetimes alone decide
// which buffers share addresses, so the same tree is a valid placement at any sizes: a program
// over size symbols evaluates it per call (program/host_printer.cpp) for the sizes it meets.
struct ArenaNode {
  enum class Kind { Buffer, Max, Sum };
  Kind kind = Kind::Buffer;
  int request = -1;           // Buffer: the request
  std::vector<int> children;  // Max, Sum: earlier nodes
};

struct ArenaLayout {
  std::vector<int64_t> offsets;  // per request, multiples of `alignment`
  int64_t bytes = 0;             // the arena's size
  std::vector<ArenaNode> nodes;  // children before their parents
  // Per request: the nodes whose sizes sum to its offset (the columns before it on its path).
  std::vector<std::vector<int>> offset_terms;
  std::vector<int> bytes_terms;  // the nodes whose sizes sum to the arena's size
};

// The offsets and size of `layout`'s tree when the requests have these bytes (one per
// request; the tree is the one `layout_arena` built from other sizes).
ArenaLayout evaluate_arena(const ArenaLayout& layout, const std::vector<int64_t>& bytes,
                           int64_t alignment = 64);

// Requests whose lifetimes intersect get disjoint ranges of their sizes rounded up to
// `alignment`.
ArenaLayout layout_arena(const std::vector<ArenaRequest>& requests, int64_t alignment = 64);

}  // namespace stax::program
