// Tests of the eager interpreter's driver: input validation messages, any-layout inputs,
// graphs built with Graph::add_node, multi-output graphs and the shared example programs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "eager/tensor_io.h"
#include "eager_test_util.h"
#include "ir/graph.h"

namespace stax::eager {
namespace {

using testing::make;
using testing::values;

ir::Graph two_input_graph() {
  return ir::parse_graph("def pair(x: f32[2, 3], w: f32[3]):\n  r = mul(x, w)\n  return r\n");
}

std::string error_of(const ir::Graph& g, const std::vector<Tensor>& inputs) {
  try {
    run(g, inputs);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Interpreter, InputCountMismatch) {
  const std::string msg = error_of(two_input_graph(), {Tensor::empty(DType::Float32, {2, 3})});
  EXPECT_NE(msg.find("expects 2 inputs, got 1"), std::string::npos) << msg;
}

TEST(Interpreter, InputDtypeMismatchNamesInput) {
  const std::string msg = error_of(two_input_graph(), {Tensor::empty(DType::Float32, {2, 3}),
                                                       Tensor::empty(DType::Float64, {3})});
  EXPECT_NE(msg.find("input 'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected dtype f32, got f64"), std::string::npos) << msg;
}

TEST(Interpreter, InputSizeMismatchNamesInputAndDimension) {
  const std::string msg = error_of(two_input_graph(), {Tensor::empty(DType::Float32, {2, 4}),
                                                       Tensor::empty(DType::Float32, {3})});
  EXPECT_NE(msg.find("input 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dimension 1: expected size 3, got 4"), std::string::npos) << msg;
  const std::string rank = error_of(
      two_input_graph(), {Tensor::empty(DType::Float32, {6}), Tensor::empty(DType::Float32, {3})});
  EXPECT_NE(rank.find("input 'x': expected 2 dimensions [2, 3], got 1 [6]"), std::string::npos)
      << rank;
  const std::string undefined = error_of(two_input_graph(), {Tensor(), Tensor()});
  EXPECT_NE(undefined.find("input 'x' is an undefined tensor"), std::string::npos) << undefined;
}

TEST(Interpreter, InputStridesMayDifferFromDeclared) {
  // Declared with column-major strides, passed contiguous: eager accepts any layout.
  ir::Graph g = ir::parse_graph("def g(x: f32[2, 2] strides=[1, 2]):\n  r = neg(x)\n  return r\n");
  Tensor x = make(DType::Float32, {2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(values(run(g, {x})[0]), (std::vector<double>{-1, -2, -3, -4}));
}

TEST(Interpreter, GraphBuiltWithAddNode) {
  ir::Graph g("softmax_like");
  ir::ValueRef x = g.add_input("x", DType::Float32, {2, 2});
  ir::ValueRef m = g.add_node("amax", {x}, {{"dim", std::vector<int64_t>{-1}}, {"keepdim", true}});
  ir::ValueRef d = g.add_node("sub", {x, m});
  ir::ValueRef e = g.add_node("exp", {d});
  ir::ValueRef s = g.add_node("sum", {e}, {{"dim", std::vector<int64_t>{-1}}, {"keepdim", true}});
  ir::ValueRef y = g.add_node("div", {e, s});
  g.set_outputs({y, m});
  Tensor in = make(DType::Float32, {2, 2}, {0, std::log(3.0), 5, 5});
  std::vector<Tensor> out = run(g, {in});
  ASSERT_EQ(out.size(), 2u);
  const std::vector<double> soft = values(out[0]);
  EXPECT_NEAR(soft[0], 0.25, 1e-6);
  EXPECT_NEAR(soft[1], 0.75, 1e-6);
  EXPECT_EQ(soft[2], 0.5);
  EXPECT_EQ(soft[3], 0.5);
  EXPECT_EQ(out[1].sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{static_cast<float>(std::log(3.0)), 5}));
}

TEST(Interpreter, InputReturnedDirectlyAndViewOutputsAlias) {
  ir::Graph g = ir::parse_graph("def g(x: f32[2, 3]):\n  t = transpose(x, 0, 1)\n  return x, t\n");
  Tensor x = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> out = run(g, {x});
  EXPECT_EQ(out[0].storage(), x.storage());
  EXPECT_EQ(out[1].storage(), x.storage());
  EXPECT_EQ(out[1].strides(), (std::vector<int64_t>{1, 3}));
}

TEST(Interpreter, ExamplePrograms) {
  const std::string dir = STAX_EXAMPLES_DIR;
  Tensor x = random_tensor(DType::Float32, {64, 128}, 1);
  Tensor y = random_tensor(DType::Float32, {64, 128}, 2);

  std::vector<Tensor> out = run(ir::parse_graph_file(dir + "/example_1_1.stax"), {x, y});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].sizes(), (std::vector<int64_t>{64}));
  for (int64_t i = 0; i < 64; i += 21) {
    double expected = 0;
    for (int64_t j = 0; j < 128; ++j) {
      expected += static_cast<double>(static_cast<float>(x.get({i, j}) * y.get({i, j})));
    }
    EXPECT_EQ(out[0].get({i}), static_cast<double>(static_cast<float>(expected)));
  }

  out = run(ir::parse_graph_file(dir + "/example_7_1.stax"), {x});
  ASSERT_EQ(out[0].sizes(), (std::vector<int64_t>{64, 128}));
  double row = 0;
  for (int64_t j = 0; j < 128; ++j) row += x.get({3, j});
  EXPECT_EQ(out[0].get({3, 5}),
            static_cast<double>(static_cast<float>(x.get({3, 5}) / static_cast<float>(row))));

  out = run(ir::parse_graph_file(dir + "/example_7_2.stax"), {x});
  ASSERT_EQ(out.size(), 2u);
  double sum = 0;
  double max = -INFINITY;
  for (int64_t j = 0; j < 128; ++j) {
    const double e = std::exp(static_cast<float>(x.get({7, j})));
    sum += e;
    max = std::max(max, e);
  }
  EXPECT_EQ(out[0].get({7}), static_cast<double>(static_cast<float>(sum)));
  EXPECT_EQ(out[1].get({7}), max);
}

TEST(Interpreter, ErrorsNameTheOpAndItsLine) {
  // 10^15 bytes no system grants: the refusal names the statement of the program.
  const auto g = ir::parse_graph(
      "def f(x: f32[1]):\n    y = expand(x, [250000000000000])\n    z = neg(y)\n    return z\n",
      "big.stax");
  try {
    run(g, {make(DType::Float32, {1}, {2.0})});
    FAIL() << "the allocation must fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the result of neg 'z' at big.stax:3"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace stax::eager
