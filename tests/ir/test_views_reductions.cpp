// Tests of type inference for reductions (dims, keepdim, dtypes, zero-size dims) and for the
// view and copy ops (reshape/view, permute, transpose, unsqueeze, squeeze, expand, clone,
// contiguous), including the messages of their errors.
#include <gtest/gtest.h>

#include "test_util.h"

namespace stax::ir {
namespace {

using testing::infer;
using testing::infer_error;
using testing::type;

TEST(ReductionTest, DimsAndKeepdim) {
  const std::string x = "x: f32[2, 3, 4]";
  EXPECT_EQ(infer(x, "sum(x)"), type(DType::Float32, {}));
  EXPECT_EQ(infer(x, "sum(x, dim=[])"), type(DType::Float32, {}));
  EXPECT_EQ(infer(x, "sum(x, dim=None, keepdim=True)"), type(DType::Float32, {1, 1, 1}));
  EXPECT_EQ(infer(x, "sum(x, -1)"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(infer(x, "mean(x, [0, -1], True)"), type(DType::Float32, {1, 3, 1}));
  EXPECT_EQ(infer(x, "amax(x, dim=1)"), type(DType::Float32, {2, 4}));
  EXPECT_EQ(infer(x, "amin(x)"), type(DType::Float32, {}));
  EXPECT_EQ(infer(x, "amin(x, dim=[2, 0], keepdim=True)"), type(DType::Float32, {1, 3, 1}));
  // 0-dim inputs accept dim 0 / -1.
  EXPECT_EQ(infer("x: f32[]", "sum(x, dim=[0])"), type(DType::Float32, {}));
  EXPECT_EQ(infer("x: f32[]", "amax(x, dim=-1, keepdim=True)"), type(DType::Float32, {}));
}

TEST(ReductionTest, Dtypes) {
  EXPECT_EQ(infer("x: i32[4]", "sum(x)"), type(DType::Int64, {}));
  EXPECT_EQ(infer("x: bool[4]", "sum(x)"), type(DType::Int64, {}));
  EXPECT_EQ(infer("x: f16[4]", "sum(x)"), type(DType::Float16, {}));
  EXPECT_EQ(infer("x: i32[4]", "sum(x, dtype='f64')"), type(DType::Float64, {}));
  EXPECT_EQ(infer("x: f32[4]", "sum(x, dtype=\"bfloat16\")"), type(DType::BFloat16, {}));
  EXPECT_EQ(infer("x: bf16[4]", "mean(x)"), type(DType::BFloat16, {}));
  EXPECT_EQ(infer("x: i64[4]", "mean(x, dtype='f32')"), type(DType::Float32, {}));
  EXPECT_EQ(infer("x: i8[4]", "amax(x)"), type(DType::Int8, {}));
  EXPECT_EQ(infer("x: bool[4]", "amin(x)"), type(DType::Bool, {}));
  EXPECT_EQ(infer_error("x: i64[4]", "mean(x)"),
            "mean: argument 'self': input dtype must be floating point, got i64 (pass a floating "
            "dtype= to convert)");
  EXPECT_EQ(infer_error("x: f32[4]", "mean(x, dtype='i32')"),
            "mean: argument 'dtype': must be a floating point dtype, got i32");
  EXPECT_EQ(infer_error("x: f32[4]", "sum(x, dtype='f33')"),
            "sum: argument 'dtype': unknown dtype 'f33'");
}

TEST(ReductionTest, ZeroSizeDims) {
  EXPECT_EQ(infer("x: f32[0, 3]", "sum(x, dim=0)"), type(DType::Float32, {3}));
  EXPECT_EQ(infer("x: f32[0, 3]", "amax(x, dim=1)"), type(DType::Float32, {0}));
  EXPECT_EQ(infer_error("x: f32[0, 3]", "amax(x, dim=0)"),
            "amax: argument 'self': cannot reduce over dim 0 of size 0 (sizes [0, 3]): the "
            "reduction has no identity");
  EXPECT_EQ(infer_error("x: f32[2, 0]", "amin(x)"),
            "amin: argument 'self': cannot reduce over dim 1 of size 0 (sizes [2, 0]): the "
            "reduction has no identity");
}

TEST(ReductionTest, DimErrors) {
  EXPECT_EQ(infer_error("x: f32[2, 3]", "sum(x, dim=[2])"),
            "sum: argument 'dim': dim 2 is out of range for a tensor of rank 2 (expected in [-2, "
            "1])");
  EXPECT_EQ(infer_error("x: f32[2, 3]", "amax(x, dim=[-3])"),
            "amax: argument 'dim': dim -3 is out of range for a tensor of rank 2 (expected in "
            "[-2, 1])");
  EXPECT_EQ(infer_error("x: f32[2, 3]", "mean(x, dim=[1, -1])"),
            "mean: argument 'dim': dim 1 appears more than once in [1, -1]");
  EXPECT_EQ(infer_error("x: f32[]", "sum(x, dim=[1])"),
            "sum: argument 'dim': dim 1 is out of range for a tensor of rank 0 (expected in [-1, "
            "0])");
}

TEST(ViewTest, ReshapeAndView) {
  const std::string x = "x: f32[4, 6]";
  EXPECT_EQ(infer(x, "reshape(x, [3, -1])"), type(DType::Float32, {3, 8}));
  EXPECT_EQ(infer(x, "reshape(x, [24])"), type(DType::Float32, {24}));
  EXPECT_EQ(infer(x, "view(x, [-1])"), type(DType::Float32, {24}));
  EXPECT_EQ(infer(x, "view(x, [2, 2, 6])"), type(DType::Float32, {2, 2, 6}));
  EXPECT_EQ(infer("x: i32[]", "reshape(x, [1, 1])"), type(DType::Int32, {1, 1}));
  EXPECT_EQ(infer("x: i32[1, 1]", "reshape(x, [])"), type(DType::Int32, {}));
  EXPECT_EQ(infer_error(x, "reshape(x, [5, 5])"),
            "reshape: argument 'shape': shape [5, 5] is invalid for an input of 24 elements (sizes "
            "[4, 6])");
  EXPECT_EQ(infer_error(x, "view(x, [5, -1])"),
            "view: argument 'size': shape [5, -1] is invalid for an input of 24 elements (sizes "
            "[4, 6])");
  EXPECT_EQ(infer_error(x, "reshape(x, [-1, -1])"),
            "reshape: argument 'shape': only one dimension can be -1, got [-1, -1]");
  EXPECT_EQ(infer_error(x, "reshape(x, [-2, 12])"),
            "reshape: argument 'shape': invalid size -2 in [-2, 12]");
  EXPECT_EQ(infer_error("x: f32[0, 4]", "reshape(x, [0, -1])"),
            "reshape: argument 'shape': cannot infer the -1 in [0, -1] for an input of 0 "
            "elements: the other sizes multiply to 0, so it is ambiguous");
}

TEST(ViewTest, SizeOverflowIsAnError) {
  EXPECT_EQ(infer_error("x: f32[4, 6]", "reshape(x, [4611686018427387904, 4, -1])"),
            "reshape: argument 'shape': shape [4611686018427387904, 4, -1] is invalid for an input "
            "of 24 elements (sizes [4, 6]): its element count overflows int64");
  // bool inputs, so that only the broadcast result overflows.
  EXPECT_EQ(infer_error("x: bool[4611686018427387904, 1], y: bool[1, 4]", "add(x, y)"),
            "add: result 'r' (bool): sizes [4611686018427387904, 4] strides [4, 1]: the element "
            "count overflows int64 (more than 9223372036854775807 elements)");
  EXPECT_EQ(infer_error("x: f32[1, 1]", "expand(x, [4611686018427387904, 2])"),
            "expand: result 'r' (f32): sizes [4611686018427387904, 2] strides [2, 1]: the element "
            "count overflows int64 (more than 9223372036854775807 elements)");
  // Empty, but the sizes with 0 counted as 1 overflow (so would reshaping or copying it).
  EXPECT_EQ(testing::parse_error("def f(x: f32[4611686018427387904, 2, 0]):\n    return x\n"),
            "t.stax:1:7: input 'x' (f32): sizes [4611686018427387904, 2, 0] strides [2, 1, 1]: the "
            "sizes with 0 counted as 1 multiply to more than 9223372036854775807 (the contiguous "
            "strides and reshapes of an empty tensor overflow int64)");
}

TEST(ViewTest, PermuteAndTranspose) {
  const std::string x = "x: f32[2, 3, 4]";
  EXPECT_EQ(infer(x, "permute(x, [2, 0, 1])"), type(DType::Float32, {4, 2, 3}));
  EXPECT_EQ(infer(x, "permute(x, [-1, -2, -3])"), type(DType::Float32, {4, 3, 2}));
  EXPECT_EQ(infer("x: f32[]", "permute(x, [])"), type(DType::Float32, {}));
  EXPECT_EQ(infer_error(x, "permute(x, [0, 1])"),
            "permute: argument 'dims': expected 3 dims for a tensor of rank 3, got [0, 1]");
  EXPECT_EQ(infer_error(x, "permute(x, [0, 1, -2])"),
            "permute: argument 'dims': dim 1 appears more than once in [0, 1, -2]");
  EXPECT_EQ(infer_error(x, "permute(x, [0, 1, 3])"),
            "permute: argument 'dims': dim 3 is out of range for a tensor of rank 3 (expected in "
            "[-3, 2])");
  EXPECT_EQ(infer(x, "transpose(x, 0, -1)"), type(DType::Float32, {4, 3, 2}));
  EXPECT_EQ(infer(x, "transpose(x, 1, 1)"), type(DType::Float32, {2, 3, 4}));
  EXPECT_EQ(infer("x: f32[]", "transpose(x, 0, -1)"), type(DType::Float32, {}));
  EXPECT_EQ(infer_error(x, "transpose(x, 0, 3)"),
            "transpose: argument 'dim1': dim 3 is out of range for a tensor of rank 3 (expected in "
            "[-3, 2])");
}

TEST(ViewTest, UnsqueezeAndSqueeze) {
  const std::string x = "x: f32[2, 1, 3, 1]";
  EXPECT_EQ(infer("x: f32[2, 3]", "unsqueeze(x, 0)"), type(DType::Float32, {1, 2, 3}));
  EXPECT_EQ(infer("x: f32[2, 3]", "unsqueeze(x, 2)"), type(DType::Float32, {2, 3, 1}));
  EXPECT_EQ(infer("x: f32[2, 3]", "unsqueeze(x, -1)"), type(DType::Float32, {2, 3, 1}));
  EXPECT_EQ(infer("x: f32[]", "unsqueeze(x, 0)"), type(DType::Float32, {1}));
  EXPECT_EQ(infer_error("x: f32[2, 3]", "unsqueeze(x, 3)"),
            "unsqueeze: argument 'dim': dim 3 is out of range for a tensor of rank 3 (expected in "
            "[-3, 2])");
  EXPECT_EQ(infer(x, "squeeze(x)"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(infer(x, "squeeze(x, 1)"), type(DType::Float32, {2, 3, 1}));
  EXPECT_EQ(infer(x, "squeeze(x, dim=-1)"), type(DType::Float32, {2, 1, 3}));
  EXPECT_EQ(infer(x, "squeeze(x, [0, 1, 3])"), type(DType::Float32, {2, 3}));  // 0 is not size 1
  EXPECT_EQ(infer(x, "squeeze(x, [])"), type(DType::Float32, {2, 1, 3, 1}));
  EXPECT_EQ(infer("x: f32[]", "squeeze(x, 0)"), type(DType::Float32, {}));
  EXPECT_EQ(infer("x: f32[1, 1]", "squeeze(x)"), type(DType::Float32, {}));
  EXPECT_EQ(infer_error(x, "squeeze(x, [4])"),
            "squeeze: argument 'dim': dim 4 is out of range for a tensor of rank 4 (expected in "
            "[-4, 3])");
  EXPECT_EQ(infer_error(x, "squeeze(x, [1, -3])"),
            "squeeze: argument 'dim': dim 1 appears more than once in [1, -3]");
}

TEST(ViewTest, Expand) {
  EXPECT_EQ(infer("x: f32[3, 1]", "expand(x, [3, 4])"), type(DType::Float32, {3, 4}));
  EXPECT_EQ(infer("x: f32[3, 1]", "expand(x, [2, -1, 5])"), type(DType::Float32, {2, 3, 5}));
  EXPECT_EQ(infer("x: f32[3, 1]", "expand(x, [-1, -1], implicit=True)"),
            type(DType::Float32, {3, 1}));
  EXPECT_EQ(infer("x: f32[]", "expand(x, [0, 2])"), type(DType::Float32, {0, 2}));
  EXPECT_EQ(infer("x: f32[1]", "expand(x, [0])"), type(DType::Float32, {0}));
  EXPECT_EQ(infer_error("x: f32[3, 2]", "expand(x, [3, 4])"),
            "expand: argument 'size': the expanded size 4 must match the existing size 2 at "
            "non-singleton dim 1 (input sizes [3, 2], target [3, 4])");
  EXPECT_EQ(infer_error("x: f32[3, 2]", "expand(x, [2])"),
            "expand: argument 'size': got 1 sizes [2] for a tensor of rank 2 (need at least as "
            "many sizes as dims)");
  EXPECT_EQ(infer_error("x: f32[3]", "expand(x, [-1, 3])"),
            "expand: argument 'size': invalid size -1 at dim 0 of [-1, 3] (-1 is not allowed for "
            "a new leading dim)");
  EXPECT_EQ(infer_error("x: f32[1]", "expand(x, [-3])"),
            "expand: argument 'size': invalid size -3 at dim 0 of [-3]");
}

TEST(CopyTest, CloneAndContiguous) {
  EXPECT_EQ(infer("x: i16[2, 3] strides=[1, 2]", "clone(x)"), type(DType::Int16, {2, 3}));
  EXPECT_EQ(infer("x: f32[2, 3]", "clone(x, memory_format='preserve_format')"),
            type(DType::Float32, {2, 3}));
  EXPECT_EQ(infer("x: f32[2, 3]", "clone(x, memory_format='contiguous_format')"),
            type(DType::Float32, {2, 3}));
  EXPECT_EQ(infer("x: f32[2, 3] strides=[1, 2]", "contiguous(x)"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(infer("x: f32[2, 3]", "contiguous(x, memory_format=None)"),
            type(DType::Float32, {2, 3}));
  EXPECT_EQ(infer_error("x: f32[2, 3]", "clone(x, memory_format='channels_last')"),
            "clone: argument 'memory_format': unsupported memory format 'channels_last' (expected "
            "None, 'contiguous_format' or 'preserve_format')");
  EXPECT_EQ(infer_error("x: f32[2, 3]", "contiguous(x, memory_format='it\\'s')"),
            "contiguous: argument 'memory_format': unsupported memory format 'it's' (expected "
            "None, 'contiguous_format' or 'preserve_format')");
  EXPECT_EQ(infer_error("x: f32[2, 3]", "clone(x, 'preserve_format')"),
            "clone: takes at most 1 positional argument but 2 were given");
}

}  // namespace
}  // namespace stax::ir
