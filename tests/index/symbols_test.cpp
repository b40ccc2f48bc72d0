// Size symbols in the index algebra (issue 33, point 1): division by products of sizes, bounds
// and sign proofs within a domain of symbolic extents, the rewrites a merged loop over
// [s0, s1] needs, and a randomized check against brute force that simplify() keeps every value,
// bounds() contains every value and is_nonnegative() proves nothing false, for every value of
// the symbols that their facts allow.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <stdexcept>

#include "index/expr.h"
#include "test_util.h"

namespace stax::index {
namespace {

const Expr s0 = Expr::var("s0");
const Expr s1 = Expr::var("s1");

// The loops of a contiguous [s0, s1, 768] tensor, s0 in [1, 64], s1 in [2, 4096].
Domain tensor_domain() {
  return Domain({{"i0", s0}, {"i1", s1}, {"i2", Expr(768)}},
                {{"s0", {1, 64, 1, 8}}, {"s1", {2, 4096, 1, 128}}});
}

TEST(SizeSymbols, DivisorsArePositiveConstantsOrProductsOfSizes) {
  EXPECT_NO_THROW(floordiv(i0, s1));
  EXPECT_NO_THROW(mod(i0, 4 * s0 * s1));
  EXPECT_THROW(floordiv(i0, s1 + 1), std::invalid_argument);
  EXPECT_THROW(mod(i0, -2 * s1), std::invalid_argument);
  EXPECT_THROW(floordiv(i0, Expr(0)), std::invalid_argument);
  EXPECT_EQ(floordiv(s1, s1), Expr(1));
  EXPECT_EQ(mod(s1, s1), Expr(0));
  EXPECT_EQ(to_string(floordiv(i0 + i1, 4 * s1)), "((i0 + i1) // (4*s1))");
}

TEST(SizeSymbols, DomainsRefuseFactsNoSizeHas) {
  EXPECT_THROW(Domain({}, {{"s0", {-1, 5, 1, 2}}}), std::invalid_argument);
  EXPECT_THROW(Domain({}, {{"s0", {6, 5, 1, 6}}}), std::invalid_argument);
  EXPECT_THROW(Domain({{"s0", Expr(4)}}, {{"s0", {1, 5, 1, 2}}}), std::invalid_argument);
}

TEST(SizeSymbols, BoundsUseTheSymbolsRanges) {
  const Domain d = tensor_domain();
  auto b = bounds(768 * s1 * i0 + 768 * i1 + i2, d);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->lo, 0);
  EXPECT_EQ(b->hi, 768 * 4096 * 63 + 768 * 4095 + 767);
  auto q = bounds(floordiv(i1, s0), d);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->lo, 0);
  EXPECT_EQ(q->hi, 4095);
  auto m = bounds(mod(i2, s0), d);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->hi, 63);
  EXPECT_FALSE(bounds(i0 + Expr::var("unknown"), d).has_value());
}

TEST(SizeSymbols, LoopsCompareWithTheirOwnExtents) {
  const Domain d = tensor_domain();
  // Interval bounds alone cannot see i1 < s1: both range up to 4095.
  EXPECT_EQ(is_nonnegative(s1 - 1 - i1, d), Truth::kProved);
  EXPECT_EQ(is_nonnegative(s1 * s0 - 1 - (s1 * i0 + i1), d), Truth::kProved);
  EXPECT_EQ(is_nonnegative(s1 - 2 - i1, d), Truth::kUnknown);
  EXPECT_EQ(is_nonnegative(i0 - 64, d), Truth::kRefuted);
  EXPECT_EQ(is_nonnegative(s0 - 1, d), Truth::kProved);
}

// Products of large symbols overflow an interval's upper end; their signs still prove them
// nonnegative (arange(1, 768 * s0 * s1 + 1)'s count), and nothing negative is proved so.
TEST(SizeSymbols, SignsProveProductsWhoseBoundsOverflow) {
  const SizeSymbol big{2, (int64_t{1} << 31) - 1, 1, 64};
  const Domain d({}, {{"a", big}, {"b", big}});
  const Expr a = Expr::var("a"), b = Expr::var("b");
  EXPECT_FALSE(bounds(768 * a * b, d).has_value());
  EXPECT_EQ(is_nonnegative(768 * a * b, d), Truth::kProved);
  EXPECT_EQ(is_nonnegative(768 * a * b + a + 3, d), Truth::kProved);
  EXPECT_NE(is_nonnegative(768 * a * b - a * a * b, d), Truth::kProved);
  EXPECT_NE(is_nonnegative(-768 * a * b, d), Truth::kProved);
}

TEST(SizeSymbols, SimplifyDividesByProductsOfSizes) {
  const Domain d = tensor_domain();
  EXPECT_EQ(simplify(floordiv(s1 * i0 + i1, s1), d), i0);
  EXPECT_EQ(simplify(mod(s1 * i0 + i1, s1), d), i1);
  EXPECT_EQ(simplify(floordiv(768 * s1 * i0 + 768 * i1 + i2, 768 * s1), d), i0);
  EXPECT_EQ(simplify(floordiv(floordiv(i2 * s0, s1), 4), d), floordiv(s0 * i2, 4 * s1));
  // Nothing is proved about i2 against s1: the division stays.
  EXPECT_EQ(simplify(floordiv(i2, s1), d), floordiv(i2, s1));
  // A symbol pinned to one value is that value.
  const Domain pinned({{"i0", s0}}, {{"s0", {16, 16, 1, 16}}});
  EXPECT_EQ(simplify(floordiv(i0, s0) + s0, pinned), Expr(16));
}

TEST(SizeSymbols, MergedLoopsOverSymbolicExtentsRecombine) {
  // c0 runs over the merged loops [s0, s1]; the old variables are c0 // s1 and c0 % s1.
  const Domain merged({{"c0", s0 * s1}, {"i2", Expr(768)}},
                      {{"s0", {1, 64, 1, 8}}, {"s1", {2, 4096, 1, 128}}});
  Expr index = 768 * s1 * i0 + 768 * i1 + i2;
  Expr rewritten = substitute(index, {{"i0", floordiv(c0, s1)}, {"i1", mod(c0, s1)}});
  EXPECT_EQ(simplify(rewritten, merged), 768 * c0 + i2);
  EXPECT_EQ(equal_within(rewritten, 768 * c0 + i2, merged), Truth::kProved);
  EXPECT_EQ(equal_within(rewritten, 768 * c0 + i2 + 1, merged), Truth::kRefuted);
  EXPECT_EQ(equal_within(i0, floordiv(c0, s1), merged), Truth::kUnknown);
}

TEST(SizeSymbols, StridesOverSymbolicExtents) {
  const Domain d = tensor_domain();
  Expr index = 768 * s1 * i0 + 768 * i1 + i2;
  EXPECT_EQ(symbolic_stride(index, "i0", d), std::optional<Expr>(768 * s1));
  EXPECT_EQ(stride(index, "i1", d), std::optional<int64_t>(768));
  EXPECT_EQ(stride(index, "i0", d), std::nullopt);
  EXPECT_EQ(symbolic_stride(i0 * i1, "i0", d), std::nullopt);
}

TEST(SizeSymbols, GeneratedCodeDividesBySizes) {
  const Domain d = tensor_domain();
  EXPECT_EQ(to_cpp(floordiv(i1, s0), d), "(i1 / s0)");
  EXPECT_EQ(to_cpp(mod(i1 - 5, 2 * s0), d), "stax_mod(i1 - 5, (2*s0))");
}

TEST(SizeSymbols, LoopsOverSymbolicExtentsCollapseAndMerge) {
  const SymbolTable sizes{{"s0", {1, 64, 1, 8}}, {"s1", {2, 4096, 1, 128}}};
  const std::vector<LoopVar> loops{{"i0", s0}, {"i1", s1}, {"i2", Expr(768)}};
  // Definition 7.2's normalization of a contiguous [s0, s1, 768] access: one loop.
  const CollapsedIndex c = collapse(768 * s1 * i0 + 768 * i1 + i2, loops, "c", sizes);
  EXPECT_EQ(c.index, c0);
  ASSERT_EQ(c.vars.size(), 1u);
  EXPECT_EQ(c.vars[0].extent, 768 * s0 * s1);
  // A transposed read keeps its loops apart (i1 steps by 768*s0, not by i2's 768).
  const MergedLoops t = merge_loops(loops, {768 * s0 * i1 + 768 * i0 + i2}, "x", sizes);
  EXPECT_EQ(t.vars.size(), 3u);
  // Only the last two loops of [s0, s1, 768] read as [s0, s1*768] merge.
  const MergedLoops inner = merge_loops(loops, {768 * s1 * s1 * i0 + 768 * i1 + i2}, "x", sizes);
  ASSERT_EQ(inner.vars.size(), 2u);
  EXPECT_EQ(inner.vars[1].extent, 768 * s1);
  // A loop that may run no iteration (s2 may be 0) merges with nothing.
  const SymbolTable maybe_empty{{"s2", {0, 64, 1, 8}}};
  const Expr s2 = Expr::var("s2");
  const MergedLoops e = merge_loops({{"i0", s2}, {"i1", Expr(4)}}, {4 * i0 + i1}, "x", maybe_empty);
  EXPECT_EQ(e.vars.size(), 2u);
  EXPECT_THROW(static_extent(c.vars[0], "a stage"), std::invalid_argument);
  EXPECT_EQ(static_extent(LoopVar{"i", Expr(5)}, "a stage"), 5);
}

TEST(SizeSymbols, MergedLoopsWalkTheSameSpaceInOrderForEverySize) {
  // merge_loops over [i0: s0, i1: s1, i2: 3] for random indices: for every value of the
  // symbols, the new loops enumerate exactly the old points in the old order, and every index
  // keeps its value.
  const SymbolTable sizes{{"s0", {1, 4, 1, 2}}, {"s1", {1, 4, 1, 3}}};
  const std::vector<LoopVar> loops{{"i0", s0}, {"i1", s1}, {"i2", Expr(3)}};
  std::mt19937 rng(20261207);
  auto pick = [&rng](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  const Expr strides_row_major[3] = {3 * s1, Expr(3), Expr(1)};
  int merged = 0;
  for (int trial = 0; trial < 60; ++trial) {
    // A row-major form with loops dropped, permuted or scaled now and then, and a division.
    Expr index = Expr(pick(3));
    for (int k = 0; k < 3; ++k) {
      if (pick(5) == 0) continue;
      Expr stride = strides_row_major[pick(4) == 0 ? pick(3) : k];
      index = index + stride * Expr::var("i" + std::to_string(k));
    }
    if (pick(4) == 0) index = floordiv(index, s1);
    if (pick(5) == 0) index = mod(index, 2 * s0);
    const MergedLoops m = merge_loops(loops, {index}, "m", sizes);
    merged += m.vars.size() < 3;
    const Expr rewritten = substitute(index, m.old_to_new);
    for (int64_t v0 = 1; v0 <= 4; ++v0) {
      for (int64_t v1 = 1; v1 <= 4; ++v1) {
        const std::map<std::string, int64_t> at{{"s0", v0}, {"s1", v1}};
        // The old points in order.
        std::vector<std::array<int64_t, 3>> old_points;
        for (int64_t a = 0; a < v0; ++a) {
          for (int64_t b = 0; b < v1; ++b) {
            for (int64_t c = 0; c < 3; ++c) old_points.push_back({a, b, c});
          }
        }
        // The new points in order, mapped back.
        std::vector<int64_t> extents;
        for (const LoopVar& l : m.vars) extents.push_back(evaluate(l.extent, at));
        std::vector<int64_t> point(extents.size(), 0);
        size_t seen = 0;
        bool done = false;
        for (int64_t e : extents) done = done || e == 0;
        while (!done) {
          std::map<std::string, int64_t> values = at;
          for (size_t k = 0; k < extents.size(); ++k) values[m.vars[k].name] = point[k];
          ASSERT_LT(seen, old_points.size()) << to_string(index);
          const auto& old = old_points[seen++];
          for (int k = 0; k < 3; ++k) {
            const std::string name = "i" + std::to_string(k);
            auto it = m.old_to_new.find(name);
            ASSERT_NE(it, m.old_to_new.end()) << name;
            ASSERT_EQ(evaluate(it->second, values), old[k]) << to_string(index) << " " << name;
          }
          std::map<std::string, int64_t> old_values = at;
          for (int k = 0; k < 3; ++k) old_values["i" + std::to_string(k)] = old[k];
          ASSERT_EQ(evaluate(rewritten, values), evaluate(index, old_values)) << to_string(index);
          size_t k = extents.size();
          while (k > 0 && ++point[k - 1] == extents[k - 1]) point[--k] = 0;
          done = k == 0;
        }
        ASSERT_EQ(seen, old_points.size()) << to_string(index);
      }
    }
  }
  EXPECT_GT(merged, 20);  // the row-major forms merge
}

// --- brute force -------------------------------------------------------------------------

class SymbolicGen {
 public:
  explicit SymbolicGen(uint32_t seed) : rng_(seed) {}

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }

  Expr divisor() {
    switch (uniform(0, 5)) {
      case 0:
        return s0;
      case 1:
        return s1;
      case 2:
        return 2 * s1;
      case 3:
        return s0 * s1;
      default:
        return Expr(uniform(1, 6));
    }
  }

  Expr leaf() {
    switch (uniform(0, 6)) {
      case 0:
        return i0;
      case 1:
        return i1;
      case 2:
        return i2;
      case 3:
        return s0;
      case 4:
        return s1;
      default:
        return Expr(uniform(-4, 4));
    }
  }

  Expr expr(int depth) {
    if (depth <= 0 || chance(20)) return leaf();
    switch (uniform(0, 8)) {
      case 0:
      case 1:
        return expr(depth - 1) + expr(depth - 1);
      case 2:
        return expr(depth - 1) - expr(depth - 1);
      case 3:
        return uniform(-3, 5) * expr(depth - 1);
      case 4:
        return (chance(50) ? s1 : s0) * expr(depth - 1);
      case 5:
        return floordiv(expr(depth - 1), divisor());
      case 6:
        return mod(expr(depth - 1), divisor());
      default: {
        // The row-major form of [s0, s1, 3] and its split by a symbolic divisor, the pattern
        // merged loops and views produce.
        Expr row = 3 * s1 * i0 + 3 * i1 + i2;
        Expr d = divisor();
        if (chance(50)) return d * floordiv(row, d) + mod(row, d);
        return chance(50) ? floordiv(row, d) : mod(row, d);
      }
    }
  }

 private:
  std::mt19937 rng_;
};

TEST(SizeSymbols, SimplifyBoundsAndProofsHoldForEverySize) {
  // i0 < s0, i1 < s1, i2 < 3; s0 in [1, 4], s1 in [1, 5] (so every value is checked).
  const Domain d({{"i0", s0}, {"i1", s1}, {"i2", Expr(3)}},
                 {{"s0", {1, 4, 1, 2}}, {"s1", {1, 5, 1, 3}}});
  SymbolicGen gen(20261206);
  int simplified = 0;
  int proved = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Expr e = gen.expr(4);
    const Expr s = simplify(e, d);
    simplified += s != e;
    const auto b = bounds(e, d);
    const Truth sign = is_nonnegative(e, d);
    proved += sign == Truth::kProved;
    bool any_negative = false;
    bool any_point = false;
    for (int64_t v0 = 1; v0 <= 4; ++v0) {
      for (int64_t v1 = 1; v1 <= 5; ++v1) {
        for (int64_t p0 = 0; p0 < v0; ++p0) {
          for (int64_t p1 = 0; p1 < v1; ++p1) {
            for (int64_t p2 = 0; p2 < 3; ++p2) {
              const std::map<std::string, int64_t> at{
                  {"s0", v0}, {"s1", v1}, {"i0", p0}, {"i1", p1}, {"i2", p2}};
              const int64_t value = evaluate(e, at);
              any_point = true;
              any_negative = any_negative || value < 0;
              ASSERT_EQ(evaluate(s, at), value) << to_string(e) << " -> " << to_string(s);
              if (b) {
                ASSERT_LE(b->lo, value) << to_string(e);
                ASSERT_GE(b->hi, value) << to_string(e);
              }
            }
          }
        }
      }
    }
    ASSERT_TRUE(any_point);
    if (sign == Truth::kProved) {
      ASSERT_FALSE(any_negative) << to_string(e);
    }
    if (sign == Truth::kRefuted) {
      ASSERT_TRUE(any_negative) << to_string(e);
    }
  }
  // The generator reaches the rules: many expressions change, many signs are proved.
  EXPECT_GT(simplified, 100);
  EXPECT_GT(proved, 40);
}

}  // namespace
}  // namespace stax::index
