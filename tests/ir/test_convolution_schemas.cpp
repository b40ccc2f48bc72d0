// Tests of the convolution schema (issue 15): ATen's parameter names and order, result types,
// the arguments as convolution_args reads them, and every refusal torch 2.13.0 makes (probed
// with torch.ops.aten.convolution.default on CPU; the torch message is in a comment), each
// message naming the op and the shapes; the text format prints and reparses a convolution
// with and without a bias; the builder makes the same node.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/convolution_args.h"
#include "ir/op_schema.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using testing::infer;
using testing::infer_error;
using testing::type;

// "convolution(x, w, BIAS, STRIDE, PADDING, DILATION, TRANSPOSED, OUTPUT_PADDING, GROUPS)".
std::string conv(const std::string& bias, const std::string& rest) {
  return "convolution(x, w, " + bias + ", " + rest + ")";
}

TEST(ConvolutionSchemaTest, AtenNamesAndOrder) {
  // torch.ops.aten.convolution.default._schema: convolution(Tensor input, Tensor weight,
  // Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed,
  // SymInt[] output_padding, SymInt groups). Only bias has a default here (None).
  const OpSchema* s = find_op_schema("convolution");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->category, OpCategory::Convolution);
  const std::vector<std::pair<std::string, ParamKind>> expected = {
      {"input", ParamKind::Tensor},        {"weight", ParamKind::Tensor},
      {"bias", ParamKind::OptionalTensor}, {"stride", ParamKind::IntList},
      {"padding", ParamKind::IntList},     {"dilation", ParamKind::IntList},
      {"transposed", ParamKind::Bool},     {"output_padding", ParamKind::IntList},
      {"groups", ParamKind::Int}};
  ASSERT_EQ(s->params.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(s->params[i].name, expected[i].first);
    EXPECT_EQ(s->params[i].kind, expected[i].second) << expected[i].first;
    EXPECT_FALSE(s->params[i].keyword_only);
    EXPECT_EQ(s->params[i].default_value.has_value(), i == 2) << expected[i].first;
  }
  EXPECT_EQ(*s->params[2].default_value, Arg(None{}));
}

TEST(ConvolutionSchemaTest, ResultTypes) {
  // 2-D, padded, with a bias: (7 + 2 - 3) / 1 + 1 = 7.
  EXPECT_EQ(infer("x: f32[2, 4, 7, 6], w: f32[6, 4, 3, 3], b: f32[6]",
                  conv("b", "[1, 1], [1, 1], [1, 1], False, [0, 0], 1")),
            type(DType::Float32, {2, 6, 7, 6}));
  // 1-D strided and dilated: (12 + 2 - 4 - 1) / 2 + 1 = 5; single values expand.
  EXPECT_EQ(
      infer("x: f64[2, 3, 12], w: f64[4, 3, 3]", conv("None", "[2], [1], [2], False, [0], 1")),
      type(DType::Float64, {2, 4, 5}));
  EXPECT_EQ(infer("x: f32[1, 3, 9, 9], w: f32[4, 3, 3, 3]", conv("None", "2, 1, 2, False, 0, 1")),
            type(DType::Float32, {1, 4, 4, 4}));
  // Groups and depthwise.
  EXPECT_EQ(infer("x: bf16[1, 4, 6, 6], w: bf16[6, 2, 3, 2]",
                  conv("None", "[1, 1], [0, 1], [1, 1], False, [0, 0], 2")),
            type(DType::BFloat16, {1, 6, 4, 7}));
  EXPECT_EQ(infer("x: f16[2, 5, 8, 8], w: f16[5, 1, 3, 3]",
                  conv("None", "[1, 1], [1, 1], [1, 1], False, [0, 0], 5")),
            type(DType::Float16, {2, 5, 8, 8}));
  // 3-D, per-dim parameters.
  EXPECT_EQ(infer("x: f32[1, 2, 5, 6, 4], w: f32[3, 2, 2, 3, 2]",
                  conv("None", "[1, 2, 1], [1, 0, 1], [1, 1, 1], False, [0, 0, 0], 1")),
            type(DType::Float32, {1, 3, 6, 2, 5}));
  // Transposed: (in - 1) stride - 2 padding + dilation (kernel - 1) + output_padding + 1, and
  // C_out = weight[1] * groups: (4 - 1) 2 - 2 + 2 + 1 + 1 = 8, (5 - 1) 3 + 2 + 2 + 1 = 17.
  EXPECT_EQ(infer("x: f32[2, 4, 4, 5], w: f32[4, 3, 3, 3], b: f32[6]",
                  conv("b", "[2, 3], [1, 0], [1, 1], True, [1, 2], 2")),
            type(DType::Float32, {2, 6, 8, 17}));
  // A forward convolution ignores output_padding (any non-negative value).
  EXPECT_EQ(infer("x: f32[1, 2, 5, 5], w: f32[2, 2, 3, 3]",
                  conv("None", "[1, 1], [0, 0], [1, 1], False, [3, 1], 1")),
            type(DType::Float32, {1, 2, 3, 3}));
  // The padded input may equal the dilated kernel: one output.
  EXPECT_EQ(infer("x: f32[2, 4, 1, 1], w: f32[6, 4, 3, 3]",
                  conv("None", "[1, 1], [1, 1], [1, 1], False, [0, 0], 1")),
            type(DType::Float32, {2, 6, 1, 1}));
  // Strided operands: the result is contiguous.
  EXPECT_EQ(infer("x: f32[1, 4, 6, 6] strides=[144, 1, 24, 4], w: f32[6, 2, 3, 2]",
                  conv("None", "[1, 1], [0, 1], [1, 1], False, [0, 0], 2")),
            type(DType::Float32, {1, 6, 4, 7}));
}

TEST(ConvolutionSchemaTest, DtypesEagerImplements) {
  // Every floating dtype and int64, forward and transposed, dilated or not.
  for (const char* d : {"f16", "bf16", "f32", "f64", "i64"}) {
    const std::string t = d;
    EXPECT_EQ(infer("x: " + t + "[2, 4, 6], w: " + t + "[4, 2, 3]",
                    conv("None", "[1], [0], [2], True, [0], 2"))
                  .dtype,
              *parse_dtype(d))
        << d;
  }
  // The narrower integers forward and undilated (slow_conv2d/3d implement them).
  for (const char* d : {"u8", "i8", "i16", "i32"}) {
    const std::string t = d;
    EXPECT_EQ(infer("x: " + t + "[2, 4, 6, 6, 6], w: " + t + "[4, 2, 3, 3, 3], b: " + t + "[4]",
                    conv("b", "[2], [1], [1], False, [0], 2")),
              type(*parse_dtype(d), {2, 4, 3, 3, 3}))
        << d;
  }
  // torch: "slow_conv_transpose2d_out_cpu" not implemented for 'Int'.
  EXPECT_EQ(
      infer_error("x: i32[2, 4, 6], w: i32[4, 2, 3]", conv("None", "[1], [0], [1], True, [0], 1")),
      "convolution: a transposed convolution is not implemented for i32 (PyTorch's "
      "slow_conv_transpose takes floating dtypes and i64 only)");
  // torch: "slow_conv_dilated<>" not implemented for 'Char'.
  EXPECT_EQ(infer_error("x: i8[2, 4, 6, 6], w: i8[4, 4, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 2], False, [0, 0], 1")),
            "convolution: a dilated convolution (dilation [1, 2]) is not implemented for i8 "
            "(PyTorch's slow_conv_dilated takes floating dtypes and i64 only)");
  // torch: "slow_conv2d_cpu" not implemented for 'Bool'.
  EXPECT_EQ(infer_error("x: bool[2, 4, 6, 6], w: bool[4, 4, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: bool is not supported (PyTorch implements convolution for floating "
            "dtypes and integers only): input bool[2, 4, 6, 6]");
  // An empty input takes PyTorch's empty-input path, which computes nothing: every dtype.
  EXPECT_EQ(infer("x: bool[0, 4, 6, 6], w: bool[4, 4, 3, 3], b: bool[4]",
                  conv("b", "[1, 1], [0, 0], [1, 1], True, [0, 0], 1")),
            type(DType::Bool, {0, 4, 8, 8}));
  EXPECT_EQ(infer("x: i32[0, 4, 9], w: i32[6, 4, 3]", conv("None", "[1], [0], [2], False, [0], 1")),
            type(DType::Int32, {0, 6, 5}));
  // ... except a bool input with no channels and a bias. torch: "result type Long can't be
  // cast to the desired output type Bool".
  EXPECT_EQ(infer_error("x: bool[2, 0, 5, 5], w: bool[6, 0, 3, 3], b: bool[6]",
                        conv("b", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: a bool input with no channels and a bias is not supported (PyTorch "
            "adds the bias as i64 and cannot cast the result back to bool)");
}

TEST(ConvolutionSchemaTest, EmptyInputs) {
  // A batch of 0: an empty result of the usual sizes (forward and transposed), even with an
  // output_padding that a non-empty input could not take.
  EXPECT_EQ(infer("x: f32[0, 4, 5, 5], w: f32[6, 4, 3, 3], b: f32[6]",
                  conv("b", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            type(DType::Float32, {0, 6, 3, 3}));
  EXPECT_EQ(infer("x: f32[0, 4, 5, 5], w: f32[4, 3, 3, 3]",
                  conv("None", "[2, 2], [1, 1], [1, 1], True, [3, 3], 1")),
            type(DType::Float32, {0, 3, 12, 12}));
  // A transposed output of 0 on an empty batch (torch computes it; only negative sizes fail).
  EXPECT_EQ(infer("x: f32[0, 4, 2, 2], w: f32[4, 3, 1, 1]",
                  conv("None", "[1, 1], [1, 1], [1, 1], True, [0, 0], 1")),
            type(DType::Float32, {0, 3, 0, 0}));
  // A spatial dim of 0 with a batch of 0, padded to hold the kernel.
  EXPECT_EQ(infer("x: f32[0, 4, 0, 5], w: f32[6, 4, 1, 1]",
                  conv("None", "[1, 1], [1, 0], [1, 1], False, [0, 0], 1")),
            type(DType::Float32, {0, 6, 2, 5}));
  // No input channels: PyTorch's result has no channels either (whatever C_out and groups).
  EXPECT_EQ(infer("x: f32[2, 0, 5, 5], w: f32[6, 0, 3, 3], b: f32[6]",
                  conv("b", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            type(DType::Float32, {2, 0, 3, 3}));
  EXPECT_EQ(infer("x: f32[2, 0, 9], w: f32[4, 0, 3]", conv("None", "[1], [0], [1], False, [0], 2")),
            type(DType::Float32, {2, 0, 7}));
  // torch: "Only zero batch or zero channel inputs are supported, but got input shape:
  // [2, 4, 0, 5]".
  EXPECT_EQ(infer_error("x: f32[2, 4, 0, 5], w: f32[6, 4, 1, 1]",
                        conv("None", "[1, 1], [1, 0], [1, 1], False, [0, 0], 1")),
            "convolution: only zero batch or zero channel inputs are supported, but got input "
            "shape: [2, 4, 0, 5]");
  EXPECT_EQ(infer_error("x: f64[2, 4, 0, 3], w: f64[4, 3, 2, 2]",
                        conv("None", "[1, 1], [0, 0], [1, 1], True, [0, 0], 1")),
            "convolution: only zero batch or zero channel inputs are supported, but got input "
            "shape: [2, 4, 0, 3]");
}

TEST(ConvolutionSchemaTest, ArgumentsAsConvolutionArgsReadsThem) {
  const Graph g = testing::one_statement("x: f32[2, 4, 4, 5], w: f32[4, 3, 3, 2], b: f32[6]",
                                         conv("b", "[2], [1, 0], [1, 2], True, [1, 0], 2"));
  const ConvolutionArgs a = convolution_args(g, g.nodes().at(0));
  EXPECT_EQ(a.input, *g.find_value("x"));
  EXPECT_EQ(a.weight, *g.find_value("w"));
  EXPECT_EQ(a.bias, g.find_value("b"));
  EXPECT_EQ(a.dtype, DType::Float32);
  EXPECT_EQ(a.input_sizes, (std::vector<int64_t>{2, 4, 4, 5}));
  EXPECT_EQ(a.weight_sizes, (std::vector<int64_t>{4, 3, 3, 2}));
  EXPECT_EQ(a.stride, (std::vector<int64_t>{2, 2}));  // expanded
  EXPECT_EQ(a.padding, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(a.dilation, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.output_padding, (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(a.transposed);
  EXPECT_EQ(a.groups, 2);
  EXPECT_EQ(a.spatial_dims(), 2u);
  EXPECT_EQ(a.out_channels(), 6);
  // (4 - 1) 2 - 2 + 2 + 1 + 1 = 8; (5 - 1) 2 - 0 + 2 + 0 + 1 = 11.
  EXPECT_EQ(a.result_sizes(), (std::vector<int64_t>{2, 6, 8, 11}));
  EXPECT_EQ(a.products_per_output(), 2 * 3 * 2);
  const Graph h = testing::one_statement("x: f64[3, 6, 10], w: f64[8, 3, 5]",
                                         conv("None", "[3], [2], [1], False, [0], 2"));
  const ConvolutionArgs f = convolution_args(h, h.nodes().at(0));
  EXPECT_FALSE(f.bias.has_value());
  EXPECT_FALSE(f.transposed);
  EXPECT_EQ(f.spatial_dims(), 1u);
  EXPECT_EQ(f.out_channels(), 8);
  EXPECT_EQ(f.result_sizes(), (std::vector<int64_t>{3, 8, 4}));  // (10 + 4 - 5) / 3 + 1
  EXPECT_EQ(f.products_per_output(), 3 * 5);
}

TEST(ConvolutionSchemaTest, RefusesMixedDtypes) {
  // torch: "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the
  // same ...", and the same for the bias.
  EXPECT_EQ(infer_error("x: f32[2, 4, 5, 5], w: f64[6, 4, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: expected input, weight and bias to have the same dtype, but got input "
            "f32[2, 4, 5, 5], weight f64[6, 4, 3, 3]");
  EXPECT_EQ(infer_error("x: bf16[2, 4, 5, 5], w: bf16[6, 4, 3, 3], b: f32[6]",
                        conv("b", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: expected input, weight and bias to have the same dtype, but got input "
            "bf16[2, 4, 5, 5], weight bf16[6, 4, 3, 3], bias f32[6]");
}

TEST(ConvolutionSchemaTest, RefusesWrongRanks) {
  // torch: "weight should have at least three dimensions".
  EXPECT_EQ(infer_error("x: f32[2, 4], w: f32[6, 4]", conv("None", "[1], [0], [1], False, [0], 1")),
            "convolution: weight should have at least three dimensions ([C_out, C_in/groups, "
            "kernel...]), got weight of size [6, 4]");
  // torch: "unsupported ConvNd parameters".
  EXPECT_EQ(infer_error("x: f32[1, 2, 3, 3, 3, 3], w: f32[2, 2, 1, 1, 1, 1]",
                        conv("None", "[1], [0], [1], False, [0], 1")),
            "convolution: weight of size [2, 2, 1, 1, 1, 1] has 4 spatial dims; PyTorch "
            "implements 1-, 2- and 3-D convolutions only");
  // torch: "Expected 4-dimensional input for 4-dimensional weight [6, 4, 3, 3], but got
  // 3-dimensional input of size [4, 5, 5] instead" (aten.convolution takes no unbatched input).
  EXPECT_EQ(infer_error("x: f32[4, 5, 5], w: f32[6, 4, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: expected 4-dimensional input for 4-dimensional weight [6, 4, 3, 3], but "
            "got 3-dimensional input of size [4, 5, 5] instead (the input needs a batch dim: [N, "
            "C_in, spatial...])");
  EXPECT_EQ(
      infer_error("x: f32[4, 5], w: f32[6, 4, 3]", conv("None", "[1], [0], [1], False, [0], 1")),
      "convolution: expected 3-dimensional input for 3-dimensional weight [6, 4, 3], but "
      "got 2-dimensional input of size [4, 5] instead (the input needs a batch dim: [N, "
      "C_in, spatial...])");
}

TEST(ConvolutionSchemaTest, RefusesParameterLists) {
  const std::string in = "x: f32[2, 4, 5, 5], w: f32[6, 4, 3, 3]";
  // torch: "expected stride to be a single integer value or a list of 2 values to match the
  // convolution dimensions, but got stride=[2, 2, 2]" (also for [], and for the others).
  EXPECT_EQ(infer_error(in, conv("None", "[2, 2, 2], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: expected stride to be a single integer value or a list of 2 values to "
            "match the convolution dimensions, but got stride=[2, 2, 2]");
  EXPECT_EQ(infer_error(in, conv("None", "[1, 1], [], [1, 1], False, [0, 0], 1")),
            "convolution: expected padding to be a single integer value or a list of 2 values to "
            "match the convolution dimensions, but got padding=[]");
  EXPECT_EQ(infer_error(in, conv("None", "[1, 1], [0, 0], [1, 1, 1], False, [0, 0], 1")),
            "convolution: expected dilation to be a single integer value or a list of 2 values to "
            "match the convolution dimensions, but got dilation=[1, 1, 1]");
  EXPECT_EQ(infer_error(in, conv("None", "[1, 1], [0, 0], [1, 1], False, [], 1")),
            "convolution: expected output_padding to be a single integer value or a list of 2 "
            "values to match the convolution dimensions, but got output_padding=[]");
  EXPECT_EQ(infer_error("x: f32[2, 4, 5], w: f32[6, 4, 3]",
                        conv("None", "[1, 1], [0], [1], False, [0], 1")),
            "convolution: expected stride to be a single integer value or a list of 1 value to "
            "match the convolution dimensions, but got stride=[1, 1]");
  // torch: "negative padding is not supported", "negative output_padding is not supported"
  // (checked for a forward convolution too), "non-positive stride is not supported",
  // "non-positive dilation is not supported", "non-positive groups is not supported".
  EXPECT_EQ(infer_error(in, conv("None", "[1, 1], [-1, 0], [1, 1], False, [0, 0], 1")),
            "convolution: negative padding is not supported, got padding=[-1, 0]");
  EXPECT_EQ(infer_error(in, conv("None", "[1, 1], [0, 0], [1, 1], False, [-1, -1], 1")),
            "convolution: negative output_padding is not supported, got output_padding=[-1, -1]");
  EXPECT_EQ(infer_error(in, conv("None", "[0, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: non-positive stride is not supported, got stride=[0, 1]");
  EXPECT_EQ(infer_error(in, conv("None", "[-1], [0], [1], False, [0], 1")),
            "convolution: non-positive stride is not supported, got stride=[-1, -1]");
  EXPECT_EQ(infer_error(in, conv("None", "[1, 1], [0, 0], [1, 0], False, [0, 0], 1")),
            "convolution: non-positive dilation is not supported, got dilation=[1, 0]");
  EXPECT_EQ(infer_error(in, conv("None", "[1, 1], [0, 0], [-1, 1], False, [0, 0], 1")),
            "convolution: non-positive dilation is not supported, got dilation=[-1, 1]");
  EXPECT_EQ(infer_error(in, conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], 0")),
            "convolution: non-positive groups is not supported, got groups=0");
  EXPECT_EQ(infer_error(in, conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], -1")),
            "convolution: non-positive groups is not supported, got groups=-1");
}

TEST(ConvolutionSchemaTest, RefusesChannelsGroupsAndBias) {
  // torch: "Given groups=1, weight of size [6, 4, 3, 3], expected input[2, 5, 5, 5] to have 4
  // channels, but got 5 channels instead".
  EXPECT_EQ(infer_error("x: f32[2, 5, 5, 5], w: f32[6, 4, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: given groups=1, weight of size [6, 4, 3, 3], expected input[2, 5, 5, 5] "
            "to have 4 channels, but got 5 channels instead");
  EXPECT_EQ(infer_error("x: f32[2, 4, 5, 5], w: f32[6, 4, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], 2")),
            "convolution: given groups=2, weight of size [6, 4, 3, 3], expected input[2, 4, 5, 5] "
            "to have 8 channels, but got 4 channels instead");
  // torch: "Given transposed=1, weight of size [4, 3, 3, 3], expected input[2, 5, 5, 5] to
  // have 4 channels, but got 5 channels instead".
  EXPECT_EQ(infer_error("x: f32[2, 5, 5, 5], w: f32[4, 3, 3, 3]",
                        conv("None", "[2, 2], [1, 1], [1, 1], True, [1, 1], 1")),
            "convolution: given groups=1, transposed, weight of size [4, 3, 3, 3], expected "
            "input[2, 5, 5, 5] to have 4 channels, but got 5 channels instead");
  // torch: "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got
  // weight of size [[5, 2, 3, 3]] instead" (transposed: the input channels).
  EXPECT_EQ(infer_error("x: f32[2, 4, 5, 5], w: f32[5, 2, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], 2")),
            "convolution: given groups=2, expected weight to be divisible by 2 at dimension 0, "
            "but got weight of size [5, 2, 3, 3] instead");
  EXPECT_EQ(infer_error("x: f32[2, 3, 5, 5], w: f32[3, 3, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], True, [0, 0], 2")),
            "convolution: given groups=2, expected weight to be divisible by 2 at dimension 0, "
            "but got weight of size [3, 3, 3, 3] instead");
  // torch: "Given groups=4, expected weight to be at least 4 at dimension 0, but got weight
  // of size [2, 1, 3] instead", and C_out = 0 ("at least 1").
  EXPECT_EQ(
      infer_error("x: f32[2, 4, 9], w: f32[2, 1, 3]", conv("None", "[1], [0], [1], False, [0], 4")),
      "convolution: given groups=4, expected weight to be at least 4 at dimension 0, but "
      "got weight of size [2, 1, 3] instead");
  EXPECT_EQ(infer_error("x: f32[2, 4, 5, 5], w: f32[0, 4, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: given groups=1, expected weight to be at least 1 at dimension 0, but "
            "got weight of size [0, 4, 3, 3] instead");
  // A transposed convolution of an input with no channels has a weight of 0 rows.
  EXPECT_EQ(infer_error("x: f32[2, 0, 5, 5], w: f32[0, 6, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], True, [0, 0], 1")),
            "convolution: given groups=1, expected weight to be at least 1 at dimension 0, but "
            "got weight of size [0, 6, 3, 3] instead");
  // torch: "Given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional with 6
  // elements, but got bias of size [5] instead" (transposed: weight[1] * groups elements).
  EXPECT_EQ(infer_error("x: f32[2, 4, 5, 5], w: f32[6, 4, 3, 3], b: f32[5]",
                        conv("b", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional "
            "with 6 elements, but got bias of size [5] instead");
  EXPECT_EQ(infer_error("x: f32[2, 4, 5, 5], w: f32[6, 4, 3, 3], b: f32[6, 1]",
                        conv("b", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional "
            "with 6 elements, but got bias of size [6, 1] instead");
  EXPECT_EQ(infer_error("x: f32[2, 4, 5, 5], w: f32[4, 3, 3, 3], b: f32[3]",
                        conv("b", "[2, 2], [1, 1], [1, 1], True, [1, 1], 2")),
            "convolution: given transposed, weight of size [4, 3, 3, 3], expected bias to be "
            "1-dimensional with 6 elements, but got bias of size [3] instead");
  EXPECT_EQ(infer_error("x: f32[2, 4, 5, 5], w: f32[6, 4, 3, 3], b: f32[]",
                        conv("b", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional "
            "with 6 elements, but got bias of size [] instead");
}

TEST(ConvolutionSchemaTest, RefusesKernelsAndOutputSizes) {
  // torch: "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel
  // size can't be greater than actual input size" (the dilated kernel; also for a batch of 0).
  EXPECT_EQ(infer_error("x: f32[2, 4, 2, 2], w: f32[6, 4, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: calculated padded input size per channel: (2 x 2). Kernel size: (3 x "
            "3). Kernel size can't be greater than actual input size (input [2, 4, 2, 2], weight "
            "[6, 4, 3, 3], padding [0, 0], dilation [1, 1])");
  EXPECT_EQ(infer_error("x: f32[0, 4, 5, 5], w: f32[6, 4, 3, 3]",
                        conv("None", "[1, 1], [0, 0], [3, 3], False, [0, 0], 1")),
            "convolution: calculated padded input size per channel: (5 x 5). Kernel size: (7 x "
            "7). Kernel size can't be greater than actual input size (input [0, 4, 5, 5], weight "
            "[6, 4, 3, 3], padding [0, 0], dilation [3, 3])");
  // torch: "kernel size should be greater than zero, but got kernel_height: 0 kernel_width:
  // 3" (oneDNN: "could not create a primitive descriptor"; an empty batch: an IndexError).
  EXPECT_EQ(infer_error("x: f32[2, 4, 5, 5], w: f32[6, 4, 0, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], False, [0, 0], 1")),
            "convolution: kernel size should be greater than zero, but got kernel size (0 x 3) "
            "(weight of size [6, 4, 0, 3])");
  EXPECT_EQ(infer_error("x: f64[2, 4, 5, 5], w: f64[4, 6, 0, 3]",
                        conv("None", "[1, 1], [0, 0], [1, 1], True, [0, 0], 1")),
            "convolution: kernel size should be greater than zero, but got kernel size (0 x 3) "
            "(weight of size [4, 6, 0, 3])");
  // torch: "output padding must be smaller than either stride or dilation, but got
  // output_padding_height: 2 ...": below either one is accepted.
  EXPECT_EQ(infer_error("x: f32[2, 4, 5, 5], w: f32[4, 3, 3, 3]",
                        conv("None", "[2, 2], [1, 1], [1, 1], True, [2, 0], 1")),
            "convolution: output padding must be smaller than either stride or dilation, but got "
            "output_padding=[2, 0], stride=[2, 2], dilation=[1, 1] (spatial dim 0)");
  EXPECT_EQ(infer("x: f32[2, 4, 5, 5], w: f32[4, 3, 3, 3]",
                  conv("None", "[1, 1], [1, 1], [2, 2], True, [1, 0], 1")),
            type(DType::Float32, {2, 3, 8, 7}));
  // torch: "Given input size per channel: (2 x 2). Calculated output size per channel: (0 x
  // 0). Output size is too small" (oneDNN's float32 path takes 0 for batches of 2 or more;
  // the slow path and the meta function refuse it).
  EXPECT_EQ(infer_error("x: f32[2, 4, 2, 2], w: f32[4, 3, 1, 1]",
                        conv("None", "[1, 1], [1, 1], [1, 1], True, [0, 0], 1")),
            "convolution: given input size per channel: (2 x 2). Calculated output size per "
            "channel: (0 x 0). Output size is too small (transposed, weight of size [4, 3, 1, "
            "1], stride [1, 1], padding [1, 1], dilation [1, 1], output_padding [0, 0])");
  EXPECT_EQ(infer_error("x: f32[0, 4, 1, 1], w: f32[4, 3, 1, 1]",
                        conv("None", "[1, 1], [1, 1], [1, 1], True, [0, 0], 1")),
            "convolution: given input size per channel: (1 x 1). Calculated output size per "
            "channel: (-1 x -1). Output size is too small (transposed, weight of size [4, 3, 1, "
            "1], stride [1, 1], padding [1, 1], dilation [1, 1], output_padding [0, 0])");
  // Sizes beyond int64.
  EXPECT_EQ(infer_error("x: f32[1, 1, 2], w: f32[1, 1, 2]",
                        conv("None", "[1], [4611686018427387904], [1], False, [0], 1")),
            "convolution: the padded input size overflows int64");
}

TEST(ConvolutionSchemaTest, ArgumentKinds) {
  // The bias is a tensor or None; a scalar is refused.
  EXPECT_EQ(
      infer_error("x: f32[2, 4, 5], w: f32[6, 4, 3]", conv("1.5", "[1], [0], [1], False, [0], 1")),
      "convolution: argument 'bias' expects a tensor or None, got a float scalar");
  // Every other parameter is required.
  EXPECT_EQ(infer_error("x: f32[2, 4, 5], w: f32[6, 4, 3]", "convolution(x, w)"),
            "convolution: missing required argument 'stride'");
  // The bias may be left out or given by keyword.
  EXPECT_EQ(infer("x: f32[2, 4, 5], w: f32[6, 4, 3], b: f32[6]",
                  "convolution(x, w, stride=[1], padding=[0], dilation=[1], transposed=False, "
                  "output_padding=[0], groups=1, bias=b)"),
            type(DType::Float32, {2, 6, 3}));
}

TEST(ConvolutionSchemaTest, TextFormatRoundTrip) {
  const Graph g = parse_graph(
      R"(def t(x: f32[2, 4, 7, 6], w: f32[6, 4, 3, 3], b: f32[6], v: f32[4, 3, 3, 3]):
    c = convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    d = convolution(x, w, b, [2, 1], [0, 1], [1, 2], False, [0, 0], 1)
    e = convolution(x, v, b, 2, 1, 1, True, 1, 2)
    return c, d, e
)");
  const std::string text = print_graph(g);
  // None is the bias's default, so it is left out and the rest follow by keyword.
  EXPECT_NE(text.find("c = convolution(x, w, stride=[1, 1], padding=[1, 1], dilation=[1, 1], "
                      "transposed=False, output_padding=[0, 0], groups=1)\n"),
            std::string::npos)
      << text;
  // A single value stays as written (convolution_args expands it).
  EXPECT_NE(text.find("e = convolution(x, v, bias=b, stride=[2], padding=[1], dilation=[1], "
                      "transposed=True, output_padding=[1], groups=2)\n"),
            std::string::npos)
      << text;
  const Graph h = parse_graph(text);
  EXPECT_EQ(h, g);
  EXPECT_EQ(print_graph(h), text);
  EXPECT_EQ(g.nodes().at(0).args.at(2), Arg(None{}));
  EXPECT_EQ(g.value(*g.find_value("e")).type, type(DType::Float32, {2, 6, 14, 12}));
}

TEST(ConvolutionSchemaTest, BuilderMakesTheSameNode) {
  Graph built("t");
  const Val x = ops::input(built, "x", DType::Float32, {2, 4, 7, 6});
  const Val w = ops::input(built, "w", DType::Float32, {6, 4, 3, 3});
  const Val b = ops::input(built, "b", DType::Float32, {6});
  const Val c = ops::convolution(x, w, std::nullopt, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
  const Val d = ops::convolution(x, w, b, {2, 1}, {0, 1}, {1, 2}, false, {0, 0}, 1);
  EXPECT_EQ(c.type(), type(DType::Float32, {2, 6, 7, 6}));
  EXPECT_EQ(d.type(), type(DType::Float32, {2, 6, 3, 4}));
  ops::output(built, {c, d});
  const Graph parsed = parse_graph(
      R"(def t(x: f32[2, 4, 7, 6], w: f32[6, 4, 3, 3], b: f32[6]):
    v0 = convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    v1 = convolution(x, w, b, [2, 1], [0, 1], [1, 2], False, [0, 0], 1)
    return v0, v1
)");
  EXPECT_EQ(built, parsed);
  // Refusals reach the builder's caller as GraphError.
  EXPECT_THROW(ops::convolution(x, w, b, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 2), GraphError);
}

}  // namespace
}  // namespace stax::ir
