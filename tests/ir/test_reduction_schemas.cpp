// Tests of the schemas of the issue-6 reductions (prod, argmax/argmin, any/all, var/std,
// logsumexp): argument binding, result sizes and dtypes as PyTorch gives them (torch 2.13.0),
// and the messages of their errors.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace stax::ir
