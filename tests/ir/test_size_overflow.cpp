// Tests of the checked size arithmetic (ir/checked_arith.h) and of the graph refusing, at
// parse or build time, every input and result whose element count, byte count or strided
// extent overflows int64, with a message naming the value, its sizes and strides.
#include <gtest/gtest.h>

#include <limits>

#include "ir/checked_arith.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using testing::infer;
using testing::infer_error;
using testing::parse_error;
using testing::type;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2p61 = int64_t{1} << 61;
constexpr int64_t k2p62 = int64_t{1} << 62;

TEST(CheckedArith, MulAndAddAtTheInt64Boundary) {
  EXPECT_EQ(checked_mul(k2p61, 3), 3 * k2p61);
  EXPECT_EQ(checked_mul(k2p62, 2), std::nullopt);
  EXPECT_EQ(checked_mul(-k2p62, 2), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
}

TEST(CheckedArith, NumelBytesStridesAndExtent) {
  EXPECT_EQ(checked_numel({}), 1);
  EXPECT_EQ(checked_numel({k2p62, 2}), std::nullopt);
  EXPECT_EQ(checked_numel({k2p62, 4, 0}), 0);  // empty, even though the others overflow
  EXPECT_EQ(checked_byte_size({k2p61}, DType::Float32), std::nullopt);
  EXPECT_EQ(checked_byte_size({k2p61}, DType::Bool), k2p61);
  EXPECT_EQ(checked_contiguous_strides({2, 0, 3}), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(checked_contiguous_strides({k2p62, 4}), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(checked_contiguous_strides({2, k2p62, 2}), std::nullopt);
  // (2 - 1) * 1 + (3 - 1) * 4 + 1 elements, plus the offset.
  EXPECT_EQ(checked_strided_extent({2, 3}, {1, 4}), 10);
  EXPECT_EQ(checked_strided_extent({2, 3}, {1, 4}, 5), 15);
  EXPECT_EQ(checked_strided_extent({0, 3}, {k2p62, 4}), 0);
  EXPECT_EQ(checked_strided_extent({4, 4}, {k2p62, 1}), std::nullopt);
  EXPECT_EQ(checked_strided_extent({2}, {kMax}), std::nullopt);  // kMax + 1 elements
  EXPECT_EQ(checked_strided_extent({2}, {kMax - 1}), kMax);
}

TEST(CheckedArith, LayoutProblemNamesSizesStridesAndTheProblem) {
  EXPECT_EQ(layout_problem(DType::Float32, {2, 3}, {1, 4}), std::nullopt);
  EXPECT_EQ(layout_problem(DType::Float32, {4, 4}, {k2p62, 1}),
            "sizes [4, 4] strides [4611686018427387904, 1]: the strided extent overflows int64 "
            "(offset + the sum of (size - 1) * stride over the dims, the largest element offset "
            "reached, is more than 9223372036854775807)");
  EXPECT_EQ(layout_problem(DType::Float32, {4, 4}, {k2p61, 1}),
            "sizes [4, 4] strides [2305843009213693952, 1]: the strided extent in bytes "
            "overflows int64 (6917529027641081860 elements of 4 bytes are more than "
            "9223372036854775807 bytes)");
  EXPECT_EQ(layout_problem(DType::Bool, {4, 4}, {k2p61, 1}), std::nullopt);
  EXPECT_EQ(layout_problem(DType::Float32, {2, 2}, {1, 2}, kMax - 1),
            "sizes [2, 2] strides [1, 2] offset 9223372036854775806: the strided extent "
            "overflows int64 (offset + the sum of (size - 1) * stride over the dims, the largest "
            "element offset reached, is more than 9223372036854775807)");
  EXPECT_EQ(layout_problem(DType::Float32, {4}, {-1}),
            "sizes [4] strides [-1]: stride -1 at dim 0 is negative (negative strides are not "
            "supported)");
  EXPECT_EQ(layout_problem(DType::Float32, {4, -2}, {1, 1}),
            "sizes [4, -2] strides [1, 1]: size -2 at dim 1 is negative");
  EXPECT_EQ(layout_problem(DType::Float32, {4}, {1}, -1),
            "sizes [4] strides [1] offset -1: the storage offset is negative");
  EXPECT_EQ(layout_problem(DType::Float32, {4}, {1, 1}),
            "sizes [4] strides [1, 1]: 2 strides for 1 dims (need one stride per dim)");
  EXPECT_EQ(contiguous_layout_problem(DType::Float64, {k2p61, 2}),
            "sizes [2305843009213693952, 2] strides [2, 1]: the byte size overflows int64 "
            "(4611686018427387904 elements of 8 bytes are more than 9223372036854775807 bytes)");
}

// Inputs the old code accepted, allocated too small and then wrote past.
TEST(SizeOverflow, InputsAreRefusedAtParseTime) {
  // The element count fits, the bytes do not.
  EXPECT_EQ(parse_error("def g(x: f32[2305843009213693952]):\n    return x\n"),
            "t.stax:1:7: input 'x' (f32): sizes [2305843009213693952] strides [1]: the byte size "
            "overflows int64 (2305843009213693952 elements of 4 bytes are more than "
            "9223372036854775807 bytes)");
  // 3 * 2^62 + 3 elements of storage: the old code wrapped it to 16 bytes.
  EXPECT_EQ(parse_error("def g(x: f32[4, 4] strides=[4611686018427387904, 1]):\n    return x\n"),
            "t.stax:1:7: input 'x' (f32): sizes [4, 4] strides [4611686018427387904, 1]: the "
            "strided extent overflows int64 (offset + the sum of (size - 1) * stride over the "
            "dims, the largest element offset reached, is more than 9223372036854775807)");
  // The extent fits in elements, but not in bytes.
  EXPECT_EQ(parse_error("def g(w: f32[4, 4], x: f32[4, 4] strides=[2305843009213693952, 1]):\n"
                        "    return x\n"),
            "t.stax:1:21: input 'x' (f32): sizes [4, 4] strides [2305843009213693952, 1]: the "
            "strided extent in bytes overflows int64 (6917529027641081860 elements of 4 bytes "
            "are more than 9223372036854775807 bytes)");
  // The same layout for 1-byte elements is valid.
  EXPECT_EQ(parse_error("def g(x: bool[4, 4] strides=[2305843009213693952, 1]):\n    return x\n"),
            "<no error>");
  // The element count overflows (refused before too; now naming dtype and strides).
  EXPECT_EQ(parse_error("def g(x: f32[4611686018427387904, 4]):\n    return x\n"),
            "t.stax:1:7: input 'x' (f32): sizes [4611686018427387904, 4] strides [4, 1]: the "
            "element count overflows int64 (more than 9223372036854775807 elements)");
  // Negative sizes and strides stay refused (the kernels and tensors only step forwards).
  EXPECT_EQ(parse_error("def g(x: f32[4, 4] strides=[-4, 1]):\n    return x\n"),
            "t.stax:1:7: input 'x': strides [-4, 1] must not be negative");
  EXPECT_EQ(parse_error("def g(x: f32[-4, 4]):\n    return x\n"),
            "t.stax:1:7: input 'x': sizes [-4, 4] must not be negative");
}

TEST(SizeOverflow, BuilderInputsAreRefused) {
  Graph g("g");
  try {
    g.add_input("x", DType::Float32, {4, 4}, std::vector<int64_t>{k2p62, 1});
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("input 'x' (f32): sizes [4, 4] strides "
                                          "[4611686018427387904, 1]: the strided extent overflows",
                                          0),
              0u)
        << e.what();
  }
  EXPECT_TRUE(g.inputs().empty());
}

// Results whose bytes overflow although every input is valid (the old code only counted
// elements).
TEST(SizeOverflow, ResultsAreRefusedAtTypeInference) {
  // A broadcast of two valid inputs (4 GiB and 16 GiB) with 2^62 elements: 2^64 bytes.
  EXPECT_EQ(infer_error("x: f32[1073741824, 1], w: f32[1, 4294967296]", "add(x, w)"),
            "add: result 'r' (f32): sizes [1073741824, 4294967296] strides [4294967296, 1]: the "
            "byte size overflows int64 (4611686018427387904 elements of 4 bytes are more than "
            "9223372036854775807 bytes)");
  // Type promotion widens 1-byte bools to 4-byte floats.
  EXPECT_EQ(infer_error("b: bool[2305843009213693952]", "mul(b, 1.5)"),
            "mul: result 'r' (f32): sizes [2305843009213693952] strides [1]: the byte size "
            "overflows int64 (2305843009213693952 elements of 4 bytes are more than "
            "9223372036854775807 bytes)");
  EXPECT_EQ(infer_error("x: f32[1, 4]", "expand(x, [1152921504606846976, 4])"),
            "expand: result 'r' (f32): sizes [1152921504606846976, 4] strides [4, 1]: the byte "
            "size overflows int64 (4611686018427387904 elements of 4 bytes are more than "
            "9223372036854775807 bytes)");
  EXPECT_EQ(infer_error("x: f32[1, 4]", "expand(x, [4611686018427387904, 4])"),
            "expand: result 'r' (f32): sizes [4611686018427387904, 4] strides [4, 1]: the "
            "element count overflows int64 (more than 9223372036854775807 elements)");
  EXPECT_EQ(infer_error("x: f32[4]", "reshape(x, [4611686018427387904, 4])"),
            "reshape: argument 'shape': shape [4611686018427387904, 4] is invalid for an input of "
            "4 elements (sizes [4]): its element count overflows int64");
  // Valid huge results stay valid: 2^62 one-byte elements.
  EXPECT_EQ(infer("b: bool[1, 4]", "expand(b, [1152921504606846976, 4])"),
            type(DType::Bool, {k2p62 / 4, 4}));
}

// Each statement's result is checked, also after views that are valid themselves.
TEST(SizeOverflow, ResultsOfHugeViewsAreChecked) {
  const std::string header =
      "def g(b: bool[1, 4]):\n"
      "    e = expand(b, [1152921504606846976, 4])\n"
      "    r = reshape(e, [4611686018427387904])\n";
  EXPECT_EQ(parse_error(header + "    f = mul(r, 1.5)\n    return f\n"),
            "t.stax:4:5: mul: result 'f' (f32): sizes [4611686018427387904] strides [1]: the byte "
            "size overflows int64 (4611686018427387904 elements of 4 bytes are more than "
            "9223372036854775807 bytes)");
  // sum widens bool to i64: 2^60 elements of 8 bytes.
  EXPECT_EQ(parse_error(header + "    s = sum(e, dim=[1])\n    return s\n"),
            "t.stax:4:5: sum: result 's' (i64): sizes [1152921504606846976] strides [1]: the byte "
            "size overflows int64 (1152921504606846976 elements of 8 bytes are more than "
            "9223372036854775807 bytes)");
  EXPECT_EQ(parse_error(header + "    s = sum(r, dim=[0], keepdim=True)\n    return s\n"),
            "<no error>");
}

}  // namespace
}  // namespace stax::ir
