// Randomized property tests (fixed seeds): simplify() never changes a value within the
// ranges, and collapse() / merge_loops() are order-preserving bijections of the loop space
// under which the rewritten indices keep their values.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>

#include "index/expr.h"
#include "test_util.h"

namespace stax::index {
namespace {

using Point = std::map<std::string, int64_t>;

// These loops have constant extents (symbolic ones: symbols_test.cpp).
int64_t extent(const LoopVar& l) {
  return static_extent(l, "property test");
}

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }

  // Variables with random extents (sometimes 1).
  RangeMap ranges(int n) {
    RangeMap r;
    for (int i = 0; i < n; ++i) r["i" + std::to_string(i)] = chance(15) ? 1 : uniform(2, 12);
    return r;
  }

  Expr var(const RangeMap& r) {
    auto it = r.begin();
    std::advance(it, uniform(0, static_cast<int64_t>(r.size()) - 1));
    return Expr::var(it->first);
  }

  // A random expression tree over the variables of r.
  Expr expr(const RangeMap& r, int depth) {
    if (depth <= 0 || chance(20)) return chance(75) ? var(r) : Expr(uniform(-5, 5));
    switch (uniform(0, 9)) {
      case 0:
      case 1:
        return expr(r, depth - 1) + expr(r, depth - 1);
      case 2:
        return expr(r, depth - 1) - expr(r, depth - 1);
      case 3:
        return uniform(-4, 8) * expr(r, depth - 1);
      case 4:
        return expr(r, depth - 2) * expr(r, depth - 2);
      case 5:
      case 6:
        return floordiv(expr(r, depth - 1), uniform(1, 9));
      case 7:
        return mod(expr(r, depth - 1), uniform(1, 9));
      case 8: {
        // A split-and-recombine pattern, possibly with a perturbed coefficient.
        Expr e = expr(r, depth - 1);
        int64_t c = uniform(2, 8);
        int64_t k = uniform(1, 3);
        int64_t kc = chance(80) ? k * c : k * c + 1;
        return kc * floordiv(e, c) + k * mod(e, c);
      }
      default: {
        // A row-major linear form with a divisible-coefficient divisor.
        Expr lin = linear(r);
        int64_t c = uniform(2, 16);
        return chance(50) ? floordiv(lin, c) : mod(lin, c);
      }
    }
  }

  // A row-major linear index over the variables in order, with random perturbations.
  Expr linear(const RangeMap& r) {
    Expr e(chance(30) ? uniform(-3, 3) : 0);
    int64_t stride = 1;
    for (auto it = r.rbegin(); it != r.rend(); ++it) {
      if (!chance(15)) e += stride * Expr::var(it->first);
      stride *= it->second;
    }
    return e;
  }

  Point point(const RangeMap& r) {
    Point p;
    for (const auto& [name, n] : r) p[name] = uniform(0, n - 1);
    return p;
  }

  // A loop nest with a small iteration space.
  std::vector<LoopVar> loops(int max_loops) {
    std::vector<LoopVar> l;
    int n = static_cast<int>(uniform(1, max_loops));
    for (int i = 0; i < n; ++i) {
      l.push_back({"i" + std::to_string(i), chance(20) ? 1 : uniform(2, 6)});
    }
    return l;
  }

  // An index over a loop nest: mostly row-major forms that may merge, sometimes anything.
  Expr loop_index(const std::vector<LoopVar>& loops) {
    RangeMap r;
    for (const LoopVar& l : loops) r[l.name] = extent(l);
    if (chance(25)) return expr(r, 3);
    Expr e(chance(20) ? uniform(0, 5) : 0);
    int64_t stride = chance(20) ? uniform(2, 3) : 1;
    for (size_t k = loops.size(); k-- > 0;) {
      if (!chance(20)) e += stride * Expr::var(loops[k].name);
      stride *= chance(10) ? extent(loops[k]) + 1 : extent(loops[k]);
    }
    if (chance(15)) e = floordiv(e, uniform(2, 4));
    return e;
  }

 private:
  std::mt19937 rng_;
};

RangeMap ranges_of(const std::vector<LoopVar>& loops) {
  RangeMap r;
  for (const LoopVar& l : loops) r[l.name] = extent(l);
  return r;
}

// All points of a loop nest in row-major order.
std::vector<Point> enumerate(const std::vector<LoopVar>& loops) {
  std::vector<Point> out(1);
  for (const LoopVar& l : loops) {
    std::vector<Point> next;
    for (const Point& p : out) {
      for (int64_t v = 0; v < l.extent; ++v) {
        Point q = p;
        q[l.name] = v;
        next.push_back(std::move(q));
      }
    }
    out = std::move(next);
  }
  return out;
}

Point map_point(const std::map<std::string, Expr>& old_to_new, const Point& p) {
  Point out;
  for (const auto& [old, e] : old_to_new) out[old] = evaluate(e, p);
  return out;
}

TEST(Property, SimplifyPreservesValues) {
  Gen g(12345);
  for (int i = 0; i < 3000; ++i) {
    RangeMap r = g.ranges(static_cast<int>(g.uniform(1, 4)));
    Expr e = g.expr(r, 4);
    Expr s = simplify(e, r);
    for (int k = 0; k < 24; ++k) {
      Point p = g.point(r);
      ASSERT_EQ(evaluate(e, p), evaluate(s, p))
          << "case " << i << ": " << to_string(e) << " -> " << to_string(s);
    }
    ASSERT_EQ(simplify(s, r), s) << "not idempotent: " << to_string(e) << " -> " << to_string(s);
    auto b = bounds(s, r);
    if (b) {
      Point p = g.point(r);
      int64_t val = evaluate(s, p);
      ASSERT_LE(b->lo, val);
      ASSERT_GE(b->hi, val);
    }
  }
}

TEST(Property, StrideMatchesDifferences) {
  Gen g(777);
  for (int i = 0; i < 1500; ++i) {
    RangeMap r = g.ranges(static_cast<int>(g.uniform(1, 3)));
    Expr e = g.chance(50) ? g.linear(r) : g.expr(r, 3);
    std::string var = g.var(r).as_var().value();
    auto st = stride(e, var, r);
    if (!st || r[var] < 2) continue;
    for (int k = 0; k < 16; ++k) {
      Point p = g.point(r);
      p[var] = g.uniform(0, r[var] - 2);
      Point q = p;
      ++q[var];
      ASSERT_EQ(evaluate(e, q) - evaluate(e, p), *st) << to_string(e) << " along " << var;
    }
  }
}

TEST(Property, CollapseIsAnOrderedBijection) {
  Gen g(4242);
  int merged = 0;
  for (int i = 0; i < 1500; ++i) {
    std::vector<LoopVar> loops = g.loops(4);
    Expr e = g.loop_index(loops);
    CollapseResult c = collapse_with_mapping(e, loops);
    RangeMap old_ranges = ranges_of(loops);
    RangeMap new_ranges = ranges_of(c.collapsed.vars);
    ASSERT_EQ(simplify(c.collapsed.index, new_ranges), c.collapsed.index);
    int64_t used_space = 1;
    for (const LoopVar& l : loops) {
      if (c.old_to_new.count(l.name) != 0) used_space *= extent(l);
    }
    std::vector<Point> points = enumerate(c.collapsed.vars);
    ASSERT_EQ(static_cast<int64_t>(points.size()), used_space) << to_string(e);
    if (c.collapsed.vars.size() < loops.size()) ++merged;
    Point prev;
    for (size_t k = 0; k < points.size(); ++k) {
      Point old = map_point(c.old_to_new, points[k]);
      // Strictly increasing in row-major order of the old variables (hence a bijection).
      std::vector<int64_t> key;
      for (const LoopVar& l : loops) {
        if (old.count(l.name) != 0) key.push_back(old[l.name]);
      }
      if (k > 0) {
        std::vector<int64_t> prev_key;
        for (const LoopVar& l : loops) {
          if (prev.count(l.name) != 0) prev_key.push_back(prev[l.name]);
        }
        ASSERT_LT(prev_key, key) << to_string(e);
      }
      prev = old;
      // Unused variables take any value in range.
      Point full = g.point(old_ranges);
      for (const auto& [name, val] : old) {
        ASSERT_GE(val, 0);
        ASSERT_LT(val, old_ranges[name]);
        full[name] = val;
      }
      ASSERT_EQ(evaluate(e, full), evaluate(c.collapsed.index, points[k]))
          << to_string(e) << " -> " << to_string(c.collapsed.index);
    }
  }
  EXPECT_GT(merged, 300);
}

TEST(Property, MergeLoopsIsAnOrderedBijection) {
  Gen g(99);
  int merged = 0;
  for (int i = 0; i < 1500; ++i) {
    std::vector<LoopVar> loops = g.loops(4);
    std::vector<Expr> indices;
    int n = static_cast<int>(g.uniform(1, 3));
    for (int k = 0; k < n; ++k) indices.push_back(g.loop_index(loops));
    MergedLoops m = merge_loops(loops, indices, "c");
    ASSERT_EQ(m.old_to_new.size(), loops.size());
    if (m.vars.size() < loops.size()) ++merged;
    RangeMap new_ranges = ranges_of(m.vars);
    std::vector<Expr> rewritten;
    for (const Expr& idx : indices) {
      rewritten.push_back(simplify(substitute(idx, m.old_to_new), new_ranges));
    }
    std::vector<Point> old_points = enumerate(loops);
    std::vector<Point> new_points = enumerate(m.vars);
    ASSERT_EQ(old_points.size(), new_points.size());
    for (size_t k = 0; k < new_points.size(); ++k) {
      ASSERT_EQ(map_point(m.old_to_new, new_points[k]), old_points[k]);
      for (size_t j = 0; j < indices.size(); ++j) {
        ASSERT_EQ(evaluate(indices[j], old_points[k]), evaluate(rewritten[j], new_points[k]))
            << to_string(indices[j]) << " -> " << to_string(rewritten[j]);
      }
    }
    // Indices without floordiv/mod stay free of them: merging only takes what they allow.
    for (size_t j = 0; j < indices.size(); ++j) {
      std::string before = to_string(simplify(indices[j], ranges_of(loops)));
      std::string after = to_string(rewritten[j]);
      if (before.find('%') == std::string::npos && before.find("//") == std::string::npos) {
        EXPECT_EQ(after.find('%'), std::string::npos) << before << " -> " << after;
        EXPECT_EQ(after.find("//"), std::string::npos) << before << " -> " << after;
      }
    }
  }
  EXPECT_GT(merged, 300);
}

}  // namespace
}  // namespace stax::index
