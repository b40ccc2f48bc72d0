// The eager interpreter on the views and data-movement ops of issue 6, point 6. Expected
// values, strides and error messages come from torch 2.13.0 (the Python expression is in a
// comment beside each).
#include <gtest/gtest.h>

#include <cmath>

#include "eager_test_util.h"

namespace stax::eager {
namespace {

using testing::int64_values;
using testing::make;
using testing::run1;
using testing::run_text;
using testing::values;

Tensor arange(DType dtype, std::vector<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v;
  for (int64_t k = 0; k < n; ++k) v.push_back(static_cast<double>(k));
  return make(dtype, std::move(sizes), v);
}

// The message of the exception `text` raises on `inputs` (empty when it runs).
std::string error_of(const std::string& text, const std::vector<Tensor>& inputs) {
  try {
    run_text(text, inputs);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

const Tensor x10 = arange(DType::Float32, {10});

TEST(Movement, SliceClampsLikePyTorch) {
  const std::string head = "def f(x: f32[10]):\n";
  // torch.ops.aten.slice.Tensor(x, 0, -100, 100, 3) -> [0, 3, 6, 9], stride (3,)
  Tensor s = run1(head + "  s = slice(x, 0, -100, 100, 3)\n  return s\n", {x10});
  EXPECT_EQ(values(s), (std::vector<double>{0, 3, 6, 9}));
  EXPECT_EQ(s.strides(), (std::vector<int64_t>{3}));
  EXPECT_EQ(s.storage(), x10.storage());
  // x[-3:] -> [7, 8, 9]; slice(x, 0, 7, 2) and slice(x, 0, 12, 20) are empty.
  EXPECT_EQ(values(run1(head + "  s = slice(x, start=-3)\n  return s\n", {x10})),
            (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(run1(head + "  s = slice(x, 0, 7, 2)\n  return s\n", {x10}).sizes(),
            (std::vector<int64_t>{0}));
  EXPECT_EQ(run1(head + "  s = slice(x, 0, 12, 20)\n  return s\n", {x10}).sizes(),
            (std::vector<int64_t>{0}));
  // "slice step must be positive"
  EXPECT_TRUE(contains(error_of(head + "  s = slice(x, 0, 0, 5, 0)\n  return s\n", {}),
                       "slice step must be positive"));
}

TEST(Movement, SelectAndNarrow) {
  const Tensor x = arange(DType::Float32, {3, 4});
  const std::string head = "def f(x: f32[3, 4]):\n";
  Tensor s = run1(head + "  s = select(x, 1, -1)\n  return s\n", {x});
  EXPECT_EQ(values(s), (std::vector<double>{3, 7, 11}));
  EXPECT_EQ(s.strides(), (std::vector<int64_t>{4}));
  EXPECT_EQ(s.offset(), 3);
  // select(): index 3 out of range for tensor of size [3, 4] at dimension 0
  EXPECT_TRUE(contains(error_of(head + "  s = select(x, 0, 3)\n  return s\n", {}),
                       "index 3 out of range for tensor of size [3, 4] at dimension 0"));
  // torch.narrow(torch.arange(10.), 0, -3, 2) -> [7, 8]
  EXPECT_EQ(values(run1("def f(x: f32[10]):\n  n = narrow(x, 0, -3, 2)\n  return n\n", {x10})),
            (std::vector<double>{7, 8}));
  // "start (8) + length (3) exceeds dimension size (10)."
  EXPECT_TRUE(contains(error_of("def f(x: f32[10]):\n  n = narrow(x, 0, 8, 3)\n  return n\n", {}),
                       "start (8) + length (3) exceeds dimension size (10)"));
}

TEST(Movement, SplitGivesOneValuePerPart) {
  const std::string text = R"(
def f(x: f32[10]):
    a, b, c, d = split(x, 3)
    return d, b
)";
  std::vector<Tensor> out = run_text(text, {x10});
  EXPECT_EQ(values(out[0]), (std::vector<double>{9}));  // torch.split(x, 3)[3]
  EXPECT_EQ(values(out[1]), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(out[1].storage(), x10.storage());
  std::vector<Tensor> parts = run_text(R"(
def f(x: f32[10]):
    a, b = split_with_sizes(x, [6, 4], 0)
    return b
)",
                                       {x10});
  EXPECT_EQ(values(parts[0]), (std::vector<double>{6, 7, 8, 9}));
  // split_with_sizes expects split_sizes to sum exactly to 10 (input tensor's size at
  // dimension 0), but got split_sizes=[3, 3]
  EXPECT_TRUE(contains(error_of("def f(x: f32[10]):\n  a, b = split_with_sizes(x, [3, 3])\n"
                                "  return a\n",
                                {}),
                       "expects split_sizes to sum exactly to 10"));
  // Four results need four names.
  EXPECT_TRUE(contains(error_of("def f(x: f32[10]):\n  a, b = split(x, 3)\n  return a\n", {}),
                       "gives 4 results but 2 names were given"));
}

TEST(Movement, CatWithTheLegacyEmptyRuleAndPromotion) {
  // torch.cat([torch.ones(2,3), torch.zeros(0)], 1) -> the ones, shape (2, 3)
  const Tensor a = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor e = make(DType::Float32, {0}, {});
  Tensor c = run1("def f(a: f32[2, 3], e: f32[0]):\n  c = cat([a, e], 1)\n  return c\n", {a, e});
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(c), values(a));
  // torch.cat([bool, int8]) is int8; with an int64 block after floats, float32.
  const Tensor b = make(DType::Bool, {1}, {1});
  const Tensor i8 = make(DType::Int8, {2}, {-3, 7});
  Tensor ci = run1("def f(b: bool[1], i: i8[2]):\n  c = cat([b, i])\n  return c\n", {b, i8});
  EXPECT_EQ(ci.dtype(), DType::Int8);
  EXPECT_EQ(values(ci), (std::vector<double>{1, -3, 7}));
  const Tensor big = make(DType::Int64, {1, 3}, {0, 0, 0});
  int64_t* raw = static_cast<int64_t*>(big.data());
  raw[0] = (int64_t{1} << 53) + 1;  // rounds to 2^53 in float32 as in double
  raw[1] = 16777217;                // 2^24 + 1: float32 rounds it to 2^24 (once)
  Tensor cf = run1("def f(a: f32[2, 3], b: i64[1, 3]):\n  c = cat([a, b])\n  return c\n", {a, big});
  EXPECT_EQ(cf.dtype(), DType::Float32);
  EXPECT_EQ(values(cf), (std::vector<double>{1, 2, 3, 4, 5, 6, 9007199254740992.0, 16777216, 0}));
  // Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for
  // tensor number 1 in the list.
  EXPECT_TRUE(contains(
      error_of("def f(a: f32[2, 3], b: f32[2, 4]):\n  c = cat([a, b])\n  return c\n", {}),
      "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for "
      "tensor number 1 in the list"));
  // zero-dimensional tensor (at position 0) cannot be concatenated
  EXPECT_TRUE(contains(error_of("def f(z: f32[]):\n  c = cat([z])\n  return c\n", {}),
                       "zero-dimensional tensor (at position 0) cannot be concatenated"));
}

TEST(Movement, Stack) {
  // torch.stack([a, a.t().t()+10], 2) for a = arange(6).reshape(2, 3)
  const Tensor a = arange(DType::Float32, {2, 3});
  Tensor s = run1(R"(
def f(a: f32[2, 3]):
    b = add(a, 10)
    s = stack([a, b], 2)
    return s
)",
                  {a});
  EXPECT_EQ(s.sizes(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(values(s), (std::vector<double>{0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15}));
  // stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry 1
  EXPECT_TRUE(contains(
      error_of("def f(a: f32[2, 3], b: f32[3, 2]):\n  s = stack([a, b])\n  return s\n", {}),
      "expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry 1"));
}

TEST(Movement, ConstantPadNd) {
  // torch.constant_pad_nd(torch.arange(4.).reshape(2,2), [1, -1, 0, 1], 9.0)
  //   -> [[9, 0], [9, 2], [9, 9]]
  const Tensor x = arange(DType::Float32, {2, 2});
  Tensor p = run1(
      "def f(x: f32[2, 2]):\n  p = constant_pad_nd(x, [1, -1, 0, 1], 9.0)\n"
      "  return p\n",
      {x});
  EXPECT_EQ(p.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(p), (std::vector<double>{9, 0, 9, 2, 9, 9}));
  // Integer fill values truncate: pad value -1.7 on int64 fills -1; 0.5 on bool is True.
  const Tensor i = arange(DType::Int64, {2, 2});
  EXPECT_EQ(values(run1("def f(x: i64[2, 2]):\n  p = constant_pad_nd(x, [1, 0], -1.7)\n"
                        "  return p\n",
                        {i})),
            (std::vector<double>{-1, 0, 1, -1, 2, 3}));
  const Tensor b = make(DType::Bool, {2}, {0, 1});
  EXPECT_EQ(
      values(run1("def f(x: bool[2]):\n  p = constant_pad_nd(x, [1, 0], 0.5)\n  return p\n", {b})),
      (std::vector<double>{1, 0, 1}));
  // "value cannot be converted to type int8_t without overflow" for -128.9 on int8
  EXPECT_TRUE(contains(
      error_of("def f(x: i8[2]):\n  p = constant_pad_nd(x, [1, 1], -128.9)\n  return p\n", {}),
      "cannot be converted to type i8 without overflow"));
  // "Length of pad must be even but instead it equals 1"
  EXPECT_TRUE(
      contains(error_of("def f(x: f32[10]):\n  p = constant_pad_nd(x, [1])\n  return p\n", {}),
               "Length of pad must be even but instead it equals 1"));
}

TEST(Movement, SliceAndSelectScatter) {
  const Tensor x = arange(DType::Float32, {3, 4});
  const std::string head = "def f(x: f32[3, 4], s: f32[3, 2]):\n";
  const Tensor src = make(DType::Float32, {3, 2}, {-1, -1, -1, -1, -1, -1});
  // torch.slice_scatter(x, torch.full((3, 2), -1.), 1, 1, None, 2)
  EXPECT_EQ(values(run1(head + "  y = slice_scatter(x, s, 1, 1, None, 2)\n  return y\n", {x, src})),
            (std::vector<double>{0, -1, 2, -1, 4, -1, 6, -1, 8, -1, 10, -1}));
  // torch.slice_scatter(x, torch.full((1, 4), -1.), 0, -1): a negative start counts from the end
  const Tensor row = make(DType::Float32, {1, 4}, {-1, -1, -1, -1});
  EXPECT_EQ(values(run1("def f(x: f32[3, 4], s: f32[1, 4]):\n  y = slice_scatter(x, s, 0, -1)\n"
                        "  return y\n",
                        {x, row})),
            (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, -1, -1, -1, -1}));
  // torch.select_scatter(x, torch.full((3,), -1.), 1, -2)
  const Tensor column = make(DType::Float32, {3}, {-1, -1, -1});
  EXPECT_EQ(values(run1("def f(x: f32[3, 4], s: f32[3]):\n  y = select_scatter(x, s, 1, -2)\n"
                        "  return y\n",
                        {x, column})),
            (std::vector<double>{0, 1, -1, 3, 4, 5, -1, 7, 8, 9, -1, 11}));
  // An empty slice past the end leaves self as it is.
  EXPECT_EQ(values(run1("def f(x: f32[3, 4], s: f32[3, 0]):\n  y = slice_scatter(x, s, 1, 7, 9)\n"
                        "  return y\n",
                        {x, make(DType::Float32, {3, 0}, {})})),
            values(x));
  // expected src to have a size equal to the slice of self. src size = [3, 2], slice size =
  // [3, 1]
  EXPECT_TRUE(contains(error_of(head + "  y = slice_scatter(x, s, 1, 0, 1)\n  return y\n", {}),
                       "expected src to have a size equal to the slice of self. src size = [3, 2], "
                       "slice size = [3, 1]"));
  // "slice step must be positive"; select(): index 4 out of range ...
  EXPECT_TRUE(contains(error_of(head + "  y = slice_scatter(x, s, 1, 0, 4, 0)\n  return y\n", {}),
                       "slice step must be positive"));
  EXPECT_TRUE(contains(
      error_of("def f(x: f32[3, 4], s: f32[3]):\n  y = select_scatter(x, s, 1, 4)\n  return y\n",
               {}),
      "index 4 out of range for tensor of size [3, 4] at dimension 1"));
  EXPECT_TRUE(contains(
      error_of("def f(x: f32[3, 4], s: f64[3]):\n  y = select_scatter(x, s, 1, 0)\n  return y\n",
               {}),
      "expected src of self's dtype f32, got f64"));
}

TEST(Movement, FlipAndRoll) {
  const Tensor x = arange(DType::Float32, {2, 3});
  // torch.flip(x, [0, -1]) -> [[5, 4, 3], [2, 1, 0]]
  EXPECT_EQ(values(run1("def f(x: f32[2, 3]):\n  y = flip(x, [0, -1])\n  return y\n", {x})),
            (std::vector<double>{5, 4, 3, 2, 1, 0}));
  // torch.roll(x, 1) -> [[5, 0, 1], [2, 3, 4]] (flattened)
  EXPECT_EQ(values(run1("def f(x: f32[2, 3]):\n  y = roll(x, [1])\n  return y\n", {x})),
            (std::vector<double>{5, 0, 1, 2, 3, 4}));
  // torch.roll(x, [1, -4], [0, 1]) -> [[4, 5, 3], [1, 2, 0]]
  EXPECT_EQ(values(run1("def f(x: f32[2, 3]):\n  y = roll(x, [1, -4], [0, 1])\n  return y\n", {x})),
            (std::vector<double>{4, 5, 3, 1, 2, 0}));
  // torch.roll(x, [1, 1], [0, 0]) is x: the shifts of a repeated dim add up.
  EXPECT_EQ(values(run1("def f(x: f32[2, 3]):\n  y = roll(x, [1, 1], [0, 0])\n  return y\n", {x})),
            values(x));
  // "dim 0 appears multiple times in the list of dims"
  EXPECT_TRUE(contains(error_of("def f(x: f32[2, 3]):\n  y = flip(x, [0, 0])\n  return y\n", {}),
                       "appears more than once"));
}

TEST(Movement, IndirectLoads) {
  const Tensor w = arange(DType::Float32, {3, 2});
  // torch.index_select(w, 0, tensor([2, -1, 0])) raises (negative indices are out of range
  // for index_select); tensor([2, 1, 0]) -> rows 2, 1, 0.
  const Tensor j = make(DType::Int32, {3}, {2, 1, 0});
  EXPECT_EQ(values(run1("def f(w: f32[3, 2], j: i32[3]):\n  s = index_select(w, 0, j)\n"
                        "  return s\n",
                        {w, j})),
            (std::vector<double>{4, 5, 2, 3, 0, 1}));
  // torch.gather(w, 1, tensor([[1, 0], [0, 0]])) -> [[1, 0], [2, 2]]
  const Tensor g = make(DType::Int64, {2, 2}, {1, 0, 0, 0});
  EXPECT_EQ(values(run1("def f(w: f32[3, 2], g: i64[2, 2]):\n  y = gather(w, 1, g)\n"
                        "  return y\n",
                        {w, g})),
            (std::vector<double>{1, 0, 2, 2}));
  // torch.ops.aten.embedding(arange(8.).reshape(4, 2), tensor([[3, 0]])) -> [[[6, 7], [0, 1]]]
  const Tensor w4 = arange(DType::Float32, {4, 2});
  const Tensor i = make(DType::Int64, {1, 2}, {3, 0});
  Tensor e =
      run1("def f(w: f32[4, 2], i: i64[1, 2]):\n  e = embedding(w, i)\n  return e\n", {w4, i});
  EXPECT_EQ(e.sizes(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(values(e), (std::vector<double>{6, 7, 0, 1}));
  // torch.ops.aten.index.Tensor(w, [None, tensor([1, -2])]) -> [[1, 0], [3, 2], [5, 4]]
  const Tensor k = make(DType::Int64, {2}, {1, -2});
  EXPECT_EQ(values(run1("def f(w: f32[3, 2], k: i64[2]):\n  y = index(w, [None, k])\n"
                        "  return y\n",
                        {w, k})),
            (std::vector<double>{1, 0, 3, 2, 5, 4}));
  // torch.ops.aten.index.Tensor(arange(24.).reshape(2,3,4), [None, tensor([[0, 2]])]) has
  // shape (2, 1, 2, 4): the index's dims replace the indexed dim.
  const Tensor x = arange(DType::Float32, {2, 3, 4});
  const Tensor k2 = make(DType::Int64, {1, 2}, {0, 2});
  Tensor y = run1(
      "def f(x: f32[2, 3, 4], k: i64[1, 2]):\n  y = index(x, [None, k])\n"
      "  return y\n",
      {x, k2});
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 1, 2, 4}));
  EXPECT_EQ(values(y),
            (std::vector<double>{0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23}));
}

// index.Tensor with several tensor indices (torch 2.13.0, x = arange(24.).reshape(2, 3, 4)):
// they broadcast together; adjacent ones put the broadcast dims in their place, separated
// ones put them first; the first bad value, position by position and the indices in order at
// each, is refused naming its index's position among the tensor indices.
TEST(Movement, SeveralTensorIndices) {
  const Tensor x = arange(DType::Float32, {2, 3, 4});
  const std::string head = "def f(x: f32[2, 3, 4], i: i64[";
  // index.Tensor(x, [tensor([[0], [1]]), tensor([0, 2, -1])]): shape (2, 3, 4)
  Tensor a = run1(head + "2, 1], j: i64[3]):\n  y = index(x, [i, j])\n  return y\n",
                  {x, make(DType::Int64, {2, 1}, {0, 1}), make(DType::Int64, {3}, {0, 2, -1})});
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(values(a), (std::vector<double>{0,  1,  2,  3,  8,  9,  10, 11, 8,  9,  10, 11,
                                            12, 13, 14, 15, 20, 21, 22, 23, 20, 21, 22, 23}));
  // [None, tensor([0, 2]), tensor([3, -4])] (an int32 beside an int64): [[3, 8], [15, 20]]
  Tensor b = run1(head + "2], j: i32[2]):\n  y = index(x, [None, i, j])\n  return y\n",
                  {x, make(DType::Int64, {2}, {0, 2}), make(DType::Int32, {2}, {3, -4})});
  EXPECT_EQ(b.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(b), (std::vector<double>{3, 8, 15, 20}));
  // [tensor([1, 0]), None, tensor([3, 1])]: shape (2, 3), the broadcast dim first
  Tensor c = run1(head + "2], j: i64[2]):\n  y = index(x, [i, None, j])\n  return y\n",
                  {x, make(DType::Int64, {2}, {1, 0}), make(DType::Int64, {2}, {3, 1})});
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(c), (std::vector<double>{15, 19, 23, 1, 5, 9}));
  // [tensor([0, 1]), tensor([1, 3])]: IndexError: index 3 is out of bounds for dimension 1
  // with size 3; [tensor([1, 2]), tensor([0, 5])]: index 2 ... dimension 0 with size 2.
  const std::string two = head + "2], j: i64[2]):\n  y = index(x, [i, j])\n  return y\n";
  EXPECT_TRUE(
      contains(error_of(two, {x, make(DType::Int64, {2}, {0, 1}), make(DType::Int64, {2}, {1, 3})}),
               "index: index 3 is out of bounds for dimension 1 with size 3"));
  EXPECT_TRUE(
      contains(error_of(two, {x, make(DType::Int64, {2}, {1, 2}), make(DType::Int64, {2}, {0, 5})}),
               "index: index 2 is out of bounds for dimension 0 with size 2"));
  // IndexError: shape mismatch: indexing tensors could not be broadcast together with shapes
  // [2], [3]
  EXPECT_TRUE(contains(
      error_of(head + "2], j: i64[3]):\n  y = index(x, [i, j])\n  return y\n", {}),
      "index: shape mismatch: indexing tensors could not be broadcast together with shapes "
      "[2], [3]"));
}

TEST(Movement, OutOfRangeIndicesNameTheOpAndTheValue) {
  const Tensor w = arange(DType::Float32, {3, 2});
  // torch.gather(w, 1, tensor([[2]])): "index 2 is out of bounds for dimension 1 with size 2"
  const Tensor g = make(DType::Int64, {1, 1}, {2});
  EXPECT_TRUE(contains(
      error_of("def f(w: f32[3, 2], g: i64[1, 1]):\n  y = gather(w, 1, g)\n  return y\n", {w, g}),
      "gather: index 2 is out of bounds for dimension 1 with size 2"));
  // index.Tensor(w, [None, tensor([-3])]): "index -3 is out of bounds for dimension 0 with
  // size 2" (PyTorch numbers the dims among the tensor indices).
  const Tensor k = make(DType::Int64, {1}, {-3});
  EXPECT_TRUE(contains(error_of("def f(w: f32[3, 2], k: i64[1]):\n  y = index(w, [None, k])\n"
                                "  return y\n",
                                {w, k}),
                       "index: index -3 is out of bounds for dimension 0 with size 2"));
  // embedding and index_select: PyTorch says "index out of range in self"; Stax also names
  // the value.
  const Tensor i = make(DType::Int64, {1}, {3});
  EXPECT_TRUE(contains(
      error_of("def f(w: f32[3, 2], i: i64[1]):\n  e = embedding(w, i)\n  return e\n", {w, i}),
      "embedding: index out of range in self (index 3 for dimension 0 with size 3)"));
  EXPECT_TRUE(contains(error_of("def f(w: f32[3, 2], i: i64[1]):\n  e = index_select(w, 0, i)\n"
                                "  return e\n",
                                {w, i}),
                       "index_select: index out of range in self (index 3 for dimension 0"));
  // Index dtypes: gather(): Expected dtype int32/int64 for index.
  EXPECT_TRUE(contains(
      error_of("def f(w: f32[3, 2], g: f32[1, 1]):\n  y = gather(w, 1, g)\n  return y\n", {}),
      "expected dtype int32 or int64 for the index 'g'"));
}

TEST(Movement, AsStridedAndClonePreserve) {
  // torch.as_strided(torch.arange(6.), (2,2), (1,2), 1) -> [[1, 3], [2, 4]]
  const Tensor x = arange(DType::Float32, {6});
  Tensor a = run1("def f(x: f32[6]):\n  a = as_strided(x, [2, 2], [1, 2], 1)\n  return a\n", {x});
  EXPECT_EQ(values(a), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_EQ(a.storage(), x.storage());
  // as_strided of a slice with no offset keeps the slice's offset: x[2:] -> [2, 3].
  Tensor b = run1(
      "def f(x: f32[6]):\n  s = slice(x, 0, 2)\n  a = as_strided(s, [2], [1])\n"
      "  return a\n",
      {x});
  EXPECT_EQ(values(b), (std::vector<double>{2, 3}));
  // Past the storage: PyTorch's setStorage refuses it.
  EXPECT_FALSE(
      error_of("def f(x: f32[6]):\n  a = as_strided(x, [2, 2], [1, 2], 4)\n  return a\n", {x})
          .empty());
  // clone of arange(24).reshape(2,3,4).permute(2,0,1) keeps strides (1, 12, 4); of an
  // expanded x.t().expand(2,3,2) gives (6, 1, 3); of a column slice [:, :2] gives (2, 1).
  const Tensor y = arange(DType::Float32, {2, 3, 4});
  EXPECT_EQ(run1("def f(y: f32[2, 3, 4]):\n  p = permute(y, [2, 0, 1])\n  c = clone(p)\n"
                 "  return c\n",
                 {y})
                .strides(),
            (std::vector<int64_t>{1, 12, 4}));
  const Tensor m = arange(DType::Float32, {2, 3});
  Tensor ce = run1(
      "def f(m: f32[2, 3]):\n  t = transpose(m, 0, 1)\n  e = expand(t, [2, 3, 2])\n"
      "  c = clone(e)\n  return c\n",
      {m});
  EXPECT_EQ(ce.strides(), (std::vector<int64_t>{6, 1, 3}));
  EXPECT_EQ(values(ce), (std::vector<double>{0, 3, 1, 4, 2, 5, 0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(run1("def f(m: f32[2, 3]):\n  s = slice(m, 1, 0, 2)\n  c = clone(s)\n  return c\n", {m})
                .strides(),
            (std::vector<int64_t>{2, 1}));
}

TEST(Movement, Int64ElementsAreCopiedExactly) {
  const Tensor x = make(DType::Int64, {2}, {0, 0});
  int64_t* raw = static_cast<int64_t*>(x.data());
  raw[0] = std::numeric_limits<int64_t>::max();
  raw[1] = std::numeric_limits<int64_t>::min() + 1;
  Tensor f = run1("def f(x: i64[2]):\n  y = flip(x, [0])\n  return y\n", {x});
  EXPECT_EQ(int64_values(f), (std::vector<int64_t>{std::numeric_limits<int64_t>::min() + 1,
                                                   std::numeric_limits<int64_t>::max()}));
}

}  // namespace
}  // namespace stax::eager
