// The eager interpreter on graphs with symbolic sizes (issue 33): each call runs the graph of
// its inputs' sizes, so one symbolic graph gives what the static graph of every size gives; a
// call whose sizes break the graph names the input and dimension.
#include <gtest/gtest.h>

#include <random>

#include "eager_test_util.h"
#include "ir/graph.h"

namespace stax::eager {
namespace {

using testing::make;
using testing::run_text;
using testing::values;

const char* const kSymbolic =
    "def f(x: f32[s0, 3], b: f32[3]) where s0: [1, 64]:\n"
    "    a = add(x, b)\n"
    "    s = sum(a, dim=[0])\n"
    "    t = transpose(a, 0, 1)\n"
    "    return s, t\n";

TEST(SymbolicEager, EachCallRunsTheGraphOfItsSizes) {
  const ir::Graph symbolic = ir::parse_graph(kSymbolic, "f.stax");
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> value(-2, 2);
  for (int64_t rows : {1, 2, 5, 64}) {
    std::vector<double> xs(static_cast<size_t>(rows * 3));
    for (double& v : xs) v = value(rng);
    const Tensor x = make(DType::Float32, {rows, 3}, xs);
    const Tensor b = make(DType::Float32, {3}, {0.5, -1, 2});
    const std::vector<Tensor> got = run(symbolic, {x, b});
    const std::string text = std::string(kSymbolic).replace(std::string(kSymbolic).find("s0, 3"), 5,
                                                            std::to_string(rows) + ", 3");
    const std::vector<Tensor> want = run_text(
        text.substr(0, text.find(" where")) + ":" + text.substr(text.find(":\n") + 1), {x, b});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].sizes(), (std::vector<int64_t>{3}));
    EXPECT_EQ(got[1].sizes(), (std::vector<int64_t>{3, rows}));
    EXPECT_EQ(values(got[0]), values(want[0])) << rows;
    EXPECT_EQ(values(got[1]), values(want[1])) << rows;
  }
}

TEST(SymbolicEager, SizesThatBreakTheGraphAreNamed) {
  const ir::Graph symbolic = ir::parse_graph(kSymbolic, "f.stax");
  auto error = [&](std::vector<Tensor> inputs) -> std::string {
    try {
      run(symbolic, inputs);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "<no error>";
  };
  EXPECT_EQ(error({Tensor::empty(DType::Float32, {4, 2}), Tensor::empty(DType::Float32, {3})}),
            "eager: graph 'f': input 'x': dim 1 has size 2 but must be 3 (sizes [s0, 3])");
  EXPECT_EQ(error({Tensor::empty(DType::Float32, {65, 3}), Tensor::empty(DType::Float32, {3})}),
            "eager: graph 'f': size symbol s0 = 65 breaks its facts (s0 in [1, 64])");
  EXPECT_EQ(error({Tensor::empty(DType::Float32, {0, 3}), Tensor::empty(DType::Float32, {3})}),
            "eager: graph 'f': size symbol s0 = 0 breaks its facts (s0 in [1, 64])");
  EXPECT_EQ(error({Tensor::empty(DType::Float32, {4, 3})}),
            "eager: graph 'f' expects 2 inputs, got 1");
}

}  // namespace
}  // namespace stax::eager
