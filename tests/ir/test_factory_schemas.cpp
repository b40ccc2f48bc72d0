// Tests of the factory ops' schemas (issue 7, point 3): argument binding, result sizes and the
// dtype defaults PyTorch applies (torch 2.13.0), the arange length, the fill-value range checks
// and every refusal's message; the text format (graphs of factories, graphs without inputs)
// round-trips; the builder makes the same nodes as the text.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/factory_args.h"
#include "ir/op_schema.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using testing::infer;
using testing::infer_error;
using testing::type;

TEST(FactorySchemaTest, FullDtypeFollowsTheFillValue) {
  // torch.full([2], True / 3 / 3.5).dtype: bool, int64, float32 (torch 2.13.0).
  EXPECT_EQ(infer("", "full([2, 3], True)"), type(DType::Bool, {2, 3}));
  EXPECT_EQ(infer("", "full([2, 3], 3)"), type(DType::Int64, {2, 3}));
  EXPECT_EQ(infer("", "full([2, 3], 3.5)"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(infer("", "full([4, 8], 1.5, dtype=\"f16\")"), type(DType::Float16, {4, 8}));
  EXPECT_EQ(infer("", "full([], 2, dtype='float64')"), type(DType::Float64, {}));
  EXPECT_EQ(infer("", "full(5, 2)"), type(DType::Int64, {5}));  // an int is a one-entry size
  EXPECT_EQ(infer("", "full([0, 3], 1.0)"), type(DType::Float32, {0, 3}));
}

TEST(FactorySchemaTest, ZerosOnesAndScalarTensorDefaultToFloat32) {
  EXPECT_EQ(infer("", "zeros([3])"), type(DType::Float32, {3}));
  EXPECT_EQ(infer("", "ones([2, 1], dtype='bool')"), type(DType::Bool, {2, 1}));
  EXPECT_EQ(infer("", "zeros([], dtype='u8')"), type(DType::UInt8, {}));
  // torch.scalar_tensor(3) and scalar_tensor(True) are float32 (torch 2.13.0).
  EXPECT_EQ(infer("", "scalar_tensor(3)"), type(DType::Float32, {}));
  EXPECT_EQ(infer("", "scalar_tensor(True)"), type(DType::Float32, {}));
  EXPECT_EQ(infer("", "scalar_tensor(3, dtype='i64')"), type(DType::Int64, {}));
}

TEST(FactorySchemaTest, LikeOpsAndFillTakeSelfsSizesAndDtype) {
  const std::string x = "x: i32[2, 5] strides=[1, 2]";
  EXPECT_EQ(infer(x, "full_like(x, 2.5)"), type(DType::Int32, {2, 5}));
  EXPECT_EQ(infer(x, "full_like(x, 2.5, dtype='f64')"), type(DType::Float64, {2, 5}));
  EXPECT_EQ(infer(x, "zeros_like(x)"), type(DType::Int32, {2, 5}));
  EXPECT_EQ(infer(x, "ones_like(x, dtype='bf16')"), type(DType::BFloat16, {2, 5}));
  EXPECT_EQ(infer(x, "fill(x, 7)"), type(DType::Int32, {2, 5}));
  EXPECT_EQ(infer("x: bool[3]", "fill(x, 3)"), type(DType::Bool, {3}));
}

TEST(FactorySchemaTest, ArangeDtypeAndLength) {
  // Lengths and dtypes from torch.ops.aten.arange.start_step (torch 2.13.0).
  EXPECT_EQ(infer("", "arange(0, 5)"), type(DType::Int64, {5}));
  EXPECT_EQ(infer("", "arange(5, 0, -1)"), type(DType::Int64, {5}));
  EXPECT_EQ(infer("", "arange(0, 5.5)"), type(DType::Float32, {6}));
  EXPECT_EQ(infer("", "arange(0, 5, 0.5)"), type(DType::Float32, {10}));
  EXPECT_EQ(infer("", "arange(0, 1, 0.1)"), type(DType::Float32, {10}));
  EXPECT_EQ(infer("", "arange(0, 10, 3)"), type(DType::Int64, {4}));
  EXPECT_EQ(infer("", "arange(10, 0, -3)"), type(DType::Int64, {4}));
  EXPECT_EQ(infer("", "arange(0, 0)"), type(DType::Int64, {0}));
  EXPECT_EQ(infer("", "arange(False, True, True)"), type(DType::Int64, {1}));
  EXPECT_EQ(infer("", "arange(0.0, 3)"), type(DType::Float32, {3}));
  // An int64 result truncates the arguments first: arange(0, 5.5, dtype=i64) has 5 elements,
  // arange(0, 5, 1.5, dtype=i64) steps by 1; other integral dtypes count in double.
  EXPECT_EQ(infer("", "arange(0, 5.5, dtype='i64')"), type(DType::Int64, {5}));
  EXPECT_EQ(infer("", "arange(0, 5.5, dtype='i32')"), type(DType::Int32, {6}));
  EXPECT_EQ(infer("", "arange(0, 5, 1.5, dtype='i64')"), type(DType::Int64, {5}));
  EXPECT_EQ(infer("", "arange(0, 5, 1.5, dtype='i32')"), type(DType::Int32, {4}));
  EXPECT_EQ(infer("", "arange(0, 5, 0.5, dtype='i32')"), type(DType::Int32, {10}));
  EXPECT_EQ(infer("", "arange(0.5, 0.9, 1, dtype='i64')"), type(DType::Int64, {0}));
  EXPECT_EQ(infer("", "arange(0.5, 0.9, 1, dtype='i32')"), type(DType::Int32, {1}));
  EXPECT_EQ(infer("", "arange(0, 70000, 10000, dtype='f16')"), type(DType::Float16, {7}));
  // torch's int64 length (end - start + step - 1) / step wraps where it overflows, and Stax
  // gives eager's answer: torch 2.13.0's arange(-2**63, 2**63 - 1024, 2**62) is empty, as is
  // arange(-5, 2**63 - 1, 2**62); arange(-2**63, 2**63 - 1) has a negative length and raises.
  EXPECT_EQ(infer("", "arange(-9223372036854775808, 9223372036854774784, 4611686018427387904)"),
            type(DType::Int64, {0}));
  EXPECT_EQ(infer("", "arange(-5, 9223372036854775807, 4611686018427387904)"),
            type(DType::Int64, {0}));
  EXPECT_EQ(infer("", "arange(9223372036854775804, 9223372036854775807)"), type(DType::Int64, {3}));
  EXPECT_EQ(infer("", "arange(-9223372036854775808, -9223372036854775805)"),
            type(DType::Int64, {3}));
  // Bounds equal as doubles pass torch's check; the exact length is negative.
  EXPECT_EQ(infer_error("", "arange(9007199254740993, 9007199254740992)"),
            "arange: invalid size -1, possible overflow (start 9007199254740993, end "
            "9007199254740992, step 1)");
}

TEST(FactorySchemaTest, ArangeArithmeticFollowsTheDtype) {
  Graph g = testing::one_statement("", "arange(1, 7, 2, dtype='f16')");
  FactoryArgs a = factory_args(g, g.nodes().at(0));
  EXPECT_TRUE(a.is_range);
  EXPECT_EQ(a.arithmetic, RangeArithmetic::Float32);
  EXPECT_EQ(a.float_start, 1.0);
  EXPECT_EQ(a.float_step, 2.0);
  g = testing::one_statement("", "arange(0, 1, 0.1)");
  a = factory_args(g, g.nodes().at(0));
  EXPECT_EQ(a.arithmetic, RangeArithmetic::Float64);
  EXPECT_EQ(a.float_step, 0.1);
  g = testing::one_statement("", "arange(-2.7, 1.2, 0.6, dtype='i16')");
  a = factory_args(g, g.nodes().at(0));
  EXPECT_EQ(a.arithmetic, RangeArithmetic::Int64);
  EXPECT_EQ(a.int_start, -2);  // truncated toward zero, as torch
  EXPECT_EQ(a.int_step, 0);
  EXPECT_EQ(a.sizes, (std::vector<int64_t>{7}));
}

TEST(FactorySchemaTest, Iota) {
  EXPECT_EQ(infer("", "iota(5, start=2, step=3, dtype='i64')"), type(DType::Int64, {5}));
  EXPECT_EQ(infer("", "iota(0, start=0, step=-1, dtype='u8')"), type(DType::UInt8, {0}));
  EXPECT_EQ(infer_error("", "iota(5, start=0, step=1, dtype='f32')"),
            "iota: argument 'dtype': iota only supports integer dtypes, got f32");
  EXPECT_EQ(infer_error("", "iota(5, start=0, step=1, dtype='bool')"),
            "iota: argument 'dtype': iota only supports integer dtypes, got bool");
  EXPECT_EQ(infer_error("", "iota(5, start=0, step=1, dtype=None)"),
            "iota: argument 'dtype': is required (an integer dtype), got None");
  EXPECT_EQ(infer_error("", "iota(5, start=0, step=0, dtype='i32')"),
            "iota: argument 'step': step must be nonzero");
  EXPECT_EQ(infer_error("", "iota(-1, start=0, step=1, dtype='i32')"),
            "iota: argument 'length': negative length -1");
  EXPECT_EQ(infer_error("", "iota(5, 0, 1, 'i32')"),
            "iota: takes at most 1 positional argument but 4 were given");
  EXPECT_EQ(infer_error("", "iota(5, step=1, dtype='i32')"),
            "iota: missing required argument 'start'");
}

TEST(FactorySchemaTest, ArangeErrors) {
  // torch 2.13.0's reasons.
  EXPECT_EQ(infer_error("", "arange(0, 5, 0)"),
            "arange: step must be nonzero (start 0, end 5, step 0)");
  EXPECT_EQ(infer_error("", "arange(0, 5, -0.0)"),
            "arange: step must be nonzero (start 0, end 5, step -0.0)");
  EXPECT_EQ(infer_error("", "arange(0, 5, 0.5, dtype='i64')"),
            "arange: step must be nonzero (start 0, end 5, step 0.5)");
  EXPECT_EQ(infer_error("", "arange(0, 5, -1)"),
            "arange: upper bound and lower bound inconsistent with step sign (start 0, end 5, "
            "step -1)");
  EXPECT_EQ(infer_error("", "arange(5, 0)"),
            "arange: upper bound and lower bound inconsistent with step sign (start 5, end 0, "
            "step 1)");
  EXPECT_EQ(infer_error("", "arange(0.9, 0.5, 1, dtype='i32')"),
            "arange: upper bound and lower bound inconsistent with step sign (start 0.9, end "
            "0.5, step 1)");
  EXPECT_EQ(infer_error("", "arange(0, inf)"),
            "arange: unsupported range 0.0 -> inf (start 0, end inf, step 1)");
  EXPECT_EQ(infer_error("", "arange(0, nan)"),
            "arange: unsupported range 0.0 -> nan (start 0, end nan, step 1)");
  EXPECT_EQ(infer_error("", "arange(0, 1e39, 1e38, dtype='f16')"),
            "arange: unsupported range 0.0 -> inf (start 0, end 1e+39, step 1e+38)");
  EXPECT_EQ(infer_error("", "arange(0, inf, dtype='i64')"),
            "arange: argument 'end': value inf cannot be converted to i64 without overflow");
  EXPECT_EQ(infer_error("", "arange(0, 1e-300, 1e-320)"),
            "arange: invalid size 100001113294125809664.0, possible overflow (start 0, end "
            "1e-300, step 1e-320)");
  EXPECT_EQ(infer_error("", "arange(0, 5, dtype='bool')"),
            "arange: argument 'dtype': bool is not supported (PyTorch has no bool arange)");
  // Lengths that fit int64 but whose bytes do not are refused by the result check.
  EXPECT_EQ(infer_error("", "arange(0, 4611686018427387904)"),
            "arange: result 'r' (i64): sizes [4611686018427387904] strides [1]: the byte size "
            "overflows int64 (4611686018427387904 elements of 8 bytes are more than "
            "9223372036854775807 bytes)");
}

TEST(FactorySchemaTest, SizeErrors) {
  EXPECT_EQ(infer_error("", "full([-1], 1.0)"),
            "full: argument 'size': negative dimension -1 in [-1]");
  EXPECT_EQ(infer_error("", "zeros([2, -3])"),
            "zeros: argument 'size': negative dimension -3 in [2, -3]");
  EXPECT_EQ(infer_error("", "ones([4611686018427387904, 4])"),
            "ones: argument 'size': [4611686018427387904, 4] has an element count that "
            "overflows int64");
  EXPECT_EQ(infer_error("", "full([1152921504606846976, 4], 1.0)"),
            "full: result 'r' (f32): sizes [1152921504606846976, 4] strides [4, 1]: the byte "
            "size overflows int64 (4611686018427387904 elements of 4 bytes are more than "
            "9223372036854775807 bytes)");
}

TEST(FactorySchemaTest, FillValuesMustFitTheDtype) {
  // Refused and accepted exactly where torch.full([2], v, dtype=d) raises "value cannot be
  // converted to type ... without overflow" or fills (torch 2.13.0).
  const std::string overflow = "<overflow>";
  auto check = [&](const std::string& expr) {
    const std::string message = infer_error("", expr);
    return message.find("without overflow") != std::string::npos ? overflow : message;
  };
  for (const char* refused : {"full([2], 300, dtype='u8')",
                              "full([2], -256, dtype='u8')",
                              "full([2], -1.0, dtype='u8')",
                              "full([2], -0.5, dtype='u8')",
                              "full([2], 255.9, dtype='u8')",
                              "full([2], 128, dtype='i8')",
                              "full([2], -128.5, dtype='i8')",
                              "full([2], 127.5, dtype='i8')",
                              "full([2], 65535, dtype='i16')",
                              "full([2], 2147483648, dtype='i32')",
                              "full([2], 2147483647.5, dtype='i32')",
                              "full([2], nan, dtype='i32')",
                              "full([2], inf, dtype='i64')",
                              "full([2], 9.3e18, dtype='i64')",
                              "full([2], 1e39)",
                              "full([2], 3.4028234663852888e38)",
                              "full([2], 65504.5, dtype='f16')",
                              "full([2], 70000, dtype='f16')",
                              "full([2], 3.4e38, dtype='bf16')",
                              "full([2], 3.39e38, dtype='bf16')",
                              "full([0], 70000.0, dtype='f16')",
                              "scalar_tensor(300, dtype='u8')",
                              "scalar_tensor(1e39)"}) {
    EXPECT_EQ(check(refused), overflow) << refused;
  }
  for (const char* accepted :
       {"full([2], -1, dtype='u8')", "full([2], -255, dtype='u8')", "full([2], 255, dtype='u8')",
        "full([2], -0.0, dtype='u8')", "full([2], 254.5, dtype='u8')",
        "full([2], -128, dtype='i8')", "full([2], -2.7, dtype='i32')",
        "full([2], -2147483648.0, dtype='i32')", "full([2], 9.223372036854775807e18, dtype='i64')",
        "full([2], inf)", "full([2], nan, dtype='f16')", "full([2], 3.4028234663852886e38)",
        "full([2], 65504.0, dtype='f16')", "full([2], 3.38e38, dtype='bf16')",
        "full([2], 2, dtype='bool')", "full([2], nan, dtype='bool')", "full([2], True, dtype='u8')",
        "full([2], 1e-50)",
        // One-element 16-bit fills round without the check in torch (65520 -> inf).
        "full([1], 70000.0, dtype='f16')", "scalar_tensor(65520.0, dtype='f16')",
        "full([], 3.4e38, dtype='bf16')"}) {
    EXPECT_EQ(check(accepted), "<no error>") << accepted;
  }
  EXPECT_EQ(infer_error("", "full([2], 300, dtype='u8')"),
            "full: argument 'fill_value': value 300 cannot be converted to u8 without overflow "
            "([0, 255])");
  EXPECT_EQ(infer_error("x: u8[2]", "full_like(x, 300)"),
            "full_like: argument 'fill_value': value 300 cannot be converted to u8 without "
            "overflow ([0, 255])");
  EXPECT_EQ(infer_error("x: f16[3]", "fill(x, 1e5)"),
            "fill: argument 'value': value 1e+05 cannot be converted to f16 without overflow "
            "(largest finite value 65504.0)");
  EXPECT_EQ(infer_error("x: i32[3]", "full_like(x, 2.5, dtype='i8')"), "<no error>");
}

// where, clamp and alpha convert their scalars to the computation dtype with PyTorch's checked
// conversion (torch 2.13.0 raises "value cannot be converted to type int8_t without
// overflow"), while arithmetic operands wrap (i8 + 300 adds 44).
TEST(FactorySchemaTest, ScalarArgumentsOfWhereClampAndAlphaMustFit) {
  const std::string in = "x: i8[2], u: u8[2], m: bool[2], h: f16[2], f: f32[2]";
  EXPECT_EQ(infer_error(in, "where(m, x, 300)"),
            "where: argument 'other': value 300 cannot be converted to i8 without overflow "
            "([-128, 127])");
  EXPECT_EQ(infer_error(in, "clamp(x, min=-300)"),
            "clamp: argument 'min': value -300 cannot be converted to i8 without overflow "
            "([-128, 127])");
  EXPECT_EQ(infer_error(in, "clamp_max(u, 256)"),
            "clamp_max: argument 'max': value 256 cannot be converted to u8 without overflow "
            "([0, 255])");
  EXPECT_EQ(infer_error(in, "add(x, x, alpha=300)"),
            "add: argument 'alpha': value 300 cannot be converted to i8 without overflow "
            "([-128, 127])");
  EXPECT_THROW(infer(in, "sub(h, h, alpha=70000)"), std::exception);
  EXPECT_THROW(infer(in, "clamp(f, min=1e39)"), std::exception);
  // Accepted as in eager: uint8 takes -255..-1, a where in f16 rounds 1e6 to inf, arithmetic
  // wraps, and a float bound promotes an integer clamp to float.
  EXPECT_EQ(infer(in, "where(m, u, -255)"), type(DType::UInt8, {2}));
  EXPECT_EQ(infer(in, "clamp(u, min=-1)"), type(DType::UInt8, {2}));
  EXPECT_EQ(infer(in, "where(m, h, 1000000.0)"), type(DType::Float16, {2}));
  EXPECT_EQ(infer(in, "add(x, 300)"), type(DType::Int8, {2}));
  EXPECT_EQ(infer(in, "clamp(x, max=1e19)"), type(DType::Float32, {2}));
  EXPECT_EQ(infer("x: i64[2]", "add(x, 1, alpha=9223372036854775807)"), type(DType::Int64, {2}));
}

TEST(FactorySchemaTest, ArgumentKindErrors) {
  EXPECT_EQ(infer_error("x: f32[2]", "full(x, 1.0)"),
            "full: argument 'size' expects an int list, got a tensor");
  EXPECT_EQ(infer_error("x: f32[2]", "full([2], x)"),
            "full: argument 'fill_value' expects a scalar, got a tensor");
  EXPECT_EQ(infer_error("", "zeros([2], dtype='f8')"),
            "zeros: argument 'dtype': unknown dtype 'f8'");
  EXPECT_EQ(infer_error("", "zeros([2], 'f32')"),
            "zeros: takes at most 1 positional argument but 2 were given");
  EXPECT_EQ(infer_error("", "arange()"), "arange: missing required argument 'start'");
  EXPECT_EQ(infer_error("", "arange(5)"), "arange: missing required argument 'end'");
  EXPECT_EQ(infer_error("", "full_like(3, 1)"),
            "full_like: argument 'self' expects a tensor, got an int");
}

TEST(FactorySchemaTest, GraphsOfFactoriesRoundTrip) {
  const std::string text =
      "def masks(x: f32[4, 8] strides=[1, 4]):\n"
      "    m = full([4, 8], 1.5, dtype='f32')\n"
      "    i = arange(0, 4)\n"
      "    j = arange(-0.5, 3.5, step=0.5, dtype='f64')\n"
      "    k = iota(3, start=-1, step=2, dtype='i8')\n"
      "    s = scalar_tensor(True)\n"
      "    z = zeros([2, 0])\n"
      "    o = ones([3], dtype='bool')\n"
      "    fl = full_like(x, 2)\n"
      "    zl = zeros_like(x, dtype='i32')\n"
      "    ol = ones_like(x)\n"
      "    f = fill(x, -inf)\n"
      "    n = full([2], 3)\n"
      "    return m, i, j, k, s, z, o, fl, zl, ol, f, n\n";
  const Graph g = parse_graph(text);
  EXPECT_EQ(print_graph(g), text);
  EXPECT_EQ(parse_graph(print_graph(g)), g);
  EXPECT_EQ(find_op_schema("arange")->category, OpCategory::Factory);
  EXPECT_EQ(find_op_schema("fill")->category, OpCategory::Factory);
}

TEST(FactorySchemaTest, GraphWithoutInputsRoundTrips) {
  const std::string text =
      "def constants():\n"
      "    a = arange(0, 10, step=3)\n"
      "    b = full([2, 5], -inf)\n"
      "    return a, b\n";
  const Graph g = parse_graph(text);
  EXPECT_TRUE(g.inputs().empty());
  EXPECT_EQ(g.value(g.outputs()[0]).type, type(DType::Int64, {4}));
  EXPECT_EQ(print_graph(g), text);
  EXPECT_EQ(parse_graph(print_graph(g)), g);
}

TEST(FactorySchemaTest, BuilderMakesTheTextsNodes) {
  Graph built("masks");
  Val x = ops::input(built, "x", DType::Float32, {4, 8});
  Val m = ops::full(built, {4, 8}, 1.5, DType::Float32);
  Val i = ops::arange(built, 4);
  Val j = ops::arange(built, -0.5, 3.5, 0.5, DType::Float64);
  Val k = ops::iota(built, 3, -1, 2, DType::Int8);
  Val s = ops::scalar_tensor(built, true);
  Val z = ops::zeros(built, {2, 0});
  Val o = ops::ones(built, {3}, DType::Bool);
  Val fl = ops::full_like(x, 2);
  Val zl = ops::zeros_like(x, DType::Int32);
  Val ol = ops::ones_like(x);
  Val f = ops::fill(x, -1.0);
  Val n = ops::full(built, {2}, int64_t{3});
  ops::output(built, {m, i, j, k, s, z, o, fl, zl, ol, f, n});
  const Graph parsed = parse_graph(
      "def masks(x: f32[4, 8]):\n"
      "    v0 = full([4, 8], 1.5, dtype='f32')\n"
      "    v1 = arange(0, 4)\n"
      "    v2 = arange(-0.5, 3.5, 0.5, dtype='f64')\n"
      "    v3 = iota(3, start=-1, step=2, dtype='i8')\n"
      "    v4 = scalar_tensor(True)\n"
      "    v5 = zeros([2, 0])\n"
      "    v6 = ones([3], dtype='bool')\n"
      "    v7 = full_like(x, 2)\n"
      "    v8 = zeros_like(x, dtype='i32')\n"
      "    v9 = ones_like(x)\n"
      "    v10 = fill(x, -1.0)\n"
      "    v11 = full([2], 3)\n"
      "    return v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11\n");
  EXPECT_EQ(built, parsed) << print_graph(built);
  EXPECT_EQ(i.type().dtype, DType::Int64);
  EXPECT_EQ(n.type().dtype, DType::Int64);
}

}  // namespace
}  // namespace stax::ir
