// Tests of pointwise type inference: PyTorch type promotion (tensors and scalar literals),
// broadcasting, comparisons, unary ops, pow, where, and their errors.
#include <gtest/gtest.h>

#include "ir/type_promotion.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using testing::infer;
using testing::infer_error;
using testing::type;

TEST(PromotionTest, PromoteTypes) {
  using D = DType;
  EXPECT_EQ(promote_types(D::Bool, D::Bool), D::Bool);
  EXPECT_EQ(promote_types(D::Bool, D::Int8), D::Int8);
  EXPECT_EQ(promote_types(D::Float16, D::Bool), D::Float16);
  EXPECT_EQ(promote_types(D::UInt8, D::Int8), D::Int16);
  EXPECT_EQ(promote_types(D::Int8, D::UInt8), D::Int16);
  EXPECT_EQ(promote_types(D::UInt8, D::Int32), D::Int32);
  EXPECT_EQ(promote_types(D::Int16, D::Int64), D::Int64);
  EXPECT_EQ(promote_types(D::Int64, D::Float16), D::Float16);
  EXPECT_EQ(promote_types(D::BFloat16, D::Int32), D::BFloat16);
  EXPECT_EQ(promote_types(D::Float16, D::BFloat16), D::Float32);
  EXPECT_EQ(promote_types(D::BFloat16, D::Float64), D::Float64);
  EXPECT_EQ(promote_types(D::Float32, D::Float16), D::Float32);
}

TEST(PromotionTest, ResultTypeWithScalars) {
  using D = DType;
  using S = Scalar::Kind;
  EXPECT_EQ(result_type({D::Int32}, {S::Float}), D::Float32);
  EXPECT_EQ(result_type({D::Bool}, {S::Float}), D::Float32);
  EXPECT_EQ(result_type({D::Bool}, {S::Int}), D::Int64);
  EXPECT_EQ(result_type({D::Bool}, {S::Bool}), D::Bool);
  EXPECT_EQ(result_type({D::Int8}, {S::Int}), D::Int8);
  EXPECT_EQ(result_type({D::Float16}, {S::Float}), D::Float16);
  EXPECT_EQ(result_type({D::BFloat16}, {S::Int}), D::BFloat16);
  EXPECT_EQ(result_type({D::Float64, D::Float32}, {}), D::Float64);
  EXPECT_EQ(result_type({}, {S::Int, S::Float}), D::Float32);
  EXPECT_EQ(result_type({}, {S::Int, S::Int}), D::Int64);
  EXPECT_EQ(result_type({}, {S::Bool}), D::Bool);
}

TEST(PointwiseTest, BinaryPromotion) {
  EXPECT_EQ(infer("x: i32[2, 3]", "add(x, 2.5)"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(infer("x: i32[2, 3]", "add(x, 2)"), type(DType::Int32, {2, 3}));
  EXPECT_EQ(infer("x: bool[2]", "add(x, 1)"), type(DType::Int64, {2}));
  EXPECT_EQ(infer("x: bool[2]", "add(x, True)"), type(DType::Bool, {2}));
  EXPECT_EQ(infer("x: bool[2]", "mul(x, 1.0)"), type(DType::Float32, {2}));
  EXPECT_EQ(infer("x: f16[2]", "mul(3.0, x)"), type(DType::Float16, {2}));
  EXPECT_EQ(infer("x: f64[2]", "sub(x, 1)"), type(DType::Float64, {2}));
  EXPECT_EQ(infer("x: u8[2], y: i8[2]", "add(x, y)"), type(DType::Int16, {2}));
  EXPECT_EQ(infer("x: f16[2], y: bf16[2]", "mul(x, y)"), type(DType::Float32, {2}));
  EXPECT_EQ(infer("x: i64[2], y: f16[2]", "maximum(x, y)"), type(DType::Float16, {2}));
  EXPECT_EQ(infer("x: i32[2], y: i64[2]", "minimum(x, y)"), type(DType::Int64, {2}));
  // A 0-dim tensor only raises the category, like a scalar, but with its own dtype
  // (torch.result_type in torch 2.13.0).
  EXPECT_EQ(infer("x: i32[2], y: f64[]", "add(x, y)"), type(DType::Float64, {2}));
  EXPECT_EQ(infer("x: f16[2], y: f32[]", "add(x, y)"), type(DType::Float16, {2}));
  EXPECT_EQ(infer("x: i8[2], y: i64[]", "add(x, y)"), type(DType::Int8, {2}));
  EXPECT_EQ(infer("x: bool[2], y: u8[]", "add(x, y)"), type(DType::UInt8, {2}));
  EXPECT_EQ(infer("x: i8[2], y: u8[]", "mul(y, x)"), type(DType::Int8, {2}));
  EXPECT_EQ(infer("x: i8[], y: u8[]", "mul(y, x)"), type(DType::Int16, {}));
  EXPECT_EQ(infer("x: i16[]", "mul(x, 1)"), type(DType::Int16, {}));
  EXPECT_EQ(infer("x: i32[]", "mul(x, 1.5)"), type(DType::Float32, {}));
  EXPECT_EQ(infer("x: f16[], y: i8[2]", "mul(x, y)"), type(DType::Float16, {2}));
  // alpha
  EXPECT_EQ(infer("x: f32[2], y: f32[2]", "add(x, y, alpha=0.5)"), type(DType::Float32, {2}));
  EXPECT_EQ(infer("x: i32[2], y: i32[2]", "sub(x, y, alpha=2)"), type(DType::Int32, {2}));
  EXPECT_EQ(infer("x: bool[2], y: bool[2]", "add(x, y, alpha=True)"), type(DType::Bool, {2}));
}

TEST(PointwiseTest, Division) {
  EXPECT_EQ(infer("x: i64[2]", "div(x, 2)"), type(DType::Float32, {2}));
  EXPECT_EQ(infer("x: bool[2], y: i8[2]", "div(x, y)"), type(DType::Float32, {2}));
  EXPECT_EQ(infer("x: f64[2]", "div(x, 2)"), type(DType::Float64, {2}));
  EXPECT_EQ(infer("x: bf16[2]", "div(1, x)"), type(DType::BFloat16, {2}));
  EXPECT_EQ(infer("x: f32[2]", "div(x, x, rounding_mode=None)"), type(DType::Float32, {2}));
  EXPECT_EQ(infer("x: f32[2]", "div(x, x, rounding_mode='floor')"), type(DType::Float32, {2}));
  EXPECT_EQ(infer("x: i32[2]", "div(x, x, rounding_mode='trunc')"), type(DType::Int32, {2}));
  EXPECT_EQ(infer("x: u8[2]", "div(x, 2, rounding_mode='floor')"), type(DType::UInt8, {2}));
  EXPECT_EQ(infer_error("x: f32[2]", "div(x, x, rounding_mode='round')"),
            "div: argument 'rounding_mode': expected None, 'trunc' or 'floor', got 'round'");
}

TEST(PointwiseTest, Comparisons) {
  for (const char* op : {"gt", "lt", "ge", "le", "eq", "ne"}) {
    EXPECT_EQ(infer("x: f32[2, 3], y: i32[3]", std::string(op) + "(x, y)"),
              type(DType::Bool, {2, 3}));
    EXPECT_EQ(infer("x: i64[4]", std::string(op) + "(x, 0.5)"), type(DType::Bool, {4}));
  }
  EXPECT_EQ(infer_error("x: f32[2]", "gt(1.0, x)"),
            "gt: argument 'self' expects a tensor, got a float scalar");
}

TEST(PointwiseTest, Broadcasting) {
  EXPECT_EQ(infer("x: f32[2, 1, 3], y: f32[4, 3]", "add(x, y)"), type(DType::Float32, {2, 4, 3}));
  EXPECT_EQ(infer("x: f32[], y: f32[5, 6]", "mul(x, y)"), type(DType::Float32, {5, 6}));
  EXPECT_EQ(infer("x: f32[5, 1], y: f32[1, 6]", "sub(x, y)"), type(DType::Float32, {5, 6}));
  EXPECT_EQ(infer("x: f32[0, 3], y: f32[1, 3]", "add(x, y)"), type(DType::Float32, {0, 3}));
  EXPECT_EQ(infer("x: f32[7]", "add(x, 1.0)"), type(DType::Float32, {7}));
  EXPECT_EQ(
      infer_error("x: f32[2, 3], y: f32[4]", "mul(x, y)"),
      "mul: shapes [2, 3] and [4] are not broadcastable (size 3 vs 4 at dim 1 of the result)");
  EXPECT_EQ(infer_error("x: f32[2, 3], y: f32[0, 3]", "maximum(x, y)"),
            "maximum: shapes [2, 3] and [0, 3] are not broadcastable (size 2 vs 0 at dim 0 of the "
            "result)");
}

TEST(PointwiseTest, BinaryErrors) {
  EXPECT_EQ(infer_error("x: f32[2]", "add(1.0, 2.0)"),
            "add: at least one of 'self' and 'other' must be a tensor");
  EXPECT_EQ(infer_error("x: i32[2]", "add(x, x, alpha=0.5)"),
            "add: argument 'alpha': must not be a floating point number for a i32 result");
  EXPECT_EQ(infer_error("x: f32[2]", "add(x, x, alpha=True)"),
            "add: argument 'alpha': a bool alpha is only supported for bool results, the result "
            "is f32");
  EXPECT_EQ(infer_error("x: bool[2], y: f32[2]", "sub(x, y)"),
            "sub: argument 'self': subtraction with a bool operand is not supported (use "
            "logical_xor or logical_not instead)");
  EXPECT_EQ(infer_error("x: f32[2]", "sub(x, True)"),
            "sub: argument 'other': subtraction with a bool operand is not supported (use "
            "logical_xor or logical_not instead)");
  EXPECT_EQ(infer_error("x: f32[2]", "maximum(x, 1.0)"),
            "maximum: argument 'other' expects a tensor, got a float scalar");
}

TEST(PointwiseTest, Unary) {
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid"}) {
    EXPECT_EQ(infer("x: i64[3]", std::string(op) + "(x)"), type(DType::Float32, {3})) << op;
    EXPECT_EQ(infer("x: bool[3]", std::string(op) + "(x)"), type(DType::Float32, {3})) << op;
    EXPECT_EQ(infer("x: f64[3]", std::string(op) + "(x)"), type(DType::Float64, {3})) << op;
    EXPECT_EQ(infer("x: bf16[]", std::string(op) + "(x)"), type(DType::BFloat16, {})) << op;
  }
  for (const char* op : {"neg", "abs", "relu"}) {
    EXPECT_EQ(infer("x: i32[3]", std::string(op) + "(x)"), type(DType::Int32, {3})) << op;
    EXPECT_EQ(infer("x: f16[3]", std::string(op) + "(x)"), type(DType::Float16, {3})) << op;
    EXPECT_EQ(infer_error("x: bool[3]", std::string(op) + "(x)"),
              std::string(op) + ": argument 'self': bool is not supported (PyTorch implements " +
                  op + " for integers and floating dtypes only)");
  }
}

TEST(PointwiseTest, Pow) {
  EXPECT_EQ(infer("x: f32[3]", "pow(x, 2)"), type(DType::Float32, {3}));
  EXPECT_EQ(infer("x: i32[3]", "pow(x, 2)"), type(DType::Int32, {3}));
  EXPECT_EQ(infer("x: i32[3]", "pow(x, 0.5)"), type(DType::Float32, {3}));
  EXPECT_EQ(infer("x: bool[3]", "pow(x, 2)"), type(DType::Int64, {3}));
  EXPECT_EQ(infer("x: f16[3]", "pow(x, -1)"), type(DType::Float16, {3}));
  EXPECT_EQ(infer_error("x: i64[3]", "pow(x, -2)"),
            "pow: argument 'exponent': integers to negative integer powers are not allowed");
  EXPECT_EQ(infer("x: i32[3], y: f32[3]", "pow(x, y)"), type(DType::Float32, {3}));
  EXPECT_EQ(infer("y: i8[3]", "pow(2, y)"), type(DType::Int8, {3}));
  EXPECT_EQ(infer("y: i8[3]", "pow(2.5, y)"), type(DType::Float32, {3}));
}

TEST(PointwiseTest, Where) {
  EXPECT_EQ(infer("c: bool[4, 1], x: f32[3]", "where(c, x, 0.0)"), type(DType::Float32, {4, 3}));
  EXPECT_EQ(infer("c: bool[4], x: i32[4]", "where(c, x, 1.5)"), type(DType::Float32, {4}));
  EXPECT_EQ(infer("c: bool[4], x: i32[4]", "where(c, x, 1)"), type(DType::Int32, {4}));
  EXPECT_EQ(infer("c: bool[4], x: f16[4], y: f64[1]", "where(c, x, y)"), type(DType::Float64, {4}));
  EXPECT_EQ(infer("c: bool[2, 3]", "where(c, 1, 2)"), type(DType::Int64, {2, 3}));
  EXPECT_EQ(infer("c: bool[2, 3]", "where(c, 1, 2.0)"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(infer("c: bool[2, 3]", "where(c, True, False)"), type(DType::Bool, {2, 3}));
  EXPECT_EQ(infer_error("c: f32[4], x: f32[4]", "where(c, x, x)"),
            "where: argument 'condition': must have dtype bool, got f32");
  EXPECT_EQ(infer_error("c: bool[4], x: f32[3]", "where(c, x, 0.0)"),
            "where: shapes [4] and [3] are not broadcastable (size 4 vs 3 at dim 0 of the result)");
}

}  // namespace
}  // namespace stax::ir
