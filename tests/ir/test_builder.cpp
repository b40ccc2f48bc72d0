// Tests of the C++ builder API: graphs built with stax::ops and the Val operators equal the
// graphs parsed from the corresponding text.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "test_util.h"

namespace stax {
namespace {

using namespace stax::ops;  // NOLINT

TEST(BuilderTest, Example_7_2) {
  Graph g("example_7_2");
  Val x = input(g, "x", DType::Float32, {64, 128});
  Val e = exp(x);
  output(g, {sum(e, {-1}), amax(e, {-1})});
  const ir::Graph parsed = ir::parse_graph(
      "def example_7_2(x: f32[64, 128]):\n"
      "    v0 = exp(x)\n"
      "    v1 = sum(v0, dim=[-1])\n"
      "    v2 = amax(v0, dim=[-1])\n"
      "    return v1, v2\n");
  EXPECT_TRUE(g == parsed) << ir::print_graph(g);
  EXPECT_EQ(e.type().sizes, (std::vector<int64_t>{64, 128}));
}

TEST(BuilderTest, OperatorsAndScalarOverloads) {
  Graph g("ops");
  Val x = input(g, "x", DType::Float32, {4, 8});
  Val y = input(g, "y", DType::Float32, {8}, std::vector<int64_t>{2});
  Val c = input(g, "c", DType::Bool, {4, 8});
  Val a = x + y;
  Val b = x - 1.5;
  Val m = 2.0 * a;
  Val d = b / m;
  Val n = -d;
  Val r = 1.0 - n;
  Val t = 3.0 / r;  // separate statements: operand evaluation order is unspecified
  Val q = t + x * 0.5;
  Val w = where(c, q, 0.0);
  Val w2 = where(c, 1.0, w);
  Val w3 = where(c, 1.0, 2.0);
  Val w4 = where(c, w2, w3);
  Val cmp = gt(w4, 0.25);
  Val cmp2 = le(w4, x);
  output(g, {w4, cmp, cmp2});
  const ir::Graph parsed = ir::parse_graph(
      "def ops(x: f32[4, 8], y: f32[8] strides=[2], c: bool[4, 8]):\n"
      "    v0 = add(x, y)\n"
      "    v1 = sub(x, 1.5)\n"
      "    v2 = mul(2.0, v0)\n"
      "    v3 = div(v1, v2)\n"
      "    v4 = neg(v3)\n"
      "    v5 = sub(1.0, v4)\n"
      "    v6 = div(3.0, v5)\n"
      "    v7 = mul(x, 0.5)\n"
      "    v8 = add(v6, v7)\n"
      "    v9 = where(c, v8, 0.0)\n"
      "    v10 = where(c, 1.0, v9)\n"
      "    v11 = where(c, 1.0, 2.0)\n"
      "    v12 = where(c, v10, v11)\n"
      "    v13 = gt(v12, 0.25)\n"
      "    v14 = le(v12, x)\n"
      "    return v12, v13, v14\n");
  EXPECT_TRUE(g == parsed) << ir::print_graph(g);
  EXPECT_EQ(cmp.type().dtype, DType::Bool);
}

TEST(BuilderTest, EveryOpFunction) {
  Graph g("all");
  Val x = input(g, "x", DType::Float32, {2, 3});
  Val i = input(g, "i", DType::Int32, {2, 3});
  std::vector<Val> outs = {add(x, i),
                           add(x, 1.0),
                           add(1.0, x),
                           sub(x, i),
                           sub(x, 2.0),
                           sub(2.0, x),
                           mul(x, i),
                           mul(x, 3.0),
                           mul(3.0, x),
                           div(i, i),
                           div(x, 4.0),
                           div(4.0, x),
                           maximum(x, i),
                           minimum(i, x),
                           gt(x, i),
                           gt(x, 0.0),
                           lt(x, i),
                           lt(x, 0.0),
                           ge(x, i),
                           ge(x, 0.0),
                           le(x, i),
                           le(x, 0.0),
                           eq(x, i),
                           eq(x, 0.0),
                           ne(x, i),
                           ne(x, 0.0),
                           neg(x),
                           abs(i),
                           exp(x),
                           log(x),
                           sqrt(x),
                           rsqrt(x),
                           tanh(x),
                           sigmoid(i),
                           relu(x),
                           pow(x, 2.0),
                           sum(x),
                           sum(i, {0}, true),
                           mean(x, {-1}),
                           amax(x),
                           amin(x, {1}),
                           reshape(x, {-1}),
                           view(x, {3, 2}),
                           permute(x, {1, 0}),
                           transpose(x, 0, 1),
                           unsqueeze(x, 1),
                           squeeze(unsqueeze(x, 0)),
                           squeeze(unsqueeze(x, 0), {0}),
                           expand(unsqueeze(x, 0), {4, -1, -1}),
                           clone(x),
                           contiguous(x)};
  output(g, outs);
  // The printed text parses back to the same graph, and a few types are as expected.
  const ir::Graph parsed = ir::parse_graph(ir::print_graph(g));
  EXPECT_TRUE(g == parsed) << ir::print_graph(g);
  EXPECT_EQ(g.nodes().size(), outs.size() + 3);
  EXPECT_EQ(outs[9].type().dtype, DType::Float32);  // div(i, i)
  EXPECT_EQ(outs[37].type().sizes, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(outs[37].type().dtype, DType::Int64);  // sum of i32
  EXPECT_EQ(outs[39].type().sizes, (std::vector<int64_t>{}));
  EXPECT_EQ(outs[48].type().sizes, (std::vector<int64_t>{4, 2, 3}));
  // sum/mean with no dims leave dim=None, amax/amin keep dim=[].
  EXPECT_EQ(g.nodes()[36].args[1], ir::Arg(ir::None{}));
  EXPECT_EQ(g.nodes()[39].args[1], ir::Arg(std::vector<int64_t>{}));
}

// Issue 14, point 3: the matrix products make the nodes the text format makes.
TEST(BuilderTest, MatrixProducts) {
  Graph g("products");
  Val a = input(g, "a", DType::Float32, {2, 3});
  Val b = input(g, "b", DType::Float32, {3, 4});
  Val c = input(g, "c", DType::Float32, {4});
  Val x = input(g, "x", DType::Int16, {5, 2, 3});
  Val y = input(g, "y", DType::Int16, {5, 3, 4});
  output(g, {mm(a, b), addmm(c, a, b), addmm(c, a, b, 0.5, -2), bmm(x, y),
             baddbmm(bmm(x, y), x, y, 2, 3)});
  const ir::Graph text = ir::parse_graph(
      R"(def products(a: f32[2, 3], b: f32[3, 4], c: f32[4], x: i16[5, 2, 3], y: i16[5, 3, 4]):
    v0 = mm(a, b)
    v1 = addmm(c, a, b)
    v2 = addmm(c, a, b, beta=0.5, alpha=-2)
    v3 = bmm(x, y)
    v4 = bmm(x, y)
    v5 = baddbmm(v4, x, y, beta=2, alpha=3)
    return v0, v1, v2, v3, v5
)");
  EXPECT_TRUE(g == text) << ir::print_graph(g);
  EXPECT_THROW(mm(a, a), ir::GraphError);  // 2x3 and 2x3 cannot be multiplied
}

TEST(BuilderTest, Errors) {
  Graph g("a");
  Graph h("b");
  Val x = input(g, "x", DType::Float32, {2});
  Val y = input(h, "y", DType::Float32, {2});
  EXPECT_THROW(x + y, ir::GraphError);
  EXPECT_THROW(output(g, {y}), ir::GraphError);
  EXPECT_THROW(reshape(x, {3}), ir::GraphError);
  EXPECT_THROW(Val{} + 1.0, ir::GraphError);
}

}  // namespace
}  // namespace stax
