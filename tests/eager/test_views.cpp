// Tests of the eager view and copy ops: PyTorch strides, storage aliasing, view errors on
// incompatible layouts and reshape's copy fallback.
#include <gtest/gtest.h>

#include "eager_test_util.h"

namespace stax::eager {
namespace {

using testing::make;
using testing::run1;
using testing::values;

using Sizes = std::vector<int64_t>;

TEST(ViewStrides, Rules) {
  EXPECT_EQ(view_strides({2, 3}, {3, 1}, {6}), Sizes{1});
  EXPECT_EQ(view_strides({2, 3}, {3, 1}, {3, 2}), (Sizes{2, 1}));
  EXPECT_EQ(view_strides({6}, {1}, {1, 2, 1, 3}), (Sizes{6, 3, 3, 1}));
  // Transposed: only splits/merges inside uniformly strided chunks work.
  EXPECT_EQ(view_strides({3, 2}, {1, 3}, {6}), std::nullopt);
  EXPECT_EQ(view_strides({3, 2}, {1, 3}, {3, 2, 1}), (Sizes{1, 3, 1}));
  EXPECT_EQ(view_strides({4, 6}, {1, 4}, {2, 2, 6}), (Sizes{2, 1, 4}));
  EXPECT_EQ(view_strides({4, 6}, {1, 4}, {4, 2, 3}), (Sizes{1, 12, 4}));
  // Strided rows (every other row): rows cannot merge with columns.
  EXPECT_EQ(view_strides({2, 3}, {6, 1}, {6}), std::nullopt);
  EXPECT_EQ(view_strides({2, 3}, {6, 1}, {2, 3, 1}), (Sizes{6, 1, 1}));
  // Expanded (stride 0).
  EXPECT_EQ(view_strides({3, 4}, {0, 1}, {12}), std::nullopt);
  EXPECT_EQ(view_strides({3, 4}, {0, 1}, {3, 2, 2}), (Sizes{0, 2, 1}));
  EXPECT_EQ(view_strides({3, 4}, {0, 0}, {12}), Sizes{0});
  // Size mismatch and empty tensors.
  EXPECT_EQ(view_strides({2, 3}, {3, 1}, {5}), std::nullopt);
  EXPECT_EQ(view_strides({0, 3}, {3, 1}, {3, 0}), (Sizes{1, 1}));
  EXPECT_EQ(view_strides({}, {}, {1, 1}), (Sizes{1, 1}));
}

TEST(Views, ViewAndReshapeAliasContiguousInputs) {
  Tensor x = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor v = run1("def g(x: f32[2, 3]):\n  v = view(x, [3, -1])\n  return v\n", {x});
  EXPECT_EQ(v.sizes(), (Sizes{3, 2}));
  EXPECT_EQ(v.strides(), (Sizes{2, 1}));
  EXPECT_EQ(v.storage(), x.storage());
  Tensor r = run1("def g(x: f32[2, 3]):\n  r = reshape(x, [6])\n  return r\n", {x});
  EXPECT_EQ(r.storage(), x.storage());
  EXPECT_EQ(values(r), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // Writes through the view are visible in the input.
  r.set({5}, 60);
  EXPECT_EQ(x.get({1, 2}), 60);
}

TEST(Views, ViewOfIncompatibleLayoutThrows) {
  Tensor base = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor xt = base.as_strided({3, 2}, {1, 3}, 0);
  try {
    run1("def g(x: f32[3, 2]):\n  v = view(x, [6])\n  return v\n", {xt});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("view size is not compatible with input tensor's size "
                                         "and stride"),
              std::string::npos)
        << e.what();
  }
  // Same through a transpose inside the graph.
  Tensor x = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(run1("def g(x: f32[2, 3]):\n  t = transpose(x, 0, 1)\n  v = view(t, [6])\n"
                    "  return v\n",
                    {x}),
               std::invalid_argument);
}

TEST(Views, ReshapeCopiesWhenNoViewExists) {
  Tensor x = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = run1(
      "def g(x: f32[2, 3]):\n  t = transpose(x, 0, 1)\n  r = reshape(t, [6])\n"
      "  return r\n",
      {x});
  EXPECT_NE(r.storage(), x.storage());
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_EQ(values(r), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(Views, PermuteTranspose) {
  Tensor x = Tensor::empty(DType::Float32, {2, 3, 4});
  for (int64_t i = 0; i < 24; ++i) x.set_flat(i, static_cast<double>(i));
  Tensor p = run1("def g(x: f32[2, 3, 4]):\n  p = permute(x, [2, 0, 1])\n  return p\n", {x});
  EXPECT_EQ(p.sizes(), (Sizes{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Sizes{1, 12, 4}));
  EXPECT_EQ(p.storage(), x.storage());
  EXPECT_EQ(p.get({3, 1, 2}), x.get({1, 2, 3}));
  Tensor t = run1("def g(x: f32[2, 3, 4]):\n  t = transpose(x, -1, 0)\n  return t\n", {x});
  EXPECT_EQ(t.sizes(), (Sizes{4, 3, 2}));
  EXPECT_EQ(t.strides(), (Sizes{1, 4, 12}));
  EXPECT_EQ(t.get({3, 1, 0}), x.get({0, 1, 3}));
}

TEST(Views, UnsqueezeSqueeze) {
  Tensor x = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor u = run1("def g(x: f32[2, 3]):\n  u = unsqueeze(x, 1)\n  return u\n", {x});
  EXPECT_EQ(u.sizes(), (Sizes{2, 1, 3}));
  EXPECT_EQ(u.strides(), (Sizes{3, 3, 1}));
  u = run1("def g(x: f32[2, 3]):\n  u = unsqueeze(x, -1)\n  return u\n", {x});
  EXPECT_EQ(u.sizes(), (Sizes{2, 3, 1}));
  EXPECT_EQ(u.strides(), (Sizes{3, 1, 1}));
  EXPECT_EQ(u.storage(), x.storage());
  Tensor y = make(DType::Float32, {1, 3, 1}, {1, 2, 3});
  Tensor s = run1("def g(y: f32[1, 3, 1]):\n  s = squeeze(y)\n  return s\n", {y});
  EXPECT_EQ(s.sizes(), (Sizes{3}));
  EXPECT_EQ(s.storage(), y.storage());
  s = run1("def g(y: f32[1, 3, 1]):\n  s = squeeze(y, dim=[-1])\n  return s\n", {y});
  EXPECT_EQ(s.sizes(), (Sizes{1, 3}));
  s = run1("def g(y: f32[1, 3, 1]):\n  s = squeeze(y, dim=[1])\n  return s\n", {y});
  EXPECT_EQ(s.sizes(), (Sizes{1, 3, 1}));
}

TEST(Views, ExpandUsesStrideZero) {
  Tensor x = make(DType::Float32, {3, 1}, {1, 2, 3});
  Tensor e = run1("def g(x: f32[3, 1]):\n  e = expand(x, [2, 3, 4])\n  return e\n", {x});
  EXPECT_EQ(e.sizes(), (Sizes{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Sizes{0, 1, 0}));
  EXPECT_EQ(e.storage(), x.storage());
  EXPECT_EQ(e.get({1, 2, 3}), 3);
  e = run1("def g(x: f32[3, 1]):\n  e = expand(x, [-1, 2])\n  return e\n", {x});
  EXPECT_EQ(e.sizes(), (Sizes{3, 2}));
  EXPECT_EQ(values(e), (std::vector<double>{1, 1, 2, 2, 3, 3}));
}

TEST(Views, CloneAndContiguous) {
  Tensor x = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor c = run1("def g(x: f32[2, 3]):\n  c = clone(x)\n  return c\n", {x});
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_EQ(values(c), values(x));
  // contiguous of a contiguous tensor is the tensor itself.
  c = run1("def g(x: f32[2, 3]):\n  c = contiguous(x)\n  return c\n", {x});
  EXPECT_EQ(c.storage(), x.storage());
  c = run1("def g(x: f32[2, 3]):\n  t = transpose(x, 0, 1)\n  c = contiguous(t)\n  return c\n",
           {x});
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values(c), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  // clone keeps the strides of a dense input (memory_format=None is preserve_format):
  // torch.arange(6.).reshape(2,3).t().clone().stride() == (1, 3) in torch 2.13.0.
  c = run1("def g(x: f32[2, 3]):\n  t = transpose(x, 0, 1)\n  c = clone(t)\n  return c\n", {x});
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_EQ(c.strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(c), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  c = run1(
      "def g(x: f32[2, 3]):\n  t = transpose(x, 0, 1)\n"
      "  c = clone(t, memory_format='contiguous_format')\n  return c\n",
      {x});
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values(c), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(Views, ViewOfInputWithOffset) {
  // A graph input that is itself a view with a storage offset keeps it through views.
  Tensor base = make(DType::Float32, {8}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor x = base.as_strided({2, 3}, {3, 1}, 2);
  Tensor v = run1("def g(x: f32[2, 3]):\n  v = view(x, [3, 2])\n  return v\n", {x});
  EXPECT_EQ(v.offset(), 2);
  EXPECT_EQ(values(v), (std::vector<double>{2, 3, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace stax::eager
