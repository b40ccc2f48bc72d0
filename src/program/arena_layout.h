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

struct ArenaLayout {
  std::vector<int64_t> offsets;  // per request, multiples of `alignment`
  int64_t bytes = 0;             // the arena's size
};

// Requests whose lifetimes intersect get disjoint ranges of their sizes rounded up to
// `alignment`.
ArenaLayout layout_arena(const std::vector<ArenaRequest>& requests, int64_t alignment = 64);

}  // namespace stax::program
