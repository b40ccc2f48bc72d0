// Proposition 7.1 against brute force: on random DAGs with random sequences of merges, the
// ancestor-set test must say "cycle" exactly when contracting the merged groups really makes
// the quotient graph cyclic.
#include <gtest/gtest.h>

#include <random>

#include "scheduler/cycle_check.h"

namespace stax::scheduler {
namespace {

bool quotient_has_cycle(const std::vector<std::set<int>>& preds, const std::vector<int>& group) {
  const size_t n = preds.size();
  std::vector<std::set<int>> succ(n);
  std::vector<int> indegree(n, 0);
  std::set<int> groups(group.begin(), group.end());
  for (size_t v = 0; v < n; ++v) {
    for (int p : preds[v]) {
      const int gp = group[static_cast<size_t>(p)];
      const int gv = group[v];
      if (gp != gv && succ[static_cast<size_t>(gp)].insert(gv).second)
        ++indegree[static_cast<size_t>(gv)];
    }
  }
  std::vector<int> ready;
  for (int g : groups) {
    if (indegree[static_cast<size_t>(g)] == 0) ready.push_back(g);
  }
  size_t seen = 0;
  while (!ready.empty()) {
    const int g = ready.back();
    ready.pop_back();
    ++seen;
    for (int s : succ[static_cast<size_t>(g)]) {
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
  }
  return seen != groups.size();
}

TEST(CycleCheck, MatchesBruteForceOnRandomGraphs) {
  std::mt19937 rng(7);
  int cycles_seen = 0;
  int merges_done = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 12);
    std::vector<std::set<int>> preds(static_cast<size_t>(n));
    for (int v = 1; v < n; ++v) {
      for (int u = 0; u < v; ++u) {
        if (rng() % 4 == 0) preds[static_cast<size_t>(v)].insert(u);
      }
    }
    CycleChecker checker(preds);
    std::vector<int> group(static_cast<size_t>(n));
    for (int v = 0; v < n; ++v) group[static_cast<size_t>(v)] = v;
    for (int step = 0; step < 2 * n; ++step) {
      const int a = static_cast<int>(rng() % static_cast<unsigned>(n));
      const int b = static_cast<int>(rng() % static_cast<unsigned>(n));
      if (group[static_cast<size_t>(a)] == group[static_cast<size_t>(b)]) continue;
      std::vector<int> merged = group;
      const int ga = group[static_cast<size_t>(a)];
      const int gb = group[static_cast<size_t>(b)];
      for (int& g : merged) {
        if (g == gb) g = ga;
      }
      const bool expected = quotient_has_cycle(preds, merged);
      ASSERT_EQ(checker.would_create_cycle(a, b), expected)
          << "trial " << trial << " merging " << a << " and " << b;
      if (expected) {
        ++cycles_seen;
        continue;
      }
      checker.merge(a, b);
      EXPECT_EQ(checker.group_of(b), checker.group_of(a));
      group = merged;
      ++merges_done;
    }
  }
  // The random cases exercised both answers.
  EXPECT_GT(cycles_seen, 50);
  EXPECT_GT(merges_done, 500);
}

TEST(CycleCheck, PathThroughThirdNode) {
  // 0 -> 1 -> 2 and 0 -> 2: merging 0 and 2 would put 1 on a cycle.
  std::vector<std::set<int>> preds = {{}, {0}, {0, 1}};
  CycleChecker checker(preds);
  EXPECT_TRUE(checker.would_create_cycle(0, 2));
  EXPECT_FALSE(checker.would_create_cycle(0, 1));
  EXPECT_FALSE(checker.would_create_cycle(1, 2));
}

}  // namespace
}  // namespace stax::scheduler
