// Tests of the schemas of the issue-6 reductions (prod, argmax/argmin, any/all, var/std,
// logsumexp): argument binding, result sizes and dtypes as PyTorch gives them (torch 2.13.0),
// and the messages of their errors.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using testing::infer;
using testing::infer_error;
using testing::type;

TEST(ReductionSchemaTest, ProdDtypes) {
  EXPECT_EQ(infer("x: i8[2, 3]", "prod(x)"), type(DType::Int64, {}));
  EXPECT_EQ(infer("x: bool[2, 3]", "prod(x, 1)"), type(DType::Int64, {2}));
  EXPECT_EQ(infer("x: f16[2, 3]", "prod(x, dim=0, keepdim=True)"), type(DType::Float16, {1, 3}));
  EXPECT_EQ(infer("x: i64[4]", "prod(x, dtype='i8')"), type(DType::Int8, {}));
  EXPECT_EQ(infer("x: i32[4]", "prod(x, dtype='f32')"), type(DType::Float32, {}));
  EXPECT_EQ(infer_error("x: f32[2, 3]", "prod(x, dim=[0, 1])"),
            "prod: argument 'dim': expected one dim or None, got [0, 1]");
}

TEST(ReductionSchemaTest, ArgExtrema) {
  EXPECT_EQ(infer("x: f32[2, 3]", "argmax(x)"), type(DType::Int64, {}));
  EXPECT_EQ(infer("x: f32[2, 3]", "argmax(x, keepdim=True)"), type(DType::Int64, {1, 1}));
  EXPECT_EQ(infer("x: u8[2, 3]", "argmin(x, 1, True)"), type(DType::Int64, {2, 1}));
  EXPECT_EQ(infer("x: f32[]", "argmax(x, 0)"), type(DType::Int64, {}));
  EXPECT_EQ(infer("x: f32[2, 0]", "argmax(x, 0)"), type(DType::Int64, {0}));
  EXPECT_EQ(infer_error("x: bool[3]", "argmax(x)"),
            "argmax: argument 'self': bool input is not supported (as in PyTorch)");
  EXPECT_EQ(infer_error("x: f32[2, 0]", "argmin(x, 1)"),
            "argmin: argument 'self': cannot reduce over dim 1 of size 0 (sizes [2, 0]): the "
            "reduction has no identity");
  EXPECT_EQ(infer_error("x: f32[0]", "argmax(x)"),
            "argmax: argument 'self': cannot reduce over dim 0 of size 0 (sizes [0]): the "
            "reduction has no identity");
  EXPECT_EQ(infer_error("x: f32[2, 3]", "argmax(x, dim=[0, 1])"),
            "argmax: argument 'dim': expected one dim or None, got [0, 1]");
  EXPECT_EQ(infer_error("x: f32[2, 3]", "argmax(x, dim=2)"),
            "argmax: argument 'dim': dim 2 is out of range for a tensor of rank 2 (expected in "
            "[-2, 1])");
}

TEST(ReductionSchemaTest, AnyAll) {
  EXPECT_EQ(infer("x: f32[2, 3]", "any(x)"), type(DType::Bool, {}));
  EXPECT_EQ(infer("x: i64[2, 3]", "all(x, [0, 1], True)"), type(DType::Bool, {1, 1}));
  EXPECT_EQ(infer("x: u8[2, 3]", "any(x, 1)"), type(DType::UInt8, {2}));
  EXPECT_EQ(infer("x: f32[2, 0]", "all(x, 1)"), type(DType::Bool, {2}));
}

TEST(ReductionSchemaTest, VarStd) {
  EXPECT_EQ(infer("x: f32[2, 3]", "var(x)"), type(DType::Float32, {}));
  EXPECT_EQ(infer("x: bf16[2, 3]", "std(x, 1, correction=0, keepdim=True)"),
            type(DType::BFloat16, {2, 1}));
  EXPECT_EQ(infer("x: f64[2, 3]", "var(x, [0], correction=0.5)"), type(DType::Float64, {3}));
  EXPECT_EQ(infer("x: f32[2, 0]", "var(x, 1)"), type(DType::Float32, {2}));
  EXPECT_EQ(infer_error("x: i64[4]", "var(x)"),
            "var: argument 'self': only floating point inputs are supported (as in PyTorch), got "
            "i64");
  EXPECT_EQ(infer_error("x: f32[4]", "std(x, correction=True)"),
            "std: argument 'correction': expects a number, got a bool");
  // keepdim is keyword-only in var.correction.
  EXPECT_EQ(infer_error("x: f32[4]", "var(x, 0, True)"),
            "var: takes at most 2 positional arguments but 3 were given");
}

TEST(ReductionSchemaTest, LogSumExp) {
  EXPECT_EQ(infer("x: f32[2, 3]", "logsumexp(x, [1])"), type(DType::Float32, {2}));
  EXPECT_EQ(infer("x: f16[2, 3]", "logsumexp(x, 0, True)"), type(DType::Float16, {1, 3}));
  EXPECT_EQ(infer("x: i32[2, 3]", "logsumexp(x, [0, 1])"), type(DType::Float32, {}));
  EXPECT_EQ(infer("x: bool[3]", "logsumexp(x, 0)"), type(DType::Float32, {}));
  EXPECT_EQ(infer("x: f32[2, 0]", "logsumexp(x, 1)"), type(DType::Float32, {2}));
  EXPECT_EQ(infer_error("x: f32[2, 3]", "logsumexp(x)"),
            "logsumexp: missing required argument 'dim'");
  EXPECT_EQ(infer_error("x: f32[2, 3]", "logsumexp(x, dim=[])"),
            "logsumexp: argument 'dim': expected at least one dim to reduce over");
}

TEST(ReductionSchemaTest, PrintedGraphsRoundTrip) {
  const std::string text =
      "def t(x: f32[2, 3], y: u8[2, 3]):\n"
      "    a = prod(x, dim=[1], keepdim=True, dtype='f64')\n"
      "    b = argmax(x, dim=[0])\n"
      "    c = any(y, dim=[0, 1])\n"
      "    d = var(x, dim=[1], correction=0.5, keepdim=True)\n"
      "    e = logsumexp(x, dim=[1])\n"
      "    return a, b, c, d, e\n";
  Graph g = parse_graph(text);
  EXPECT_EQ(parse_graph(print_graph(g)), g);
}

TEST(ReductionSchemaTest, VarMeanReturnsTwoValues) {
  Graph g = parse_graph(
      "def t(x: f16[2, 3]):\n"
      "    v, m = var_mean(x, 1, correction=0, keepdim=True)\n"
      "    return m, v\n",
      "t.stax");
  // One node per result, like getitem(var_mean(...), k) in torch.fx.
  ASSERT_EQ(g.nodes().size(), 2u);
  const Node& var = g.nodes()[0];
  const Node& mean = g.nodes()[1];
  EXPECT_EQ(g.value(var.output).name, "v");
  EXPECT_EQ(g.value(mean.output).name, "m");
  EXPECT_EQ(var.result_index, 0);
  EXPECT_EQ(mean.result_index, 1);
  EXPECT_EQ(g.value(var.output).type, type(DType::Float16, {2, 1}));
  EXPECT_EQ(g.value(mean.output).type, type(DType::Float16, {2, 1}));
  EXPECT_EQ(g.value(mean.output).producer, 1);
  const std::string printed = print_graph(g);
  EXPECT_NE(printed.find("    v, m = var_mean(x, dim=[1], correction=0, keepdim=True)\n"),
            std::string::npos)
      << printed;
  EXPECT_EQ(parse_graph(printed), g);
  // A graph whose var_mean names its results differently is a different graph.
  EXPECT_FALSE(parse_graph("def t(x: f16[2, 3]):\n"
                           "    v, n = var_mean(x, 1, correction=0, keepdim=True)\n"
                           "    return n, v\n") == g);
}

TEST(ReductionSchemaTest, VarMeanMustBindBothResults) {
  EXPECT_EQ(infer_error("x: f32[4]", "var_mean(x)"),
            "var_mean: gives 2 results but 1 name was given");
  Graph g("t");
  ValueRef x = g.add_input("x", DType::Float32, {4});
  try {
    g.add_node("var_mean", {x});
    ADD_FAILURE() << "add_node accepted var_mean";
  } catch (const GraphError& e) {
    EXPECT_EQ(std::string(e.what()),
              "var_mean: has several results; add it with add_multi_result_node (in the text "
              "format: `a, b = var_mean(...)`)");
  }
  std::vector<ValueRef> vm = g.add_multi_result_node("var_mean", {x});
  ASSERT_EQ(vm.size(), 2u);
  EXPECT_EQ(g.value(vm[0]).name, "v0");
  EXPECT_EQ(g.value(vm[1]).name, "v1");
  EXPECT_THROW(g.add_multi_result_node("var_mean", {x}, {}, {"a", "a"}), GraphError);
  EXPECT_THROW(g.add_multi_result_node("sum", {x}, {}, {"a", "b"}), GraphError);
  // Two names for a one-result op are refused by the parser too.
  EXPECT_EQ(testing::parse_error("def t(x: f32[4]):\n    a, b = sum(x)\n    return a\n"),
            "t.stax:2:5: sum: has one result but 2 names were given");
  EXPECT_EQ(testing::parse_error("def t(x: i32[4]):\n    a, b = var_mean(x)\n    return a\n"),
            "t.stax:2:5: var_mean: argument 'self': only floating point inputs are supported (as "
            "in PyTorch), got i32");
}

TEST(ReductionSchemaTest, BuilderSpellsTheAtenCalls) {
  Graph g("b");
  Val x = ops::input(g, "x", DType::Float32, {2, 3});
  auto [v, m] = ops::var_mean(x, {1}, 0, true);
  ops::output(g, {ops::prod(x), ops::prod(x, 1, true), ops::argmax(x), ops::argmin(x, -1),
                  ops::any(x), ops::all(x, {0, 1}), ops::var(x, {}, 0.5), ops::std_dev(x, {0}), v,
                  m, ops::logsumexp(x, {1}, true)});
  EXPECT_EQ(print_graph(g),
            "def b(x: f32[2, 3]):\n"
            "    v0, v1 = var_mean(x, dim=[1], correction=0, keepdim=True)\n"
            "    v2 = prod(x)\n"
            "    v3 = prod(x, dim=[1], keepdim=True)\n"
            "    v4 = argmax(x)\n"
            "    v5 = argmin(x, dim=[-1])\n"
            "    v6 = any(x)\n"
            "    v7 = all(x, dim=[0, 1])\n"
            "    v8 = var(x, correction=0.5)\n"
            "    v9 = std(x, dim=[0])\n"
            "    v10 = logsumexp(x, [1], keepdim=True)\n"
            "    return v2, v3, v4, v5, v6, v7, v8, v9, v0, v1, v10\n");
  EXPECT_EQ(g.value(m.ref).type, type(DType::Float32, {2, 1}));
}

}  // namespace
}  // namespace stax::ir
