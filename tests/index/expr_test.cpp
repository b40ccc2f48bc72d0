// Tests of the canonical form, printing, evaluation, substitution and bounds of index
// expressions.
#include <gtest/gtest.h>

#include <stdexcept>

#include "index/expr.h"
#include "test_util.h"

namespace stax::index {
namespace {

Expr v(const std::string& name) {
  return Expr::var(name);
}

TEST(ExprCanonical, ConstantsAndVars) {
  EXPECT_TRUE(Expr().is_constant());
  EXPECT_EQ(Expr().constant_value(), 0);
  EXPECT_EQ(Expr(7).constant_value(), 7);
  EXPECT_FALSE(v("i0").is_constant());
  EXPECT_EQ(v("i0").constant_value(), std::nullopt);
  EXPECT_EQ(v("i0").as_var(), "i0");
  EXPECT_EQ((2 * v("i0")).as_var(), std::nullopt);
  EXPECT_EQ((v("i0") + 1).as_var(), std::nullopt);
  EXPECT_THROW(Expr::var(""), std::invalid_argument);
}

TEST(ExprCanonical, LikeTermsCombineAndZeroTermsDrop) {
  Expr i0 = v("i0");
  Expr i1 = v("i1");
  EXPECT_EQ(i0 + i0, 2 * i0);
  EXPECT_EQ(i0 - i0, Expr(0));
  EXPECT_TRUE((i0 - i0).is_constant());
  EXPECT_EQ(i1 + 128 * i0, 128 * i0 + i1);
  EXPECT_EQ((i0 + 1) * (i0 - 1), i0 * i0 - 1);
  EXPECT_EQ(i0 * i1, i1 * i0);
  EXPECT_EQ(3 + i0 + 4, i0 + 7);
  EXPECT_EQ(0 * i0, Expr(0));
  EXPECT_EQ(-(i0 - i1), i1 - i0);
  Expr e = i0;
  e += 2;
  e *= 3;
  EXPECT_EQ(e, 3 * i0 + 6);
}

TEST(ExprCanonical, TotalOrder) {
  Expr a = v("i0");
  Expr b = v("i1");
  Expr c = floordiv(a, 2);
  Expr d = mod(a, 2);
  std::vector<Expr> all = {a, b, c, d, a + b, 2 * a, Expr(3), a * b, floordiv(a + b, 2)};
  for (const Expr& x : all) {
    EXPECT_FALSE(x < x);
    for (const Expr& y : all) {
      if (x == y) continue;
      EXPECT_NE(x < y, y < x) << to_string(x) << " vs " << to_string(y);
      for (const Expr& z : all) {
        if (x < y && y < z) {
          EXPECT_TRUE(x < z);
        }
      }
    }
  }
  std::map<Expr, int> m;
  m[a + b] = 1;
  m[b + a] = 2;
  EXPECT_EQ(m.size(), 1u);
}

TEST(ExprCanonical, FloorDivAndModConstructors) {
  Expr i0 = v("i0");
  EXPECT_EQ(floordiv(i0, 1), i0);
  EXPECT_EQ(mod(i0, 1), Expr(0));
  EXPECT_EQ(floordiv(Expr(7), 2), Expr(3));
  EXPECT_EQ(floordiv(Expr(-7), 2), Expr(-4));
  EXPECT_EQ(mod(Expr(-7), 3), Expr(2));
  EXPECT_EQ(mod(Expr(7), 3), Expr(1));
  EXPECT_THROW(floordiv(i0, 0), std::invalid_argument);
  EXPECT_THROW(floordiv(i0, -2), std::invalid_argument);
  EXPECT_THROW(mod(i0, 0), std::invalid_argument);
  EXPECT_THROW(mod(i0, -3), std::invalid_argument);
  EXPECT_EQ(floordiv(i0 + 1, 2), floordiv(1 + i0, 2));
  EXPECT_NE(floordiv(i0, 2), mod(i0, 2));
  EXPECT_NE(floordiv(i0, 2), floordiv(i0, 3));
}

TEST(ExprPrint, ToString) {
  Expr i0 = v("i0");
  Expr i1 = v("i1");
  Expr c0 = v("c0");
  EXPECT_EQ(to_string(128 * i0 + i1), "128*i0 + i1");
  EXPECT_EQ(to_string(i1 + 128 * i0), "128*i0 + i1");
  EXPECT_EQ(to_string(floordiv(c0, 128)), "(c0 // 128)");
  EXPECT_EQ(to_string(mod(c0, 128)), "(c0 % 128)");
  EXPECT_EQ(to_string(i0 - 1), "i0 - 1");
  EXPECT_EQ(to_string(1 - i0), "-i0 + 1");
  EXPECT_EQ(to_string(i0 - 2 * i1), "i0 - 2*i1");
  EXPECT_EQ(to_string(Expr(0)), "0");
  EXPECT_EQ(to_string(Expr(-5)), "-5");
  EXPECT_EQ(to_string(i0 * i1 * 3), "3*i0*i1");
  EXPECT_EQ(to_string(floordiv(128 * i0 + i1, 128)), "((128*i0 + i1) // 128)");
  EXPECT_EQ(to_string(mod(floordiv(c0, 4), 8)), "((c0 // 4) % 8)");
  EXPECT_EQ(to_string(128 * floordiv(c0, 128) + mod(c0, 128)), "128*(c0 // 128) + (c0 % 128)");
  // Natural order of variable names.
  EXPECT_EQ(to_string(v("i10") + v("i2")), "i2 + i10");
}

TEST(ExprPrint, ToCpp) {
  Expr i0 = v("i0");
  Expr i1 = v("i1");
  RangeMap r{{"i0", 64}, {"i1", 128}};
  EXPECT_EQ(to_cpp(128 * i0 + i1, r), "128*i0 + i1");
  EXPECT_EQ(to_cpp(floordiv(i1, 4), r), "(i1 / 4)");
  EXPECT_EQ(to_cpp(mod(i1, 4), r), "(i1 % 4)");
  EXPECT_EQ(to_cpp(floordiv(128 * i0 + i1, 3), r), "((128*i0 + i1) / 3)");
  // Possibly negative dividends use the floor helpers.
  EXPECT_EQ(to_cpp(floordiv(i1 - 1, 4), r), "stax_floordiv(i1 - 1, 4)");
  EXPECT_EQ(to_cpp(mod(i1 - 1, 4), r), "stax_mod(i1 - 1, 4)");
  // Unknown variables cannot be proved non-negative.
  EXPECT_EQ(to_cpp(floordiv(v("x"), 4), r), "stax_floordiv(x, 4)");
  // A mod result is non-negative even when its (possibly negative) argument is unknown.
  EXPECT_EQ(to_cpp(floordiv(mod(v("x"), 16), 4), r), "(stax_mod(x, 16) / 4)");
  EXPECT_EQ(to_cpp(mod(floordiv(v("i1"), 4), 8), r), "((i1 / 4) % 8)");
  EXPECT_EQ(to_cpp(Expr(-3), r), "-3");
  EXPECT_EQ(to_cpp(5000000000LL * i0 - 7, r), "5000000000*i0 - 7");
  EXPECT_EQ(to_cpp(Expr(INT64_MIN), r), "(-9223372036854775807 - 1)");
  EXPECT_EQ(to_cpp(-i0 + 2, r), "-i0 + 2");
}

TEST(ExprEval, EvaluateWithPythonSemantics) {
  Expr i0 = v("i0");
  Expr i1 = v("i1");
  std::map<std::string, int64_t> p{{"i0", 3}, {"i1", -7}};
  EXPECT_EQ(evaluate(128 * i0 + i1, p), 377);
  EXPECT_EQ(evaluate(floordiv(i1, 2), p), -4);
  EXPECT_EQ(evaluate(mod(i1, 3), p), 2);
  EXPECT_EQ(evaluate(i0 * i1 - 1, p), -22);
  EXPECT_THROW(evaluate(v("zz"), p), std::out_of_range);
}

TEST(ExprQueries, FreeVarsDependsOnSubstitute) {
  Expr i0 = v("i0");
  Expr i1 = v("i1");
  Expr e = 4 * i0 + floordiv(i1 + v("x"), 3);
  EXPECT_EQ(free_vars(e), (std::set<std::string>{"i0", "i1", "x"}));
  EXPECT_TRUE(depends_on(e, "x"));
  EXPECT_TRUE(depends_on(e, "i0"));
  EXPECT_FALSE(depends_on(e, "i2"));
  EXPECT_TRUE(free_vars(Expr(3)).empty());

  // Simultaneous substitution, re-canonicalized.
  EXPECT_EQ(substitute(i0 + 2 * i1, {{"i0", i1}, {"i1", i0}}), i1 + 2 * i0);
  EXPECT_EQ(substitute(i0 - i1, {{"i1", i0}}), Expr(0));
  EXPECT_EQ(substitute(floordiv(i0, 4), {{"i0", Expr(9)}}), Expr(2));
  EXPECT_EQ(substitute(mod(i0 * i1, 4), {{"i0", Expr(2)}}), mod(2 * i1, 4));
  EXPECT_EQ(substitute(i0 * i0, {{"i0", i1 + 1}}), i1 * i1 + 2 * i1 + 1);
}

TEST(ExprBounds, Intervals) {
  Expr i0 = v("i0");
  Expr i1 = v("i1");
  RangeMap r{{"i0", 64}, {"i1", 128}};
  auto b = bounds(128 * i0 + i1, r);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lo, 0);
  EXPECT_EQ(b->hi, 8191);
  b = bounds(i0 - i1 + 5, r);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lo, -122);
  EXPECT_EQ(b->hi, 68);
  b = bounds(i0 * (i1 - 10), r);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lo, -630);
  EXPECT_EQ(b->hi, 8001);  // the expanded form i0*i1 - 10*i0 is bounded term by term
  b = bounds(floordiv(i1 - 1, 4), r);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lo, -1);
  EXPECT_EQ(b->hi, 31);
  b = bounds(mod(i0 + i1, 16), r);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lo, 0);
  EXPECT_EQ(b->hi, 15);
  // Tightened to the operand when it stays within one period.
  b = bounds(mod(i0 + 3, 100), r);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lo, 3);
  EXPECT_EQ(b->hi, 66);
  b = bounds(Expr(-4), r);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lo, -4);
  EXPECT_EQ(b->hi, -4);
  EXPECT_FALSE(bounds(i0 + v("x"), r));
  EXPECT_FALSE(bounds(mod(v("x"), 4), r));
}

}  // namespace
}  // namespace stax::index
