// The arena's tree of temporal and spatial splits (program/arena_layout.h): buffers alive at
// the same time never share a byte, on random lifetimes, and the arena's size against M*.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>

#include "program/arena_layout.h"

namespace stax::program {
namespace {

int64_t aligned(int64_t bytes) {
  return (std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
}

void expect_disjoint_when_alive_together(const std::vector<ArenaRequest>& rs,
                                         const ArenaLayout& layout, int trial) {
  ASSERT_EQ(layout.offsets.size(), rs.size());
  for (size_t i = 0; i < rs.size(); ++i) {
    ASSERT_GE(layout.offsets[i], 0);
    EXPECT_EQ(layout.offsets[i] % 64, 0);
    EXPECT_LE(layout.offsets[i] + aligned(rs[i].bytes), layout.bytes);
    for (size_t j = i + 1; j < rs.size(); ++j) {
      const bool together = !(rs[i].last < rs[j].first || rs[j].last < rs[i].first);
      const bool apart = layout.offsets[i] + aligned(rs[i].bytes) <= layout.offsets[j] ||
                         layout.offsets[j] + aligned(rs[j].bytes) <= layout.offsets[i];
      EXPECT_TRUE(!together || apart) << "trial " << trial << ": requests " << i << " and " << j;
    }
  }
}

int64_t live_peak(const std::vector<ArenaRequest>& rs) {
  int64_t peak = 0;
  for (const auto& r : rs) {
    int64_t live = 0;
    for (const auto& o : rs) {
      if (o.first <= r.first && r.first <= o.last) live += aligned(o.bytes);
    }
    peak = std::max(peak, live);
  }
  return peak;
}

TEST(ArenaLayout, BuffersAliveTogetherNeverOverlapAndTheSizeIsReportedAgainstMStar) {
  std::mt19937 rng(11);
  double sum_ratio = 0;
  double worst = 1;
  const int trials = 400;
  for (int trial = 0; trial < trials; ++trial) {
    std::uniform_int_distribution<int> count(1, 40);
    std::uniform_int_distribution<int> step(0, 30);
    std::uniform_int_distribution<int> length(0, 8);
    // Sizes from a few classes, as a model's intermediates come in a few shapes.
    std::uniform_int_distribution<int> size_class(0, 5);
    std::vector<ArenaRequest> rs(static_cast<size_t>(count(rng)));
    for (auto& r : rs) {
      r.bytes = int64_t{100} << (2 * size_class(rng));
      r.first = step(rng);
      r.last = r.first + length(rng);
    }
    const ArenaLayout layout = layout_arena(rs);
    expect_disjoint_when_alive_together(rs, layout, trial);
    const int64_t m_star = live_peak(rs);
    EXPECT_GE(layout.bytes, m_star);
    const double ratio = static_cast<double>(layout.bytes) / static_cast<double>(m_star);
    sum_ratio += ratio;
    worst = std::max(worst, ratio);
  }
  std::cout << "arena on " << trials << " random lifetime sets: size / M* mean "
            << sum_ratio / trials << ", worst " << worst << "\n";
}

// A chain a -> b -> c of equal buffers, each dying after the next is made: a and c share one
// range (a temporal split), b sits beside them (a spatial split).
TEST(ArenaLayout, AChainNeedsTwoBuffersNotThree) {
  const std::vector<ArenaRequest> rs = {{4096, 0, 1}, {4096, 1, 2}, {4096, 2, 3}};
  const ArenaLayout layout = layout_arena(rs);
  EXPECT_EQ(layout.bytes, 8192);
  EXPECT_EQ(layout.offsets[0], layout.offsets[2]);
  EXPECT_NE(layout.offsets[0], layout.offsets[1]);
}

// A small buffer alive beside a large one fits in the large one's range while another large
// buffer is dead: the smaller buffers nest under the large ones instead of opening space.
TEST(ArenaLayout, SmallBuffersNestInsideTheRangeOfALargeOne) {
  const std::vector<ArenaRequest> rs = {
      {8192, 0, 1}, {8192, 4, 5}, {4096, 2, 3}, {4096, 2, 3}, {64, 0, 5}};
  const ArenaLayout layout = layout_arena(rs);
  expect_disjoint_when_alive_together(rs, layout, 0);
  EXPECT_EQ(layout.bytes, 8192 + 64);
}

TEST(ArenaLayout, BadRequestsAreRefused) {
  EXPECT_THROW(layout_arena({{-1, 0, 0}}), std::invalid_argument);
  EXPECT_THROW(layout_arena({{64, 3, 2}}), std::invalid_argument);
  EXPECT_EQ(layout_arena({}).bytes, 0);
}

// Issue 33: the tree, built at one set of sizes (the hints), evaluated at other sizes keeps
// every pair alive together apart; evaluated at the sizes it was built from, it is the layout.
TEST(ArenaLayout, TheTreeEvaluatedAtOtherSizesStaysAValidPlacement) {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 300; ++trial) {
    std::uniform_int_distribution<int> count(1, 30);
    std::uniform_int_distribution<int> step(0, 20);
    std::uniform_int_distribution<int> length(0, 6);
    std::uniform_int_distribution<int64_t> bytes(0, 20000);
    std::vector<ArenaRequest> rs(static_cast<size_t>(count(rng)));
    for (auto& r : rs) {
      r.bytes = bytes(rng);
      r.first = step(rng);
      r.last = r.first + length(rng);
    }
    const ArenaLayout built = layout_arena(rs);
    std::vector<int64_t> same;
    for (const auto& r : rs) same.push_back(r.bytes);
    const ArenaLayout again = evaluate_arena(built, same);
    EXPECT_EQ(again.offsets, built.offsets) << "trial " << trial;
    EXPECT_EQ(again.bytes, built.bytes) << "trial " << trial;
    // Other sizes: each buffer independently smaller or larger, a few empty.
    std::vector<ArenaRequest> other = rs;
    std::vector<int64_t> other_bytes;
    for (auto& r : other) {
      r.bytes = bytes(rng) * (trial % 3 == 0 ? 7 : 1);
      other_bytes.push_back(r.bytes);
    }
    expect_disjoint_when_alive_together(other, evaluate_arena(built, other_bytes), trial);
  }
}

}  // namespace
}  // namespace stax::program
