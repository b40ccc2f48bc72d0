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

// The choice of docs/symbolic_sizes.md (the tree of the hints evaluated per call, rather than a
// plan per size class): how much larger the evaluated tree is than a layout built for the sizes
// at hand, when every buffer scales with one symbol from its hint (a model's intermediates are
// [s0, ...] sized: same proportions, other length) and when a few do not (static weights'
// gradients beside them).
TEST(ArenaLayout, TheHintsTreeAtOtherSizesAgainstALayoutForThoseSizes) {
  std::mt19937 rng(5);
  for (const bool mixed : {false, true}) {
    double sum = 0;
    double worst = 1;
    const int trials = 300;
    for (int trial = 0; trial < trials; ++trial) {
      std::uniform_int_distribution<int> count(2, 30);
      std::uniform_int_distribution<int> step(0, 20);
      std::uniform_int_distribution<int> length(0, 6);
      std::uniform_int_distribution<int> size_class(0, 4);
      std::uniform_int_distribution<int> scale(1, 64);
      std::vector<ArenaRequest> rs(static_cast<size_t>(count(rng)));
      std::vector<bool> scales(rs.size());
      for (size_t i = 0; i < rs.size(); ++i) {
        rs[i].bytes = int64_t{4096} << (2 * size_class(rng));
        rs[i].first = step(rng);
        rs[i].last = rs[i].first + length(rng);
        scales[i] = !mixed || i % 3 != 0;
      }
      const ArenaLayout built = layout_arena(rs);  // at the hints
      const int64_t factor = scale(rng);           // the symbol at this call over its hint
      std::vector<ArenaRequest> at_call = rs;
      std::vector<int64_t> bytes;
      for (size_t i = 0; i < rs.size(); ++i) {
        at_call[i].bytes = scales[i] ? rs[i].bytes * factor / 8 : rs[i].bytes;
        bytes.push_back(at_call[i].bytes);
      }
      const double ratio = static_cast<double>(evaluate_arena(built, bytes).bytes) /
                           static_cast<double>(layout_arena(at_call).bytes);
      sum += ratio;
      worst = std::max(worst, ratio);
    }
    std::cout << "the hints' tree at other sizes / a layout for those sizes ("
              << (mixed ? "a third of the buffers static" : "every buffer scaling") << "): mean "
              << sum / trials << ", worst " << worst << "\n";
    // Every buffer scaling alike keeps the tree's proportions: the same layout, scaled.
    if (!mixed) {
      EXPECT_LT(worst, 1.0 + 1e-9);
    }
  }
}

}  // namespace
}  // namespace stax::program
