// Tests of the tensor helpers: random tensors, JSON round trips (NaN/inf, bool, exact int64),
// tensor_from_json error messages and compare()'s allclose semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "eager/tensor_io.h"
#include "eager_test_util.h"

namespace stax::eager {
namespace {

using nlohmann::json;
using testing::int64_values;
using testing::make;
using testing::values;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(RandomTensor, DeterministicAndInRange) {
  Tensor a = random_tensor(DType::Float32, {4, 5}, 42);
  Tensor b = random_tensor(DType::Float32, {4, 5}, 42);
  Tensor c = random_tensor(DType::Float32, {4, 5}, 43);
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_EQ(values(a), values(b));
  EXPECT_NE(values(a), values(c));
  for (double v : values(a)) {
    EXPECT_GE(v, -1.0);
    EXPECT_LE(v, 1.0);
  }
  for (double v : values(random_tensor(DType::Int32, {100}, 1))) {
    EXPECT_GE(v, -10);
    EXPECT_LE(v, 10);
    EXPECT_EQ(v, std::trunc(v));
  }
  for (double v : values(random_tensor(DType::UInt8, {100}, 1))) EXPECT_LE(v, 20);
  bool seen[2] = {false, false};
  for (double v : values(random_tensor(DType::Bool, {100}, 1))) seen[v != 0] = true;
  EXPECT_TRUE(seen[0] && seen[1]);
}

TEST(RandomTensor, StridedHasSameLogicalValues) {
  Tensor a = random_tensor(DType::Float16, {3, 4}, 7);
  Tensor s = random_tensor_strided(DType::Float16, {3, 4}, {1, 3}, 7);
  EXPECT_EQ(s.strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(values(a), values(s));
}

TEST(TensorJson, NestedListsWithSpecialValues) {
  Tensor t = make(DType::Float32, {2, 3}, {1.5, kNaN, kInf, -kInf, 0, -2});
  json j = tensor_to_json(t);
  EXPECT_EQ(j.dump(), R"([[1.5,"nan","inf"],["-inf",0.0,-2.0]])");
  Tensor back = tensor_from_json(j, DType::Float32, {2, 3}, "t");
  EXPECT_TRUE(compare(back, t, 0, 0).within_tolerance);
  EXPECT_TRUE(std::isnan(back.get({0, 1})));
  EXPECT_EQ(back.get({1, 0}), -kInf);
}

TEST(TensorJson, RoundTripsExactly) {
  Tensor f = random_tensor(DType::Float32, {3, 5}, 3);
  EXPECT_EQ(values(tensor_from_json(tensor_to_json(f), DType::Float32, {3, 5}, "f")), values(f));
  Tensor h = random_tensor(DType::BFloat16, {4}, 3);
  EXPECT_EQ(values(tensor_from_json(tensor_to_json(h), DType::BFloat16, {4}, "h")), values(h));
  // Transposed input: JSON is in logical order.
  Tensor base = make(DType::Int32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(tensor_to_json(base.as_strided({3, 2}, {1, 3}, 0)).dump(), "[[1,4],[2,5],[3,6]]");
  // Bool and 0-dim.
  Tensor b = make(DType::Bool, {2}, {1, 0});
  EXPECT_EQ(tensor_to_json(b).dump(), "[true,false]");
  EXPECT_EQ(values(tensor_from_json(json::parse("[true,false]"), DType::Bool, {2}, "b")),
            (std::vector<double>{1, 0}));
  Tensor s = make(DType::Float64, {}, {0.1});
  EXPECT_EQ(tensor_to_json(s).dump(), "0.1");
  EXPECT_EQ(tensor_from_json(json(0.1), DType::Float64, {}, "s").get({}), 0.1);
  // int64 beyond 2^53 is exact.
  Tensor l = Tensor::empty(DType::Int64, {2});
  static_cast<int64_t*>(l.data())[0] = std::numeric_limits<int64_t>::min();
  static_cast<int64_t*>(l.data())[1] = (int64_t{1} << 62) + 1;
  Tensor lb = tensor_from_json(tensor_to_json(l), DType::Int64, {2}, "l");
  EXPECT_EQ(int64_values(lb), int64_values(l));
  // Empty dims.
  Tensor e = Tensor::empty(DType::Float32, {2, 0});
  EXPECT_EQ(tensor_to_json(e).dump(), "[[],[]]");
  EXPECT_EQ(tensor_from_json(json::parse("[[],[]]"), DType::Float32, {2, 0}, "e").numel(), 0);
}

std::string from_json_error(const std::string& text, DType dtype, std::vector<int64_t> sizes) {
  try {
    tensor_from_json(json::parse(text), dtype, sizes, "x");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(TensorJson, ErrorsNameInputAndPosition) {
  std::string msg = from_json_error("[[1, 2, 3], [4, 5]]", DType::Float32, {2, 3});
  EXPECT_NE(msg.find("input 'x' at [1]: dimension 1: expected a list of 3 elements, got 2"),
            std::string::npos)
      << msg;
  msg = from_json_error("[1, 2]", DType::Float32, {3});
  EXPECT_NE(msg.find("input 'x' at []: dimension 0: expected a list of 3 elements, got 2"),
            std::string::npos)
      << msg;
  msg = from_json_error("[[1, 2], 3]", DType::Float32, {2, 2});
  EXPECT_NE(msg.find("input 'x' at [1]: dimension 1: expected a list of 2 elements, got number"),
            std::string::npos)
      << msg;
  msg = from_json_error("[1, \"x\"]", DType::Float32, {2});
  EXPECT_NE(msg.find("input 'x' at [1]: expected a number"), std::string::npos) << msg;
  msg = from_json_error("[[1, 2.5]]", DType::Int32, {1, 2});
  EXPECT_NE(msg.find("input 'x' at [0, 1]: expected an integer for i32, got 2.5"),
            std::string::npos)
      << msg;
  msg = from_json_error("[300]", DType::UInt8, {1});
  EXPECT_NE(msg.find("input 'x' at [0]: value 300 out of range for u8"), std::string::npos) << msg;
  msg = from_json_error("[\"nan\"]", DType::Int64, {1});
  EXPECT_NE(msg.find("input 'x' at [0]: expected an integer"), std::string::npos) << msg;
  msg = from_json_error("[2]", DType::Bool, {1});
  EXPECT_NE(msg.find("out of range for bool"), std::string::npos) << msg;
}

TEST(Compare, AllcloseSemantics) {
  Tensor e = make(DType::Float32, {4}, {1, 100, kNaN, kInf});
  Tensor same = make(DType::Float32, {4}, {1, 100, kNaN, kInf});
  Difference d = compare(same, e, 0, 0);
  EXPECT_TRUE(d.within_tolerance);
  EXPECT_EQ(d.max_abs, 0);
  EXPECT_EQ(d.max_rel, 0);

  Tensor near = make(DType::Float32, {4}, {1.001, 100.5, kNaN, kInf});
  d = compare(near, e, 1e-2, 1e-5);  // 0.5 <= 1e-5 + 1e-2 * 100
  EXPECT_TRUE(d.within_tolerance);
  EXPECT_NEAR(d.max_abs, 0.5, 1e-9);
  EXPECT_NEAR(d.max_rel, 0.005, 1e-9);
  d = compare(near, e, 1e-3, 1e-5);
  EXPECT_FALSE(d.within_tolerance);
  // atol alone.
  EXPECT_TRUE(compare(near, e, 0, 0.6).within_tolerance);
}

TEST(Compare, NaNAndInfMismatches) {
  Tensor e = make(DType::Float64, {1}, {kNaN});
  Tensor a = make(DType::Float64, {1}, {1});
  Difference d = compare(a, e, 1, 1);
  EXPECT_FALSE(d.within_tolerance);
  EXPECT_EQ(d.max_abs, kInf);
  EXPECT_FALSE(compare(e, a, 1, 1).within_tolerance);
  Tensor pinf = make(DType::Float64, {1}, {kInf});
  Tensor ninf = make(DType::Float64, {1}, {-kInf});
  Tensor big = make(DType::Float64, {1}, {1e308});
  EXPECT_TRUE(compare(pinf, pinf, 0, 0).within_tolerance);
  EXPECT_FALSE(compare(pinf, ninf, 1, 1).within_tolerance);
  EXPECT_FALSE(compare(big, pinf, 1, 1).within_tolerance);  // even though rtol * inf = inf
  EXPECT_FALSE(compare(pinf, big, 1, 1).within_tolerance);
  // Relative difference against 0.
  Tensor zero = make(DType::Float64, {1}, {0});
  Tensor tiny = make(DType::Float64, {1}, {1e-9});
  d = compare(tiny, zero, 0, 1e-8);
  EXPECT_TRUE(d.within_tolerance);
  EXPECT_EQ(d.max_rel, kInf);
}

TEST(Compare, MismatchedSizesAndDtypes) {
  Tensor a = make(DType::Float32, {2}, {1, 2});
  Tensor b = make(DType::Float32, {1, 2}, {1, 2});
  Difference d = compare(a, b, 1, 1);
  EXPECT_FALSE(d.within_tolerance);
  EXPECT_EQ(d.max_abs, kInf);
  Tensor c = make(DType::Float64, {2}, {1, 2});
  EXPECT_TRUE(compare(a, c, 0, 0).within_tolerance);
  // Strided actual vs contiguous expected.
  Tensor base = make(DType::Float32, {2, 2}, {1, 2, 3, 4});
  Tensor t = make(DType::Float32, {2, 2}, {1, 3, 2, 4});
  EXPECT_TRUE(compare(base.as_strided({2, 2}, {1, 2}, 0), t, 0, 0).within_tolerance);
}

}  // namespace
}  // namespace stax::eager
