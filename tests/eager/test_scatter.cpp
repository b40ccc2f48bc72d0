// The eager interpreter on the scatters (index_put, index_add, scatter.src, scatter.value,
// scatter_add): every case of scatter_torch_cases.inc (PyTorch 2.13.0's CPU results over every
// dtype torch takes, with duplicate and negative indices, None entries around index_put's
// index, rank-2 and 0-dim index tensors, broadcast values, int32 indices, an index smaller
// than self and src, scalar values converted to the dtype, index_add's alpha, transposed
// operands and empty index tensors and self dims), compared exactly: the oracle computes what
// torch computes bit for bit. And the index values torch refuses, with its exception class
// (ir::IndexError where torch raises IndexError, plain std::out_of_range for its
// RuntimeError) and its message.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "eager_test_util.h"
#include "ir/index_rule.h"
#include "scatter_torch_cases.h"

namespace stax::eager {
namespace {

using testing::make;
using testing::run_text;
using testing::ScatterCase;

// Equal, NaN equal to NaN.
bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

TEST(EagerScatter, TorchCases) {
  const std::vector<ScatterCase>& cases = testing::scatter_cases();
  ASSERT_GE(cases.size(), 200u);
  for (const ScatterCase& c : cases) {
    const std::string program = testing::program_text(c);
    SCOPED_TRACE(c.name + ":\n" + program);
    const std::vector<Tensor> inputs = testing::make_scatter_inputs(c);
    const Tensor out = run_text(program, inputs).at(0);
    ASSERT_EQ(out.dtype(), c.inputs.at(0).dtype);
    testing::expect_torch_result(c, out);
    // The inputs are not written.
    const std::vector<Tensor> again = testing::make_scatter_inputs(c);
    for (size_t k = 0; k < inputs.size(); ++k) {
      for (int64_t p = 0; p < inputs[k].numel(); ++p) {
        const std::vector<int64_t> at = unravel_index(p, inputs[k].sizes());
        EXPECT_TRUE(same(inputs[k].get(at), again[k].get(at))) << "input " << k << " at " << p;
      }
    }
  }
}

// Runs `def f(x: X, i: I[, v: V]): y = EXPR` and returns what it throws: the message, and
// whether the exception is an ir::IndexError and a std::out_of_range.
struct Thrown {
  std::string message;
  bool index_error = false;
  bool out_of_range = false;
};
Thrown thrown(const std::string& params, const std::string& expr,
              const std::vector<Tensor>& inputs) {
  Thrown t;
  try {
    run_text("def f(" + params + "):\n    y = " + expr + "\n    return y\n", inputs);
    t.message = "<no error>";
  } catch (const ir::IndexError& e) {
    t.message = e.what();
    t.index_error = t.out_of_range = true;
  } catch (const std::out_of_range& e) {
    t.message = e.what();
    t.out_of_range = true;
  } catch (const std::exception& e) {
    t.message = std::string("<other exception> ") + e.what();
  }
  return t;
}

Tensor zeros(DType dtype, const std::vector<int64_t>& sizes) {
  Tensor t = Tensor::empty(dtype, sizes);
  for (int64_t p = 0; p < t.numel(); ++p) t.set_flat(p, 0.0);
  return t;
}

Tensor longs(const std::vector<int64_t>& sizes, const std::vector<double>& values,
             DType dtype = DType::Int64) {
  return make(dtype, sizes, values);
}

// torch raises IndexError: the message is torch's, after the op's name.
void expect_index_error(const Thrown& t, const std::string& torch_message) {
  EXPECT_TRUE(t.index_error) << t.message;
  EXPECT_NE(t.message.find(torch_message), std::string::npos)
      << t.message << "\ntorch: " << torch_message;
}

// torch raises RuntimeError: std::out_of_range, not IndexError.
void expect_runtime_error(const Thrown& t, const std::string& torch_message) {
  EXPECT_TRUE(t.out_of_range) << t.message;
  EXPECT_FALSE(t.index_error) << t.message;
  EXPECT_NE(t.message.find(torch_message), std::string::npos)
      << t.message << "\ntorch: " << torch_message;
}

TEST(EagerScatter, IndexPutOutOfRangeIsIndexError) {
  const Tensor x = zeros(DType::Float32, {3, 4});
  const Tensor v = zeros(DType::Float32, {3, 2});
  const std::string params = "x: f32[3, 4], i: i64[2], v: f32[3, 2]";
  for (const char* acc : {"False", "True"}) {
    // A.index_put.default(zeros(3, 4), [None, tensor([0, 5])], zeros(3, 2), acc):
    // IndexError: index 5 is out of bounds for dimension 0 with size 4
    const Thrown t = thrown(params, std::string("index_put(x, [None, i], v, ") + acc + ")",
                            {x, longs({2}, {0, 5}), v});
    expect_index_error(t, "index 5 is out of bounds for dimension 0 with size 4");
    EXPECT_NE(t.message.find("index_put: index 5"), std::string::npos) << t.message;
    // [None, tensor([0, -5])]: IndexError: index -5 is out of bounds for dimension 0 with
    // size 4 (-4 wraps to 0).
    expect_index_error(thrown(params, std::string("index_put(x, [None, i], v, ") + acc + ")",
                              {x, longs({2}, {-4, -5}), v}),
                       "index -5 is out of bounds for dimension 0 with size 4");
  }
  // [tensor([3])] into zeros(3, 4): IndexError: index 3 is out of bounds for dimension 0 with
  // size 3.
  expect_index_error(thrown("x: f32[3, 4], i: i64[1], v: f32[1, 4]", "index_put(x, [i], v)",
                            {x, longs({1}, {3}), zeros(DType::Float32, {1, 4})}),
                     "index 3 is out of bounds for dimension 0 with size 3");
  // zeros(3, 0), [None, tensor([0])], zeros(1): IndexError: index is out of bounds for
  // dimension with size 0
  expect_index_error(
      thrown("x: f32[3, 0], i: i64[1], v: f32[1]", "index_put(x, [None, i], v, True)",
             {zeros(DType::Float32, {3, 0}), longs({1}, {0}), zeros(DType::Float32, {1})}),
      "index is out of bounds for dimension with size 0");
  // Two tensor indices. zeros(3, 4), [tensor([0, 2]), tensor([1, 4])], zeros(2):
  // IndexError: index 4 is out of bounds for dimension 1 with size 4 (the second index's).
  const std::string two = "x: f32[3, 4], i: i64[2], j: i64[2], v: f32[2]";
  expect_index_error(
      thrown(two, "index_put(x, [i, j], v)",
             {x, longs({2}, {0, 2}), longs({2}, {1, 4}), zeros(DType::Float32, {2})}),
      "index 4 is out of bounds for dimension 1 with size 4");
  // zeros(3, 0), [tensor([5]), tensor([0])], zeros(1): IndexError: index is out of bounds for
  // dimension with size 0 (not the first index's 5 against size 3).
  expect_index_error(
      thrown("x: f32[3, 0], i: i64[1], j: i64[1], v: f32[1]", "index_put(x, [i, j], v)",
             {zeros(DType::Float32, {3, 0}), longs({1}, {5}), longs({1}, {0}),
              zeros(DType::Float32, {1})}),
      "index is out of bounds for dimension with size 0");
}

TEST(EagerScatter, ScatterOutOfRangeIsRuntimeError) {
  const Tensor x = zeros(DType::Float32, {3, 4});
  const Tensor src = zeros(DType::Float32, {1, 1});
  const std::string params = "x: f32[3, 4], i: i64[1, 1], v: f32[1, 1]";
  // A.scatter.src(zeros(3, 4), 1, tensor([[5]]), zeros(1, 1)): RuntimeError: index 5 is out
  // of bounds for dimension 1 with size 4; tensor([[-1]]): index -1 is out of bounds ...
  for (double bad : {5.0, -1.0}) {
    const std::string want = "index " + std::to_string(static_cast<int64_t>(bad)) +
                             " is out of bounds for dimension 1 with size 4";
    const Tensor i = longs({1, 1}, {bad});
    expect_runtime_error(thrown(params, "scatter(x, 1, i, v)", {x, i, src}), want);
    expect_runtime_error(thrown(params, "scatter_add(x, 1, i, v)", {x, i, src}), want);
    expect_runtime_error(thrown("x: f32[3, 4], i: i64[1, 1]", "scatter(x, 1, i, 2.0)", {x, i}),
                         want);
  }
  // A.scatter_add.default(zeros(3, 4), 0, tensor([[3]]), ...): RuntimeError: index 3 is out
  // of bounds for dimension 0 with size 3
  const Thrown t = thrown(params, "scatter_add(x, 0, i, v)", {x, longs({1, 1}, {3}), src});
  expect_runtime_error(t, "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_NE(t.message.find("scatter_add: index 3"), std::string::npos) << t.message;
  // An empty self dim: zeros(3, 0), 1, tensor([[0]]): RuntimeError: index 0 is out of bounds
  // for dimension 1 with size 0.
  expect_runtime_error(thrown("x: f32[3, 0], i: i64[1, 1], v: f32[1, 1]", "scatter(x, 1, i, v)",
                              {zeros(DType::Float32, {3, 0}), longs({1, 1}, {0}), src}),
                       "index 0 is out of bounds for dimension 1 with size 0");
}

TEST(EagerScatter, IndexAddOutOfRangeFollowsTorchsPath) {
  const Tensor x = zeros(DType::Float32, {3, 4});
  // Along the first or the last dim of a self of rank 2 or more, with an int64 index and an
  // alpha of 1, eager index_add is a scatter_add: A.index_add.default(zeros(3, 4), 1,
  // tensor([0, 5]), zeros(3, 2)): RuntimeError: index 5 is out of bounds for dimension 1 with
  // size 4; tensor([-1]): index -1 is out of bounds ...
  expect_runtime_error(thrown("x: f32[3, 4], i: i64[2], v: f32[3, 2]", "index_add(x, 1, i, v)",
                              {x, longs({2}, {0, 5}), zeros(DType::Float32, {3, 2})}),
                       "index 5 is out of bounds for dimension 1 with size 4");
  expect_runtime_error(
      thrown("x: f32[3, 4], i: i64[1], v: f32[1, 4]", "index_add(x, 0, i, v, alpha=1.0)",
             {x, longs({1}, {-1}), zeros(DType::Float32, {1, 4})}),
      "index -1 is out of bounds for dimension 0 with size 3");
  // Otherwise (a 1-D self, an int32 index, a middle dim, another alpha) it loops over the
  // index: IndexError: index out of range in self.
  const Tensor v14 = zeros(DType::Float32, {1, 4});
  expect_index_error(
      thrown("x: f32[3], i: i64[1], v: f32[1]", "index_add(x, 0, i, v)",
             {zeros(DType::Float32, {3}), longs({1}, {3}), zeros(DType::Float32, {1})}),
      "index out of range in self");
  expect_index_error(thrown("x: f32[3, 4], i: i32[1], v: f32[1, 4]", "index_add(x, 0, i, v)",
                            {x, longs({1}, {3}, DType::Int32), v14}),
                     "index out of range in self");
  expect_index_error(thrown("x: f32[3, 4], i: i64[1], v: f32[1, 4]",
                            "index_add(x, 0, i, v, alpha=2)", {x, longs({1}, {-1}), v14}),
                     "index out of range in self");
  expect_index_error(
      thrown("x: f32[1, 2, 1], i: i64[1], v: f32[1, 1, 1]", "index_add(x, 1, i, v)",
             {zeros(DType::Float32, {1, 2, 1}), longs({1}, {2}), zeros(DType::Float32, {1, 1, 1})}),
      "index out of range in self");
  // A 1-D self of size 0 checks its index (A.index_add.default(zeros(0), 0, tensor([5]),
  // zeros(1)): IndexError: index out of range in self); a larger self without elements does
  // not (scatter_torch_cases' index_add_empty_self_dim).
  expect_index_error(
      thrown("x: f32[0], i: i64[1], v: f32[1]", "index_add(x, 0, i, v)",
             {zeros(DType::Float32, {0}), longs({1}, {5}), zeros(DType::Float32, {1})}),
      "index out of range in self");
}

}  // namespace
}  // namespace stax::eager
