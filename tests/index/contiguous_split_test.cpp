// Tests of contiguous_split(): the split point of a loop that indices divide, on the views
// that produce it (heads merged back into a hidden dimension) and, as a property over every
// permutation of small 3-D tensors read through a flattened view, that the inner part of the
// split walks every index with one constant stride, checked against brute-force evaluation.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "index/expr.h"

namespace stax::index {
namespace {

const Expr x0 = Expr::var("x0");
const Expr x1 = Expr::var("x1");

// [512, 1024] written contiguously, read from [4, 16, 128, 64] (batch, head, token, dim):
// attention's output with its heads merged for the output projection.
TEST(ContiguousSplit, HeadsMergedIntoTheHiddenDimension) {
  const RangeMap r{{"x0", 512}, {"x1", 1024}};
  const Expr store = 1024 * x0 + x1;
  const Expr load =
      131072 * floordiv(x0, 128) + 8192 * floordiv(x1, 64) + 64 * mod(x0, 128) + mod(x1, 64);
  EXPECT_EQ(contiguous_split({store, load}, "x1", r), std::optional<int64_t>(64));
  // The outer loop is divided too, by 128.
  EXPECT_EQ(contiguous_split({store, load}, "x0", r), std::optional<int64_t>(128));
}

// The same over a sequence length known only at run time (issue 33): [s0, 512] written
// contiguously, read from [8, s0, 64] (a T5 encoder's attention output, heads merged). The
// split loop's extent is a constant; the other loop's and the load's strides are symbolic.
TEST(ContiguousSplit, HeadsMergedOverASymbolicLength) {
  const Domain r({{"x0", Expr::var("s0")}, {"x1", Expr(512)}},
                 SymbolTable{{"s0", {1, 4096, 1, 128}}});
  const Expr s0 = Expr::var("s0");
  const Expr store = 512 * x0 + x1;
  const Expr load = Expr(64) * s0 * floordiv(x1, 64) + 64 * x0 + mod(x1, 64);
  EXPECT_EQ(contiguous_split({store, load}, "x1", r), std::optional<int64_t>(64));
  // The symbolic loop itself is not split.
  EXPECT_EQ(contiguous_split({store, load}, "x0", r), std::nullopt);
}

TEST(ContiguousSplit, TheGcdOfThePeriods) {
  const RangeMap r{{"x0", 256}};
  EXPECT_EQ(contiguous_split({floordiv(x0, 64), mod(x0, 32)}, "x0", r), std::optional<int64_t>(32));
  // 2*x0 // 64 repeats every 32 steps of x0.
  EXPECT_EQ(contiguous_split({floordiv(2 * x0, 64)}, "x0", r), std::optional<int64_t>(32));
  // A nested division: the inner one's period decides.
  EXPECT_EQ(contiguous_split({mod(floordiv(x0, 8), 8)}, "x0", r), std::optional<int64_t>(8));
}

TEST(ContiguousSplit, NothingToSplit) {
  const RangeMap r{{"x0", 100}, {"x1", 64}};
  // No division of x0.
  EXPECT_EQ(contiguous_split({64 * x0 + x1, floordiv(x1, 8)}, "x0", r), std::nullopt);
  // A period that does not divide the extent.
  EXPECT_EQ(contiguous_split({mod(x0, 64)}, "x0", r), std::nullopt);
  // A period as large as the loop: nothing divides it within its range.
  EXPECT_EQ(contiguous_split({mod(x1 + 64 * x0, 64)}, "x1", r), std::nullopt);
  EXPECT_EQ(contiguous_split({x0}, "x9", r), std::nullopt);  // not a loop
}

// Every permutation of a 3-D tensor [a, b, c] read through the flattened view of its permuted
// shape, split at the returned period: over every point of the split loops, one step of the
// inner part moves each index by the same amount.
TEST(ContiguousSplit, PermutedViewsWalkTheInnerPartWithOneStride) {
  int splits = 0;
  for (const std::array<int64_t, 3> dims :
       {std::array<int64_t, 3>{2, 3, 4}, std::array<int64_t, 3>{4, 4, 2},
        std::array<int64_t, 3>{3, 8, 8}}) {
    std::array<int, 3> perm{0, 1, 2};
    do {
      // Permuted shape p = dims[perm], read as [p0, p1 * p2] (loops y0, y1); element
      // (y0, y1 // p2, y1 % p2) of the permuted tensor sits at source position s[perm[k]].
      const std::array<int64_t, 3> p{dims[perm[0]], dims[perm[1]], dims[perm[2]]};
      const std::array<int64_t, 3> contiguous{dims[1] * dims[2], dims[2], 1};
      const Expr y0 = Expr::var("y0"), y1 = Expr::var("y1");
      const std::array<Expr, 3> coord{y0, floordiv(y1, p[2]), mod(y1, p[2])};
      Expr load(0);
      for (int k = 0; k < 3; ++k) load = load + Expr(contiguous[perm[k]]) * coord[k];
      const Expr store = Expr(p[1] * p[2]) * y0 + y1;
      const RangeMap r{{"y0", p[0]}, {"y1", p[1] * p[2]}};
      const std::optional<int64_t> d = contiguous_split({store, load}, "y1", r);
      if (!d) continue;
      ++splits;
      const Expr hi = Expr::var("hi"), lo = Expr::var("lo");
      const std::map<std::string, Expr> sub{{"y1", Expr(*d) * hi + lo}};
      const RangeMap split{{"y0", p[0]}, {"hi", p[1] * p[2] / *d}, {"lo", *d}};
      for (const Expr& e : {store, load}) {
        const Expr s = simplify(substitute(e, sub), split);
        std::optional<int64_t> step;
        for (int64_t a = 0; a < p[0]; ++a) {
          for (int64_t h = 0; h < split.at("hi"); ++h) {
            for (int64_t l = 0; l + 1 < *d; ++l) {
              const int64_t delta = evaluate(s, {{"y0", a}, {"hi", h}, {"lo", l + 1}}) -
                                    evaluate(s, {{"y0", a}, {"hi", h}, {"lo", l}});
              if (!step) step = delta;
              EXPECT_EQ(delta, *step) << to_string(s);
            }
          }
        }
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  EXPECT_GT(splits, 0);
}

}  // namespace
}  // namespace stax::index
