// Tests of collapse() (dependence normalization) and merge_loops() (loop-nest merging).
#include <gtest/gtest.h>

#include <stdexcept>

#include "index/expr.h"
#include "test_util.h"

namespace stax::index {
namespace {

const Expr c1 = Expr::var("c1");

TEST(Collapse, Example71) {
  std::vector<LoopVar> loops{{"i0", 64}, {"i1", 128}};
  EXPECT_EQ(collapse(128 * i0 + i1, loops), (CollapsedIndex{c0, {{"c0", 8192}}}));
  EXPECT_EQ(collapse(i0, loops), (CollapsedIndex{c0, {{"c0", 64}}}));
}

TEST(Collapse, UnusedAndInnerOnly) {
  std::vector<LoopVar> loops{{"i0", 64}, {"i1", 128}};
  EXPECT_EQ(collapse(i1, loops), (CollapsedIndex{c0, {{"c0", 128}}}));
  EXPECT_EQ(collapse(Expr(3), loops), (CollapsedIndex{Expr(3), {}}));
  // Prefix.
  EXPECT_EQ(collapse(128 * i0 + i1, loops, "z"), (CollapsedIndex{Expr::var("z0"), {{"z0", 8192}}}));
}

TEST(Collapse, TransposeIsNotMerged) {
  std::vector<LoopVar> loops{{"i0", 64}, {"i1", 128}};
  EXPECT_EQ(collapse(i0 + 64 * i1, loops),
            (CollapsedIndex{c0 + 64 * c1, {{"c0", 64}, {"c1", 128}}}));
}

TEST(Collapse, ThreeLevels) {
  std::vector<LoopVar> loops{{"i0", 4}, {"i1", 8}, {"i2", 16}};
  EXPECT_EQ(collapse(128 * i0 + 16 * i1 + i2, loops), (CollapsedIndex{c0, {{"c0", 512}}}));
  // An offset and a scale survive.
  EXPECT_EQ(collapse(2 * (128 * i0 + 16 * i1 + i2) + 5, loops),
            (CollapsedIndex{2 * c0 + 5, {{"c0", 512}}}));
  // Broadcast along the middle loop: i0 and i2 are not adjacent.
  EXPECT_EQ(collapse(16 * i0 + i2, loops), (CollapsedIndex{16 * c0 + c1, {{"c0", 4}, {"c1", 16}}}));
  // Only the inner two merge.
  EXPECT_EQ(collapse(1000 * i0 + 16 * i1 + i2, loops),
            (CollapsedIndex{1000 * c0 + c1, {{"c0", 4}, {"c1", 128}}}));
}

TEST(Collapse, FunctionsOfTheFlatIndexMerge) {
  std::vector<LoopVar> loops{{"i0", 64}, {"i1", 128}};
  EXPECT_EQ(collapse(floordiv(128 * i0 + i1, 2), loops),
            (CollapsedIndex{floordiv(c0, 2), {{"c0", 8192}}}));
  EXPECT_EQ(collapse(mod(128 * i0 + i1, 3), loops), (CollapsedIndex{mod(c0, 3), {{"c0", 8192}}}));
  std::vector<LoopVar> loops3{{"i0", 4}, {"i1", 8}, {"i2", 16}};
  EXPECT_EQ(collapse(floordiv(128 * i0 + 16 * i1 + i2, 2), loops3),
            (CollapsedIndex{floordiv(c0, 2), {{"c0", 512}}}));
  // Reading the inner variable on its own next to the outer one still blocks.
  EXPECT_EQ(collapse(i0 + floordiv(i1, 2), loops),
            (CollapsedIndex{c0 + floordiv(c1, 2), {{"c0", 64}, {"c1", 128}}}));
  EXPECT_EQ(collapse(16 * i0 + mod(i1, 4), loops),
            (CollapsedIndex{16 * c0 + mod(c1, 4), {{"c0", 64}, {"c1", 128}}}));
}

TEST(Collapse, ExtentOneLoopsDisappear) {
  std::vector<LoopVar> loops{{"i0", 64}, {"i1", 1}, {"i2", 128}};
  EXPECT_EQ(collapse(128 * i0 + 5 * i1 + i2, loops), (CollapsedIndex{c0, {{"c0", 8192}}}));
  auto m = collapse_with_mapping(128 * i0 + i2, loops);
  EXPECT_EQ(m.old_to_new.at("i1"), Expr(0));
  EXPECT_EQ(m.old_to_new.at("i0"), floordiv(c0, 128));
  EXPECT_EQ(m.old_to_new.at("i2"), mod(c0, 128));
}

TEST(Collapse, SimplifiesFirst) {
  // (128*i0 + i1) // 128 is i0: i1 is unused.
  std::vector<LoopVar> loops{{"i0", 64}, {"i1", 128}};
  EXPECT_EQ(collapse(floordiv(128 * i0 + i1, 128), loops), (CollapsedIndex{c0, {{"c0", 64}}}));
}

TEST(Collapse, OtherFreeVariablesStay) {
  std::vector<LoopVar> loops{{"i0", 64}, {"i1", 128}};
  Expr s = Expr::var("s");
  EXPECT_EQ(collapse(s * 8192 + 128 * i0 + i1, loops),
            (CollapsedIndex{8192 * s + c0, {{"c0", 8192}}}));
  EXPECT_THROW(collapse(c0 + i0, loops), std::invalid_argument);
}

TEST(MergeLoops, Contiguous2D) {
  std::vector<LoopVar> loops{{"i0", 64}, {"i1", 128}};
  MergedLoops m = merge_loops(loops, {128 * i0 + i1, 128 * i0 + i1 + 8192}, "c");
  EXPECT_EQ(m.vars, (std::vector<LoopVar>{{"c0", 8192}}));
  EXPECT_EQ(m.old_to_new.at("i0"), floordiv(c0, 128));
  EXPECT_EQ(m.old_to_new.at("i1"), mod(c0, 128));
  RangeMap r{{"c0", 8192}};
  EXPECT_EQ(simplify(substitute(128 * i0 + i1, m.old_to_new), r), c0);
}

TEST(MergeLoops, IndexReadingOnlyOuterBlocks) {
  std::vector<LoopVar> loops{{"i0", 64}, {"i1", 128}};
  MergedLoops m = merge_loops(loops, {128 * i0 + i1, i0}, "c");
  EXPECT_EQ(m.vars, (std::vector<LoopVar>{{"c0", 64}, {"c1", 128}}));
  EXPECT_EQ(m.old_to_new.at("i0"), c0);
  EXPECT_EQ(m.old_to_new.at("i1"), c1);
}

TEST(MergeLoops, TransposedIndexBlocks) {
  std::vector<LoopVar> loops{{"i0", 128}, {"i1", 64}};
  MergedLoops m = merge_loops(loops, {64 * i0 + i1, 128 * i1 + i0}, "c");
  EXPECT_EQ(m.vars.size(), 2u);
  m = merge_loops({{"i0", 64}, {"i1", 128}}, {64 * i1 + i0}, "c");
  EXPECT_EQ(m.vars.size(), 2u);
}

TEST(MergeLoops, IndexUsingNeitherIsFine) {
  // i2 is a reduction-like inner loop the first index ignores.
  std::vector<LoopVar> loops{{"i0", 4}, {"i1", 8}, {"i2", 16}};
  MergedLoops m = merge_loops(loops, {8 * i0 + i1, 128 * i0 + 16 * i1 + i2}, "c");
  // i1/i2 cannot merge (the first index reads i1 alone) but i0/i1 can.
  EXPECT_EQ(m.vars, (std::vector<LoopVar>{{"c0", 32}, {"c1", 16}}));
  EXPECT_EQ(m.old_to_new.at("i0"), floordiv(c0, 8));
  EXPECT_EQ(m.old_to_new.at("i1"), mod(c0, 8));
  EXPECT_EQ(m.old_to_new.at("i2"), c1);
  // Indices that use no loop at all never block.
  m = merge_loops(loops, {Expr(0), Expr::var("s")}, "c");
  EXPECT_EQ(m.vars, (std::vector<LoopVar>{{"c0", 512}}));
  EXPECT_EQ(m.old_to_new.at("i1"), mod(floordiv(c0, 16), 8));
}

TEST(MergeLoops, ExtentOneLoopsDropped) {
  std::vector<LoopVar> loops{{"i0", 1}, {"i1", 64}, {"i2", 1}, {"i3", 128}};
  Expr i3 = Expr::var("i3");
  MergedLoops m = merge_loops(loops, {128 * i1 + i3 + 7 * i2}, "q");
  EXPECT_EQ(m.vars, (std::vector<LoopVar>{{"q0", 8192}}));
  EXPECT_EQ(m.old_to_new.at("i0"), Expr(0));
  EXPECT_EQ(m.old_to_new.at("i2"), Expr(0));
  EXPECT_EQ(m.old_to_new.size(), 4u);
}

TEST(MergeLoops, FreeVariablesLeftAlone) {
  std::vector<LoopVar> loops{{"i0", 64}, {"i1", 128}};
  Expr s = Expr::var("s");
  MergedLoops m = merge_loops(loops, {s * 8192 + 128 * i0 + i1}, "c");
  EXPECT_EQ(m.vars.size(), 1u);
  EXPECT_EQ(simplify(substitute(s * 8192 + 128 * i0 + i1, m.old_to_new), {{"c0", 8192}}),
            8192 * s + c0);
  EXPECT_THROW(merge_loops(loops, {c0 + i0}, "c"), std::invalid_argument);
  // Renaming loops that are already called c0, c1 is fine (a simultaneous swap here).
  m = merge_loops({{"c1", 4}, {"c0", 4}}, {c1 + 4 * c0}, "c");
  EXPECT_EQ(m.old_to_new.at("c1"), c0);
  EXPECT_EQ(m.old_to_new.at("c0"), c1);
  EXPECT_EQ(m.vars.size(), 2u);
}

TEST(MergeLoops, Empty) {
  MergedLoops m = merge_loops({}, {Expr(1)}, "c");
  EXPECT_TRUE(m.vars.empty());
  EXPECT_TRUE(m.old_to_new.empty());
}

}  // namespace
}  // namespace stax::index
