// Tests of the pooling schemas: ATen's parameter names, order and defaults, result types (the
// two results of max_pool2d_with_indices), the arguments as pooling_args reads them, and the
// refusals torch 2.13.0 makes (probed with torch.ops.aten.*.default on CPU; torch's message is
// in a comment), each message naming the op; the text format prints and reparses them. The
// backward ops likewise, with the refusals of what eager leaves unchecked (and corrupts).
#include <gtest/gtest.h>

#include "ir/op_schema.h"
#include "ir/pooling_args.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using testing::infer;
using testing::infer_error;
using testing::one_statement;
using testing::type;

// The graph of `v, i = max_pool2d_with_indices(x, ARGS)` over input x of type `x`.
Graph max_pool_graph(const std::string& x, const std::string& args) {
  return parse_graph("def t(x: " + x + "):\n    v, i = max_pool2d_with_indices(x, " + args +
                         ")\n    return v, i\n",
                     "t.stax");
}

// The types of the values and the indices.
std::pair<TensorType, TensorType> max_pool(const std::string& x, const std::string& args) {
  const Graph g = max_pool_graph(x, args);
  return {g.value(g.outputs().at(0)).type, g.value(g.outputs().at(1)).type};
}

std::string max_pool_error(const std::string& x, const std::string& args) {
  try {
    max_pool_graph(x, args);
  } catch (const ParseError& e) {
    const std::string message = e.what();
    const std::string prefix = "t.stax:2:5: ";
    if (message.rfind(prefix, 0) == 0) return message.substr(prefix.size());
    return "<unexpected location> " + message;
  }
  return "<no error>";
}

std::string avg(const std::string& args) {
  return "avg_pool2d(x, " + args + ")";
}
std::string adaptive(const std::string& size) {
  return "_adaptive_avg_pool2d(x, " + size + ")";
}

void expect_params(const char* op, const std::vector<std::pair<std::string, ParamKind>>& expected,
                   const std::vector<std::optional<Arg>>& defaults) {
  const OpSchema* s = find_op_schema(op);
  ASSERT_NE(s, nullptr) << op;
  EXPECT_EQ(s->category, OpCategory::Pooling) << op;
  ASSERT_EQ(s->params.size(), expected.size()) << op;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(s->params[i].name, expected[i].first) << op;
    EXPECT_EQ(s->params[i].kind, expected[i].second) << op << " " << expected[i].first;
    EXPECT_FALSE(s->params[i].keyword_only) << op << " " << expected[i].first;
    EXPECT_EQ(s->params[i].default_value, defaults[i]) << op << " " << expected[i].first;
  }
}

TEST(PoolingSchemaTest, AtenNamesOrderAndDefaults) {
  using K = ParamKind;
  const std::vector<int64_t> none = {}, zero = {0}, one = {1};
  // aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[],
  //   int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
  expect_params("max_pool2d_with_indices",
                {{"self", K::Tensor},
                 {"kernel_size", K::IntList},
                 {"stride", K::IntList},
                 {"padding", K::IntList},
                 {"dilation", K::IntList},
                 {"ceil_mode", K::Bool}},
                {std::nullopt, std::nullopt, Arg(none), Arg(zero), Arg(one), Arg(false)});
  EXPECT_TRUE(static_cast<bool>(find_op_schema("max_pool2d_with_indices")->result_count));
  // aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
  //   bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None)
  expect_params(
      "avg_pool2d",
      {{"self", K::Tensor},
       {"kernel_size", K::IntList},
       {"stride", K::IntList},
       {"padding", K::IntList},
       {"ceil_mode", K::Bool},
       {"count_include_pad", K::Bool},
       {"divisor_override", K::OptionalInt}},
      {std::nullopt, std::nullopt, Arg(none), Arg(zero), Arg(false), Arg(true), Arg(None{})});
  // aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size)
  expect_params("_adaptive_avg_pool2d", {{"self", K::Tensor}, {"output_size", K::IntList}},
                {std::nullopt, std::nullopt});
  EXPECT_FALSE(static_cast<bool>(find_op_schema("avg_pool2d")->result_count));
}

TEST(PoolingSchemaTest, MaxPoolResultTypes) {
  // (13 + 2 - 3) / 2 + 1 = 7, (11 + 2 - 3) / 2 + 1 = 6; the indices are i64.
  EXPECT_EQ(max_pool("f32[2, 3, 13, 11]", "[3, 3], [2, 2], [1, 1]"),
            std::make_pair(type(DType::Float32, {2, 3, 7, 6}), type(DType::Int64, {2, 3, 7, 6})));
  // Defaults: the stride is the kernel, a single value is expanded; 3-D input.
  EXPECT_EQ(max_pool("bf16[3, 9, 8]", "2").first, type(DType::BFloat16, {3, 4, 4}));
  // Dilation: (13 - 2 * 2 - 1) / 1 + 1 = 9.
  EXPECT_EQ(max_pool("i8[1, 2, 13, 13]", "[3, 3], [1, 1], [0, 0], [2, 2]").first,
            type(DType::Int8, {1, 2, 9, 9}));
  // ceil_mode: (5 - 2 + 1) / 2 + 1 = 3 (the last window hangs over the input's end); a last
  // window would start in the right padding in the second: (5 + 2 - 2 + 1) / 2 + 1 = 4, and
  // 3 * 2 >= 5 + 1 drops it.
  EXPECT_EQ(max_pool("f64[1, 1, 5, 5]", "[2, 2], [2, 2], [0, 0], [1, 1], True").first,
            type(DType::Float64, {1, 1, 3, 3}));
  EXPECT_EQ(max_pool("f64[1, 1, 5, 5]", "[2, 2], [2, 2], [1, 1], [1, 1], True").first,
            type(DType::Float64, {1, 1, 3, 3}));
  // An empty batch; a strided input gives contiguous results.
  EXPECT_EQ(max_pool("f32[0, 3, 5, 5]", "2").first, type(DType::Float32, {0, 3, 2, 2}));
  EXPECT_EQ(max_pool("f32[1, 4, 6, 6] strides=[144, 1, 24, 4]", "2").second,
            type(DType::Int64, {1, 4, 3, 3}));
  // Every dtype but bool.
  for (const char* d : {"u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"}) {
    EXPECT_EQ(max_pool(std::string(d) + "[1, 1, 4, 4]", "2").first.dtype, *parse_dtype(d)) << d;
  }
}

TEST(PoolingSchemaTest, AvgPoolResultTypes) {
  EXPECT_EQ(infer("x: f32[2, 3, 13, 11]", avg("[3, 3], [2, 2], [1, 1], True, False")),
            type(DType::Float32, {2, 3, 7, 6}));
  EXPECT_EQ(infer("x: f64[3, 9, 8]", avg("[3, 2]")), type(DType::Float64, {3, 3, 4}));
  // ceil_mode: (5 + 2 - 2 + 1) / 2 + 1 = 4, but the last window would start at 3 * 2 - 1 = 5,
  // in the right padding: 3.
  EXPECT_EQ(infer("x: i64[1, 1, 5, 5]", avg("2, 2, 1, True, True, 3")),
            type(DType::Int64, {1, 1, 3, 3}));
  // A negative divisor_override is accepted (torch divides by it).
  EXPECT_EQ(infer("x: bf16[1, 1, 4, 4]", avg("2, divisor_override=-3")),
            type(DType::BFloat16, {1, 1, 2, 2}));
  EXPECT_EQ(infer("x: f16[0, 2, 4, 4]", avg("2")), type(DType::Float16, {0, 2, 2, 2}));
}

TEST(PoolingSchemaTest, AdaptiveAvgPoolResultTypes) {
  EXPECT_EQ(infer("x: f32[2, 3, 13, 11]", adaptive("[4, 5]")), type(DType::Float32, {2, 3, 4, 5}));
  EXPECT_EQ(infer("x: bf16[3, 5, 5]", adaptive("[7, 7]")), type(DType::BFloat16, {3, 7, 7}));
  // An output size of 0, and no channels: empty results, computed for any dtype.
  EXPECT_EQ(infer("x: f32[1, 1, 5, 5]", adaptive("[0, 2]")), type(DType::Float32, {1, 1, 0, 2}));
  EXPECT_EQ(infer("x: i32[1, 0, 5, 5]", adaptive("[2, 2]")), type(DType::Int32, {1, 0, 2, 2}));
  EXPECT_EQ(infer("x: bool[0, 5, 5]", adaptive("[2, 2]")), type(DType::Bool, {0, 2, 2}));
}

TEST(PoolingSchemaTest, ArgumentsAsPoolingArgsReadsThem) {
  const Graph g = max_pool_graph("f32[2, 3, 13, 11]", "[3, 2], [2], [1, 0], [1, 2], True");
  const PoolingArgs m = pooling_args(g, g.nodes().at(0));
  EXPECT_EQ(m.kind, PoolingKind::Max);
  EXPECT_EQ(m.input, *g.find_value("x"));
  EXPECT_EQ(m.kernel, (std::array<int64_t, 2>{3, 2}));
  EXPECT_EQ(m.stride, (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(m.padding, (std::array<int64_t, 2>{1, 0}));
  EXPECT_EQ(m.dilation, (std::array<int64_t, 2>{1, 2}));
  EXPECT_TRUE(m.ceil_mode);
  EXPECT_EQ(m.in, (std::array<int64_t, 2>{13, 11}));
  // ceil((13 + 2 - 3) / 2) + 1 = 7; ceil((11 - 2 - 1) / 2) + 1 = 5.
  EXPECT_EQ(m.out, (std::array<int64_t, 2>{7, 5}));
  EXPECT_EQ(m.leading_dims(), 2u);
  EXPECT_EQ(m.window_elements(), 6);
  EXPECT_EQ(pooling_args(g, g.nodes().at(1)).result_sizes(), (std::vector<int64_t>{2, 3, 7, 5}));

  const Graph a = testing::one_statement("x: f32[4, 10, 9]", avg("[3, 3], [], 1, False, False, 7"));
  const PoolingArgs p = pooling_args(a, a.nodes().at(0));
  EXPECT_EQ(p.kind, PoolingKind::Average);
  EXPECT_EQ(p.stride, (std::array<int64_t, 2>{3, 3}));  // [] is the kernel
  EXPECT_EQ(p.padding, (std::array<int64_t, 2>{1, 1}));
  EXPECT_FALSE(p.count_include_pad);
  EXPECT_EQ(p.divisor_override, std::optional<int64_t>(7));
  EXPECT_EQ(p.leading_dims(), 1u);
  EXPECT_EQ(p.result_sizes(), (std::vector<int64_t>{4, 4, 3}));

  const Graph d = testing::one_statement("x: f32[1, 2, 5, 8]", adaptive("[3, 4]"));
  const PoolingArgs q = pooling_args(d, d.nodes().at(0));
  EXPECT_EQ(q.kind, PoolingKind::AdaptiveAverage);
  // Windows along H (5 -> 3): [0, 2), [1, 4), [3, 5); along W (8 -> 4): 2 each.
  EXPECT_EQ(q.adaptive_start(0, 1), 1);
  EXPECT_EQ(q.adaptive_end(0, 1), 4);
  EXPECT_EQ(q.adaptive_start(0, 2), 3);
  EXPECT_EQ(q.adaptive_end(0, 2), 5);
  EXPECT_EQ(q.window(), (std::array<int64_t, 2>{3, 2}));
  EXPECT_TRUE(is_pooling_op("avg_pool2d"));
  EXPECT_FALSE(is_pooling_op("max_pool2d"));
}

TEST(PoolingSchemaTest, RefusesParameterLists) {
  // torch: "max_pool2d: kernel_size must either be a single int, or a tuple of two ints".
  EXPECT_EQ(max_pool_error("f32[1, 1, 5, 5]", "[]"),
            "max_pool2d_with_indices: kernel_size must either be a single int, or a tuple of "
            "two ints, got kernel_size=[]");
  EXPECT_EQ(infer_error("x: f32[1, 1, 5, 5]", avg("[2, 2, 2]")),
            "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints, got "
            "kernel_size=[2, 2, 2]");
  // torch: "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints".
  EXPECT_EQ(max_pool_error("f32[1, 1, 5, 5]", "[3, 3], [1, 1, 1]"),
            "max_pool2d_with_indices: stride must either be omitted, a single int, or a tuple "
            "of two ints, got stride=[1, 1, 1]");
  EXPECT_EQ(infer_error("x: f32[1, 1, 5, 5]", avg("[2, 2], [1, 1], [1, 1, 1]")),
            "avg_pool2d: padding must either be a single int, or a tuple of two ints, got "
            "padding=[1, 1, 1]");
  // torch: "max_pool2d: dilation must be either a single int, or a tuple of two ints".
  EXPECT_EQ(max_pool_error("f32[1, 1, 5, 5]", "[3, 3], [1, 1], [1, 1], [1, 1, 1]"),
            "max_pool2d_with_indices: dilation must be either a single int, or a tuple of two "
            "ints, got dilation=[1, 1, 1]");
  // torch: "value cannot be converted to type int without overflow".
  EXPECT_EQ(max_pool_error("f32[1, 1, 5, 5]", "[1099511627776, 2]"),
            "max_pool2d_with_indices: kernel_size value cannot be converted to type int "
            "without overflow (PyTorch's pooling kernels take 32-bit ints), got "
            "kernel_size=[1099511627776, 2]");
  // _adaptive_avg_pool2d. torch: "adaptive_avg_pool2d: output_size must be 2".
  EXPECT_EQ(infer_error("x: f32[1, 1, 5, 5]", adaptive("[2]")),
            "_adaptive_avg_pool2d: output_size must be 2 values, got output_size=[2]");
  // torch: "numel: integer multiplication overflow".
  EXPECT_EQ(infer_error("x: f32[1, 1, 5, 5]", adaptive("[-1, 2]")),
            "_adaptive_avg_pool2d: output_size must not be negative, got output_size=[-1, 2]");
}

TEST(PoolingSchemaTest, RefusesKernelsStridesPaddingAndDilation) {
  // torch: "kernel size should be greater than zero, but got kH: 0 kW: 2".
  EXPECT_EQ(max_pool_error("f32[1, 1, 5, 5]", "[0, 2], [1, 1]"),
            "max_pool2d_with_indices: kernel size should be greater than zero, but got kH: 0 "
            "kW: 2");
  EXPECT_EQ(infer_error("x: f32[1, 1, 5, 5]", avg("[-1, 2], [1, 1]")),
            "avg_pool2d: kernel size should be greater than zero, but got kH: -1 kW: 2");
  // torch: "stride should not be zero", and "stride should be greater than zero, but got
  // dH: -2 dW: 1".
  EXPECT_EQ(infer_error("x: f32[1, 1, 5, 5]", avg("[3, 3], [0, 1]")),
            "avg_pool2d: stride should not be zero, got stride=[0, 1]");
  EXPECT_EQ(max_pool_error("f32[1, 1, 5, 5]", "[3, 3], [-2, 1]"),
            "max_pool2d_with_indices: stride should be greater than zero, but got dH: -2 dW: 1");
  // torch: "dilation should be greater than zero, but got dilationH: 0 dilationW: 1".
  EXPECT_EQ(max_pool_error("f32[1, 1, 5, 5]", "[2, 2], [1, 1], [0, 0], [0, 1]"),
            "max_pool2d_with_indices: dilation should be greater than zero, but got dilationH: "
            "0 dilationW: 1");
  // torch: "pad must be non-negative, but got pad: -1".
  EXPECT_EQ(infer_error("x: f32[1, 1, 5, 5]", avg("[2, 2], [1, 1], [-1, 1]")),
            "avg_pool2d: pad must be non-negative, but got padding=[-1, 1]");
  // torch: "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2
  // and dilation=1"; with a dilation the kernel's own half still bounds the padding: "pad
  // should be smaller than or equal to half of kernel size, but got padW = 2, padH = 2,
  // kW = 3, kH = 3".
  EXPECT_EQ(max_pool_error("f32[1, 1, 5, 5]", "[2, 2], [1, 1], [2, 0]"),
            "max_pool2d_with_indices: pad should be smaller than or equal to half of kernel "
            "size, but got padH = 2, padW = 0, kH = 2, kW = 2");
  EXPECT_EQ(max_pool_error("f32[1, 1, 5, 5]", "[3, 3], [1, 1], [2, 2], [2, 2]"),
            "max_pool2d_with_indices: pad should be smaller than or equal to half of kernel "
            "size, but got padH = 2, padW = 2, kH = 3, kW = 3");
  EXPECT_EQ(infer_error("x: f32[1, 1, 5, 5]", avg("[3, 2], [1, 1], [1, 2]")),
            "avg_pool2d: pad should be smaller than or equal to half of kernel size, but got "
            "padH = 1, padW = 2, kH = 3, kW = 2");
  // A padding of half the kernel is accepted.
  EXPECT_EQ(infer("x: f32[1, 1, 5, 5]", avg("[4, 2], [1, 1], [2, 1]")),
            type(DType::Float32, {1, 1, 6, 6}));
}

TEST(PoolingSchemaTest, RefusesInputShapesAndSmallOutputs) {
  // torch: "non-empty 3D or 4D (batch mode) tensor expected for input".
  EXPECT_EQ(max_pool_error("f32[5, 5]", "2"),
            "max_pool2d_with_indices: expected a 3-D [C, H, W] or 4-D (batch mode) [N, C, H, W] "
            "input, got sizes [5, 5]");
  EXPECT_EQ(infer_error("x: f32[1, 1, 2, 5, 5]", avg("2")),
            "avg_pool2d: expected a 3-D [C, H, W] or 4-D (batch mode) [N, C, H, W] input, got "
            "sizes [1, 1, 2, 5, 5]");
  // torch: "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input,
  // but got:[1, 0, 5, 5]".
  EXPECT_EQ(max_pool_error("f32[1, 0, 5, 5]", "2"),
            "max_pool2d_with_indices: expected a 3-D or 4-D (batch mode) input with a dim of "
            "size 0 only in the batch, but got sizes [1, 0, 5, 5]");
  EXPECT_EQ(infer_error("x: f32[0, 5, 5]", avg("2")),
            "avg_pool2d: expected a 3-D or 4-D (batch mode) input with a dim of size 0 only in "
            "the batch, but got sizes [0, 5, 5]");
  // torch: "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [5]".
  EXPECT_EQ(infer_error("x: f32[5]", adaptive("[2, 2]")),
            "_adaptive_avg_pool2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got sizes "
            "[5]");
  // torch: "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch
  // dimensions, but input has sizes [1, 2, 0, 5] with dimension 2 being empty".
  EXPECT_EQ(infer_error("x: f32[1, 2, 0, 5]", adaptive("[2, 2]")),
            "_adaptive_avg_pool2d: expected input to have non-zero size for non-batch "
            "dimensions, but input has sizes [1, 2, 0, 5] with dimension 2 being empty");
  // torch: "Given input size: (1x1x1). Calculated output size: (1x0x0). Output size is too
  // small" (for an empty batch too).
  EXPECT_EQ(max_pool_error("f32[1, 1, 1, 1]", "[2, 2]"),
            "max_pool2d_with_indices: given input size: (1x1x1). Calculated output size: "
            "(1x0x0). Output size is too small (kernel_size [2, 2], stride [2, 2], padding [0, "
            "0], dilation [1, 1])");
  EXPECT_EQ(infer_error("x: f32[0, 1, 5, 5]", avg("[9, 9]")),
            "avg_pool2d: given input size: (1x5x5). Calculated output size: (1x0x0). Output "
            "size is too small (kernel_size [9, 9], stride [9, 9], padding [0, 0])");
  EXPECT_EQ(max_pool_error("f32[1, 1, 2, 5]", "[2, 2], [1, 1], [0, 0], [3, 3], True"),
            "max_pool2d_with_indices: given input size: (1x2x5). Calculated output size: "
            "(1x-1x2). Output size is too small (kernel_size [2, 2], stride [1, 1], padding [0, "
            "0], dilation [3, 3], ceil_mode)");
}

TEST(PoolingSchemaTest, DtypesEagerImplements) {
  // torch: "max_pool2d" not implemented for 'Bool' (an empty batch too).
  EXPECT_EQ(max_pool_error("bool[0, 1, 4, 4]", "2"),
            "max_pool2d_with_indices: bool is not supported (PyTorch implements max_pool2d for "
            "floating and integer dtypes only): input bool[0, 1, 4, 4]");
  // torch: "avg_pool2d" not implemented for 'Int'; floating dtypes and i64 are.
  EXPECT_EQ(infer_error("x: i32[1, 1, 4, 4]", avg("2")),
            "avg_pool2d: i32 is not supported (PyTorch implements avg_pool2d for floating dtypes "
            "and i64 only)");
  EXPECT_EQ(infer_error("x: u8[0, 1, 4, 4]", avg("2")),
            "avg_pool2d: u8 is not supported (PyTorch implements avg_pool2d for floating dtypes "
            "and i64 only)");
  EXPECT_EQ(infer_error("x: bool[1, 1, 4, 4]", avg("2")),
            "avg_pool2d: bool is not supported (PyTorch implements avg_pool2d for floating "
            "dtypes and i64 only): input bool[1, 1, 4, 4]");
  for (const char* d : {"f16", "bf16", "f32", "f64", "i64"}) {
    EXPECT_EQ(infer(std::string("x: ") + d + "[1, 1, 4, 4]", avg("2")).dtype, *parse_dtype(d));
  }
  // torch: "adaptive_avg_pool2d" not implemented for 'Long' (only where there is a result).
  EXPECT_EQ(infer_error("x: i64[1, 1, 4, 4]", adaptive("[2, 2]")),
            "_adaptive_avg_pool2d: i64 is not supported (PyTorch implements adaptive_avg_pool2d "
            "for floating dtypes only): input i64[1, 1, 4, 4]");
  // torch: "divisor must be not zero".
  EXPECT_EQ(infer_error("x: f32[1, 1, 4, 4]", avg("2, divisor_override=0")),
            "avg_pool2d: divisor must be not zero (divisor_override=0)");
}

TEST(PoolingSchemaTest, TextFormatRoundTrip) {
  const Graph g = parse_graph(
      R"(def t(x: f32[2, 3, 13, 11]):
    v, i = max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])
    a = avg_pool2d(x, 3, 2, 1, True, False, 5)
    d = _adaptive_avg_pool2d(x, [1, 1])
    return v, i, a, d
)");
  const std::string text = print_graph(g);
  // Arguments after the first defaulted one are printed by keyword.
  EXPECT_NE(text.find("v, i = max_pool2d_with_indices(x, [3, 3], stride=[2, 2], padding=[1, 1])"),
            std::string::npos)
      << text;
  const Graph h = parse_graph(text);
  EXPECT_EQ(h, g);
  EXPECT_EQ(print_graph(h), text);
  EXPECT_EQ(g.value(*g.find_value("i")).type, type(DType::Int64, {2, 3, 7, 6}));
  EXPECT_EQ(g.value(*g.find_value("a")).type, type(DType::Float32, {2, 3, 7, 6}));
  // One result for a one-result name list: the op has two.
  EXPECT_NE(infer_error("x: f32[1, 1, 4, 4]", "max_pool2d_with_indices(x, 2)")
                .find("gives 2 "
                      "results"),
            std::string::npos);
}

// The backward ops: every parameter required, as ATen declares them, but divisor_override.
TEST(PoolingBackwardSchemaTest, AtenNamesOrderAndDefaults) {
  using K = ParamKind;
  const std::vector<std::optional<Arg>> required8(8, std::nullopt);
  // aten::max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2]
  //   kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode,
  //   Tensor indices) -> Tensor
  expect_params("max_pool2d_with_indices_backward",
                {{"grad_output", K::Tensor},
                 {"self", K::Tensor},
                 {"kernel_size", K::IntList},
                 {"stride", K::IntList},
                 {"padding", K::IntList},
                 {"dilation", K::IntList},
                 {"ceil_mode", K::Bool},
                 {"indices", K::Tensor}},
                required8);
  // aten::avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2]
  //   stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override)
  // divisor_override defaults to None (ATen's has no default): a None left out binds.
  expect_params("avg_pool2d_backward",
                {{"grad_output", K::Tensor},
                 {"self", K::Tensor},
                 {"kernel_size", K::IntList},
                 {"stride", K::IntList},
                 {"padding", K::IntList},
                 {"ceil_mode", K::Bool},
                 {"count_include_pad", K::Bool},
                 {"divisor_override", K::OptionalInt}},
                [] {
                  std::vector<std::optional<Arg>> d(8, std::nullopt);
                  d[7] = Arg(None{});
                  return d;
                }());
  // aten::_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor
  expect_params("_adaptive_avg_pool2d_backward", {{"grad_output", K::Tensor}, {"self", K::Tensor}},
                {std::nullopt, std::nullopt});
  for (const char* op : {"max_pool2d_with_indices_backward", "avg_pool2d_backward",
                         "_adaptive_avg_pool2d_backward"}) {
    EXPECT_TRUE(is_pooling_op(op)) << op;
  }
}

const char* const kMaxBackward =
    "max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i)";

TEST(PoolingBackwardSchemaTest, ResultIsTheInputsGradient) {
  // 3x3/2 pad 1 over 13x11: a 7x6 result.
  EXPECT_EQ(infer("g: f32[2, 3, 7, 6], x: f32[2, 3, 13, 11], i: i64[2, 3, 7, 6]", kMaxBackward),
            type(DType::Float32, {2, 3, 13, 11}));
  // Channels-last operands give the input's sizes (the layout is lowering's).
  EXPECT_EQ(infer("g: bf16[1, 4, 3, 3] strides=[36, 1, 12, 4], x: bf16[1, 4, 6, 6], "
                  "i: i64[1, 4, 3, 3]",
                  "max_pool2d_with_indices_backward(g, x, 2, [], 0, 1, False, i)"),
            type(DType::BFloat16, {1, 4, 6, 6}));
  EXPECT_EQ(infer("g: f64[3, 3, 4], x: f64[3, 9, 8]",
                  "avg_pool2d_backward(g, x, [3, 2], [], [0], False, True, None)"),
            type(DType::Float64, {3, 9, 8}));
  EXPECT_EQ(infer("g: i64[1, 1, 3, 3], x: i64[1, 1, 5, 5]",
                  "avg_pool2d_backward(g, x, 2, 2, 1, True, True, 3)"),
            type(DType::Int64, {1, 1, 5, 5}));
  // Adaptive: the output size is grad_output's, smaller or larger than the input.
  EXPECT_EQ(
      infer("g: f32[2, 3, 4, 5], x: f32[2, 3, 13, 11]", "_adaptive_avg_pool2d_backward(g, x)"),
      type(DType::Float32, {2, 3, 13, 11}));
  EXPECT_EQ(infer("g: f16[3, 7, 7], x: f16[3, 5, 5]", "_adaptive_avg_pool2d_backward(g, x)"),
            type(DType::Float16, {3, 5, 5}));
  // Empty batches.
  EXPECT_EQ(infer("g: f32[0, 3, 7, 6], x: f32[0, 3, 13, 11], i: i64[0, 3, 7, 6]", kMaxBackward),
            type(DType::Float32, {0, 3, 13, 11}));
  EXPECT_EQ(infer("g: f32[0, 1, 3, 3], x: f32[0, 1, 4, 4]", "_adaptive_avg_pool2d_backward(g, x)"),
            type(DType::Float32, {0, 1, 4, 4}));
}

TEST(PoolingBackwardSchemaTest, ArgumentsAsPoolingArgsReadsThem) {
  const Graph g = one_statement(
      "g: f32[2, 3, 7, 7], x: f32[2, 3, 13, 13], i: i64[2, 3, 7, 7]",
      "max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i)");
  const PoolingArgs a = pooling_args(g, g.nodes().back());
  EXPECT_TRUE(a.backward);
  EXPECT_EQ(a.kind, PoolingKind::Max);
  EXPECT_EQ(a.grad_output, *g.find_value("g"));
  EXPECT_EQ(a.input, *g.find_value("x"));
  EXPECT_EQ(a.indices, *g.find_value("i"));
  EXPECT_EQ(a.out, (std::array<int64_t, 2>{7, 7}));
  // The gather runs over the 3x3 offsets; with stride 2 at most 2 of them meet an output.
  EXPECT_EQ(a.window_elements(), 9);
  EXPECT_EQ(a.summed_terms(), 4);
  // Stride 2 with dilation 2: every offset's position has the same parity, all 3 can meet one.
  const Graph d = one_statement(
      "g: f32[1, 1, 5, 5], x: f32[1, 1, 13, 13], i: i64[1, 1, 5, 5]",
      "max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [0, 0], [2, 2], False, i)");
  EXPECT_EQ(pooling_args(d, d.nodes().back()).summed_terms(), 9);
  const Graph v = one_statement("g: f32[1, 1, 7, 7], x: f32[1, 1, 13, 13]",
                                "avg_pool2d_backward(g, x, 4, 2, 1, True, False, 5)");
  const PoolingArgs b = pooling_args(v, v.nodes().back());
  EXPECT_EQ(b.kind, PoolingKind::Average);
  EXPECT_TRUE(b.ceil_mode);
  EXPECT_FALSE(b.count_include_pad);
  EXPECT_EQ(b.divisor_override, 5);
  EXPECT_EQ(b.summed_terms(), 4);
  // Adaptive 5 -> 7: the outputs each input position meets, against a direct count; at
  // most 3 (position 2 meets [floor(14 / 5), ceil(21 / 5)) = [2, 5)).
  const Graph ad = one_statement("g: f32[1, 1, 7, 7], x: f32[1, 1, 5, 5]",
                                 "_adaptive_avg_pool2d_backward(g, x)");
  const PoolingArgs c = pooling_args(ad, ad.nodes().back());
  EXPECT_EQ(c.out, (std::array<int64_t, 2>{7, 7}));
  for (int64_t i = 0; i < 5; ++i) {
    // The outputs whose window [start(o), end(o)) holds i, counted directly.
    int64_t first = -1, end = -1;
    for (int64_t o = 0; o < 7; ++o) {
      if (c.adaptive_start(0, o) <= i && i < c.adaptive_end(0, o)) {
        if (first < 0) first = o;
        end = o + 1;
      }
    }
    EXPECT_EQ(c.adaptive_first_output(0, i), first) << i;
    EXPECT_EQ(c.adaptive_end_output(0, i), end) << i;
  }
  EXPECT_EQ(c.window(), (std::array<int64_t, 2>{3, 3}));
}

TEST(PoolingBackwardSchemaTest, RefusesWhatEagerRefuses) {
  // The forward's checks: "pad should be smaller than or equal to half of kernel size, but
  // got padW = 2, padH = 2, kW = 2, kH = 2".
  EXPECT_NE(infer_error("g: f32[1, 1, 4, 4], x: f32[1, 1, 8, 8], i: i64[1, 1, 4, 4]",
                        "max_pool2d_with_indices_backward(g, x, 2, 2, 2, 1, False, i)")
                .find("max_pool2d_with_indices_backward: pad should be smaller than or equal to "
                      "half of kernel size"),
            std::string::npos);
  // "expected dtype float for `gradOutput` but got dtype double"
  EXPECT_EQ(infer_error("g: f64[1, 1, 2, 2], x: f32[1, 1, 4, 4], i: i64[1, 1, 2, 2]",
                        "max_pool2d_with_indices_backward(g, x, 2, 2, 0, 1, False, i)"),
            "max_pool2d_with_indices_backward: expected grad_output of self's dtype, got "
            "f64[1, 1, 2, 2] (self f32[1, 1, 4, 4], the forward's result [1, 1, 2, 2])");
  // "Expected a tensor of dimension 4 and tensor.size[2] == 2 but got: dimension 4 and
  // tensor.size[2] = 1"
  EXPECT_EQ(infer_error("g: f32[1, 1, 1, 2], x: f32[1, 1, 4, 4]",
                        "avg_pool2d_backward(g, x, 2, 2, 0, False, True, None)"),
            "avg_pool2d_backward: expected grad_output of the forward result's sizes, got "
            "f32[1, 1, 1, 2] (self f32[1, 1, 4, 4], the forward's result [1, 1, 2, 2])");
  // ceil_mode changes the forward's result: 3x3 expected.
  EXPECT_NE(infer_error("g: f32[1, 1, 2, 2], x: f32[1, 1, 5, 5]",
                        "avg_pool2d_backward(g, x, 2, 2, 0, True, True, None)"),
            "<no error>");
  // "expected scalar type Long but found Int"
  EXPECT_EQ(infer_error("g: f32[1, 1, 2, 2], x: f32[1, 1, 4, 4], i: i32[1, 1, 2, 2]",
                        "max_pool2d_with_indices_backward(g, x, 2, 2, 0, 1, False, i)"),
            "max_pool2d_with_indices_backward: expected int64 indices of the forward result's "
            "sizes, got i32[1, 1, 2, 2] (self f32[1, 1, 4, 4], the forward's result [1, 1, 2, 2])");
  EXPECT_NE(infer_error("g: f32[1, 1, 2, 2], x: f32[1, 1, 4, 4], i: i64[1, 1, 1, 2]",
                        "max_pool2d_with_indices_backward(g, x, 2, 2, 0, 1, False, i)"),
            "<no error>");
  // "max_pool2d_backward" not implemented for 'Long' (even on an empty batch).
  EXPECT_EQ(infer_error("g: i64[0, 1, 2, 2], x: i64[0, 1, 4, 4], i: i64[0, 1, 2, 2]",
                        "max_pool2d_with_indices_backward(g, x, 2, 2, 0, 1, False, i)"),
            "max_pool2d_with_indices_backward: i64 is not supported (PyTorch implements "
            "max_pool2d_backward for floating dtypes only)");
  // "avg_pool2d_backward" not implemented for 'Int'; int64 is.
  EXPECT_NE(infer_error("g: i32[1, 1, 2, 2], x: i32[1, 1, 4, 4]",
                        "avg_pool2d_backward(g, x, 2, 2, 0, False, True, None)"),
            "<no error>");
  // "divisor must be not zero"
  EXPECT_NE(infer_error("g: f32[1, 1, 2, 2], x: f32[1, 1, 4, 4]",
                        "avg_pool2d_backward(g, x, 2, 2, 0, False, True, 0)")
                .find("divisor must be not zero"),
            std::string::npos);
  // "Expected dimensions 4 for `grad_output` but got dimensions 2"
  EXPECT_EQ(infer_error("g: f32[3, 3], x: f32[1, 1, 4, 4]", "_adaptive_avg_pool2d_backward(g, x)"),
            "_adaptive_avg_pool2d_backward: expected a 3-D or 4-D grad_output, got sizes [3, 3]");
  // "Expected grad_output to have non-zero size for non-batch dimensions, but grad_output has
  // sizes [1, 1, 0, 3] with dimension 2 being empty"
  EXPECT_EQ(
      infer_error("g: f32[1, 1, 0, 3], x: f32[1, 1, 4, 4]", "_adaptive_avg_pool2d_backward(g, x)"),
      "_adaptive_avg_pool2d_backward: expected grad_output to have non-zero size for "
      "non-batch dimensions, but grad_output has sizes [1, 1, 0, 3] with dimension 2 being "
      "empty");
  // Eager does not check these and corrupts the heap: other channels or batch than self, a
  // 3-D grad_output for a 4-D self, an input plane of size 0.
  for (const char* g : {"f32[1, 2, 3, 3]", "f32[2, 1, 3, 3]", "f32[1, 3, 3]"}) {
    EXPECT_NE(infer_error(std::string("g: ") + g + ", x: f32[1, 1, 4, 4]",
                          "_adaptive_avg_pool2d_backward(g, x)")
                  .find("_adaptive_avg_pool2d_backward: expected grad_output of the forward "
                        "result's sizes"),
              std::string::npos)
        << g;
  }
  EXPECT_NE(
      infer_error("g: f32[1, 1, 3, 3], x: f32[1, 1, 0, 4]", "_adaptive_avg_pool2d_backward(g, x)"),
      "<no error>");
  // "adaptive_avg_pool2d_backward" not implemented for 'Long', even for an empty result.
  EXPECT_EQ(
      infer_error("g: i64[0, 1, 3, 3], x: i64[0, 1, 4, 4]", "_adaptive_avg_pool2d_backward(g, x)"),
      "_adaptive_avg_pool2d_backward: i64 is not supported (PyTorch implements "
      "adaptive_avg_pool2d_backward for floating dtypes only): input i64[0, 1, 4, 4]");
}

TEST(PoolingBackwardSchemaTest, TextFormatRoundTrip) {
  const Graph g = parse_graph(
      R"(def t(g: f32[2, 3, 7, 6], x: f32[2, 3, 13, 11], i: i64[2, 3, 7, 6], a: f32[2, 3, 1, 1]):
    m = max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i)
    v = avg_pool2d_backward(g, x, [3, 3], [2, 2], [1, 1], False, True, None)
    d = _adaptive_avg_pool2d_backward(a, x)
    return m, v, d
)");
  const std::string text = print_graph(g);
  const Graph h = parse_graph(text);
  EXPECT_EQ(h, g);
  EXPECT_EQ(print_graph(h), text);
  EXPECT_EQ(g.value(*g.find_value("d")).type, type(DType::Float32, {2, 3, 13, 11}));
}

}  // namespace
}  // namespace stax::ir
