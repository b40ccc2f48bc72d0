// Tests of the individual simplify() rules and of stride().
#include <gtest/gtest.h>

#include "index/expr.h"
#include "test_util.h"

namespace stax::index {
namespace {

const Expr x = Expr::var("x");

TEST(Simplify, ExtentOneVariablesBecomeZero) {
  EXPECT_EQ(simplify(128 * i0 + i1, {{"i0", 1}, {"i1", 128}}), i1);
  EXPECT_EQ(simplify(floordiv(i0 + i1, 2), {{"i0", 1}, {"i1", 1}}), Expr(0));
  EXPECT_EQ(simplify(i0 * i1 + 3, {{"i0", 1}}), Expr(3));
}

TEST(Simplify, FloorDivSplitsDivisibleTerms) {
  RangeMap r{{"i0", 64}, {"i1", 128}};
  EXPECT_EQ(simplify(floordiv(128 * i0 + i1, 128), r), i0);
  EXPECT_EQ(simplify(mod(128 * i0 + i1, 128), r), i1);
  // Without ranges only the divisible part moves out.
  EXPECT_EQ(simplify(floordiv(128 * i0 + i1, 128), {}), i0 + floordiv(i1, 128));
  EXPECT_EQ(simplify(mod(128 * i0 + i1, 128), {}), mod(i1, 128));
  // Negative divisible coefficients are split as well.
  EXPECT_EQ(simplify(floordiv(-4 * x + i1, 4), {}), -x + floordiv(i1, 4));
  // Non-divisible coefficients stay inside.
  EXPECT_EQ(simplify(floordiv(6 * x + i1, 4), {}), floordiv(6 * x + i1, 4));
  // The constant is split too: 9 = 2*4 + 1.
  EXPECT_EQ(simplify(floordiv(4 * x + 9, 4), {}), x + 2);
  EXPECT_EQ(simplify(floordiv(x + 9, 4), {}), floordiv(x + 1, 4) + 2);
  EXPECT_EQ(simplify(mod(x + 9, 4), {}), mod(x + 1, 4));
  EXPECT_EQ(simplify(floordiv(x - 1, 4), {}), floordiv(x + 3, 4) - 1);
}

TEST(Simplify, FloorDivAndModOfSmallOperands) {
  RangeMap r{{"i0", 64}, {"i1", 128}};
  EXPECT_EQ(simplify(floordiv(i1, 128), r), Expr(0));
  EXPECT_EQ(simplify(floordiv(i1, 100), r), floordiv(i1, 100));
  EXPECT_EQ(simplify(mod(i1, 128), r), i1);
  EXPECT_EQ(simplify(mod(i1, 100), r), mod(i1, 100));
  // Operand within one period [m*c, m*c + c - 1].
  EXPECT_EQ(simplify(floordiv(i0 + 128, 64), r), Expr(2));
  EXPECT_EQ(simplify(mod(i0 + 128, 64), r), i0);
  EXPECT_EQ(simplify(floordiv(i0 + 130, 256), r), Expr(0));
  EXPECT_EQ(simplify(mod(i0 + 3, 256), r), i0 + 3);
  // Unknown variables block bound-based rules.
  EXPECT_EQ(simplify(mod(x, 128), r), mod(x, 128));
  // But a mod atom is always within [0, c - 1].
  EXPECT_EQ(simplify(floordiv(mod(x, 16), 16), {}), Expr(0));
  EXPECT_EQ(simplify(mod(mod(x, 16), 32), {}), mod(x, 16));
  EXPECT_EQ(simplify(floordiv(128 * x + mod(x, 128), 128), {}), x);
}

TEST(Simplify, GcdReduction) {
  EXPECT_EQ(simplify(floordiv(4 * x + 8 * i0, 12), {}), floordiv(x + 2 * i0, 3));
  EXPECT_EQ(simplify(floordiv(6 * x + 4, 8), {}), floordiv(3 * x + 2, 4));
  EXPECT_EQ(simplify(mod(4 * x + 8 * i0, 12), {}), 4 * mod(x + 2 * i0, 3));
}

TEST(Simplify, SmallRemainderDropsOut) {
  RangeMap r{{"i0", 10}, {"i1", 8}};
  // floor((8*i0 + i1) / 16) = floor(i0 / 2) when 0 <= i1 < 8.
  EXPECT_EQ(simplify(floordiv(8 * i0 + i1, 16), r), floordiv(i0, 2));
  EXPECT_EQ(simplify(mod(8 * i0 + i1, 16), r), 8 * mod(i0, 2) + i1);
  // Not when i1 may reach 8.
  RangeMap wide{{"i0", 10}, {"i1", 9}};
  EXPECT_EQ(simplify(floordiv(8 * i0 + i1, 16), wide), floordiv(8 * i0 + i1, 16));
  // A constant remainder: floor((2x + 1) / 4) = floor(x / 2).
  EXPECT_EQ(simplify(floordiv(2 * x + 1, 4), {}), floordiv(x, 2));
  EXPECT_EQ(simplify(mod(2 * x + 1, 4), {}), 2 * mod(x, 2) + 1);
}

TEST(Simplify, NestedFloorDiv) {
  EXPECT_EQ(simplify(floordiv(floordiv(x, 4), 8), {}), floordiv(x, 32));
  EXPECT_EQ(simplify(floordiv(floordiv(x, 4) + 1, 8), {}), floordiv(x + 4, 32));
  EXPECT_EQ(simplify(floordiv(floordiv(floordiv(x, 2), 3), 5), {}), floordiv(x, 30));
  // (x % 256) // 16 -> (x // 16) % 16.
  EXPECT_EQ(simplify(floordiv(mod(x, 256), 16), {}), mod(floordiv(x, 16), 16));
  // mod of mod with a dividing divisor.
  EXPECT_EQ(simplify(mod(mod(x, 256), 16), {}), mod(x, 16));
}

TEST(Simplify, ModOfFloorDivLeftAlone) {
  EXPECT_EQ(simplify(mod(floordiv(x, 4), 8), {}), mod(floordiv(x, 4), 8));
  RangeMap r{{"i0", 32}};
  EXPECT_EQ(simplify(mod(floordiv(i0, 4), 8), r), floordiv(i0, 4));
  EXPECT_EQ(simplify(mod(floordiv(i0, 4), 4), r), mod(floordiv(i0, 4), 4));
}

TEST(Simplify, Recombination) {
  RangeMap r{{"c0", 8192}};
  EXPECT_EQ(simplify(128 * floordiv(c0, 128) + mod(c0, 128), r), c0);
  EXPECT_EQ(simplify(128 * floordiv(x, 128) + mod(x, 128), {}), x);
  // Times a coefficient and a common monomial, next to other terms.
  EXPECT_EQ(simplify(3 * 16 * floordiv(x, 16) * i0 + 3 * mod(x, 16) * i0 + i1, {}),
            3 * x * i0 + i1);
  EXPECT_EQ(simplify(-4 * floordiv(x + i1, 4) - mod(x + i1, 4), {}), -x - i1);
  // Three levels: x = 128*(x // 128) + 16*((x // 16) % 8) + x % 16.
  EXPECT_EQ(simplify(128 * floordiv(x, 128) + 16 * mod(floordiv(x, 16), 8) + mod(x, 16), {}), x);
  // Mod pairs: 16*((x // 16) % 8) + x % 16 = x % 128.
  EXPECT_EQ(simplify(16 * mod(floordiv(x, 16), 8) + mod(x, 16), {}), mod(x, 128));
  // Mismatched coefficients stay.
  EXPECT_EQ(simplify(floordiv(x, 128) + mod(x, 128), {}), floordiv(x, 128) + mod(x, 128));
  // Reshape round trip: view a [64, 128] as [8192] and back.
  Expr flat = 128 * i0 + i1;
  RangeMap r2{{"i0", 64}, {"i1", 128}};
  EXPECT_EQ(simplify(128 * floordiv(flat, 128) + mod(flat, 128), r2), flat);
  Expr back = substitute(flat, {{"i0", floordiv(c0, 128)}, {"i1", mod(c0, 128)}});
  EXPECT_EQ(simplify(back, r), c0);
}

TEST(Simplify, AtomArgumentsAreSimplified) {
  RangeMap r{{"i0", 64}, {"i1", 128}, {"i2", 1}};
  EXPECT_EQ(simplify(mod(floordiv(128 * i0 + i1, 128) + 64 * i2, 64), r), i0);
  EXPECT_EQ(simplify(floordiv(i0 * (128 * floordiv(c0, 128) + mod(c0, 128)), 2), {}),
            floordiv(i0 * c0, 2));
}

TEST(Simplify, Idempotent) {
  RangeMap r{{"i0", 64}, {"i1", 128}};
  std::vector<Expr> es = {floordiv(8 * i0 + i1, 16), mod(x + 9, 4), floordiv(mod(x, 256), 16),
                          128 * floordiv(c0, 128) + mod(c0, 128) + 1};
  for (const Expr& e : es) {
    Expr s = simplify(e, r);
    EXPECT_EQ(simplify(s, r), s) << to_string(e);
  }
}

TEST(Stride, Basic) {
  RangeMap r{{"i0", 64}, {"i1", 128}};
  EXPECT_EQ(stride(128 * i0 + i1, "i1", r), 1);
  EXPECT_EQ(stride(128 * i0 + i1, "i0", r), 128);
  EXPECT_EQ(stride(floordiv(i0, 2), "i0", r), std::nullopt);
  EXPECT_EQ(stride(Expr(5), "i0", r), 0);
  EXPECT_EQ(stride(i0 + i1, "i2", r), 0);
  EXPECT_EQ(stride(i0 * i1, "i1", r), std::nullopt);
  EXPECT_EQ(stride(-3 * i1 + 7, "i1", r), -3);
  // Wrap-around inside the range: not constant.
  EXPECT_EQ(stride(mod(i1, 64), "i1", r), std::nullopt);
  // No wrap-around inside the range.
  EXPECT_EQ(stride(mod(i1, 128), "i1", r), 1);
  EXPECT_EQ(stride(floordiv(128 * i0 + i1, 128), "i0", r), 1);
  EXPECT_EQ(stride(floordiv(128 * i0 + i1, 128), "i1", r), 0);
  EXPECT_EQ(stride(128 * floordiv(c0, 128) + mod(c0, 128), "c0", {{"c0", 8192}}), 1);
  // Transposed access: stride 64 along i1.
  EXPECT_EQ(stride(64 * i1 + i0, "i1", r), 64);
  // A variable without a range: structural only.
  EXPECT_EQ(stride(4 * x + i0, "x", r), 4);
  EXPECT_EQ(stride(mod(x, 4), "x", r), std::nullopt);
}

}  // namespace
}  // namespace stax::index
