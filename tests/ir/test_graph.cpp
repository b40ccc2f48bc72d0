// Tests of Graph construction: argument binding and kind conversion in add_node, value naming,
// structural equality, Scalar equality, strides, and the op registry and its helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/op_schema.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using testing::type;

std::string add_node_error(Graph& g, const std::string& op, std::vector<Arg> args,
                           std::vector<std::pair<std::string, Arg>> kwargs = {},
                           const std::string& name = "") {
  try {
    g.add_node(op, std::move(args), std::move(kwargs), name);
  } catch (const GraphError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(TensorTypeTest, NumelAndContiguousStrides) {
  EXPECT_EQ(type(DType::Float32, {2, 3, 4}).numel(), 24);
  EXPECT_EQ(type(DType::Float32, {}).numel(), 1);
  EXPECT_EQ(type(DType::Float32, {2, 0}).numel(), 0);
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({}), (std::vector<int64_t>{}));
  EXPECT_EQ(contiguous_strides({2, 0, 3}), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(contiguous_strides({5, 1}), (std::vector<int64_t>{1, 1}));
}

TEST(ScalarTest, EqualityTreatsNanAsEqualAndKeepsKindAndSign) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ((Scalar(nan)), (Scalar(-nan)));
  EXPECT_NE((Scalar(nan)), (Scalar(1.0)));
  EXPECT_NE((Scalar(2.0)), (Scalar(int64_t{2})));
  EXPECT_NE((Scalar(0.0)), (Scalar(-0.0)));
  EXPECT_EQ((Scalar(true)), (Scalar(true)));
}

TEST(GraphTest, InputsGetContiguousStridesUnlessGiven) {
  Graph g("g");
  ValueRef x = g.add_input("x", DType::Float32, {4, 8});
  ValueRef w = g.add_input("w", DType::BFloat16, {4, 8}, std::vector<int64_t>{1, 4});
  EXPECT_EQ(g.value(x).type.strides, (std::vector<int64_t>{8, 1}));
  EXPECT_EQ(g.value(w).type.strides, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(g.value(w).producer, -1);
  EXPECT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.find_value("w")->index, w.index);
  EXPECT_FALSE(g.find_value("nope"));
}

TEST(GraphTest, InputErrors) {
  Graph g("g");
  g.add_input("x", DType::Float32, {4});
  auto error = [&](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const GraphError& e) {
      return e.what();
    }
    return "<no error>";
  };
  EXPECT_EQ(error([&] { g.add_input("x", DType::Float32, {4}); }),
            "input: duplicate value name 'x'");
  EXPECT_EQ(error([&] {
              g.add_input("y", DType::Float32, {4, 2}, std::vector<int64_t>{1});
            }),
            "input 'y': strides [1] must have 2 entries, one per dim of sizes [4, 2]");
  EXPECT_EQ(error([&] { g.add_input("z", DType::Float32, {-1}); }),
            "input 'z': sizes [-1] must not be negative");
  EXPECT_EQ(error([&] { g.add_input("1x", DType::Float32, {1}); }),
            "input: invalid value name '1x' (expected an identifier)");
  EXPECT_EQ(error([&] { g.add_input("None", DType::Float32, {1}); }),
            "input: invalid value name 'None' (expected an identifier)");
  EXPECT_EQ(error([] { Graph bad("my graph"); }),
            "invalid graph name 'my graph' (expected an identifier)");
}

TEST(GraphTest, AddNodeBindsFillsDefaultsAndInfers) {
  Graph g("g");
  ValueRef x = g.add_input("x", DType::Float32, {4, 8});
  ValueRef s = g.add_node("sum", {x}, {{"keepdim", true}, {"dim", int64_t{-1}}}, "s");
  const Node& node = g.nodes().at(0);
  EXPECT_EQ(node.op, "sum");
  ASSERT_EQ(node.args.size(), 4u);
  EXPECT_EQ(node.args[1], Arg(std::vector<int64_t>{-1}));  // single int wrapped
  EXPECT_EQ(node.args[2], Arg(true));
  EXPECT_EQ(node.args[3], Arg(None{}));  // default filled
  EXPECT_EQ(node.output.index, s.index);
  EXPECT_EQ(g.value(s).name, "s");
  EXPECT_EQ(g.value(s).producer, 0);
  EXPECT_EQ(g.value(s).type, type(DType::Float32, {4, 1}));
}

TEST(GraphTest, ScalarConversions) {
  Graph g("g");
  ValueRef x = g.add_input("x", DType::Float32, {4});
  g.add_node("add", {x, int64_t{2}});
  g.add_node("add", {x, true});
  g.add_node("add", {int64_t{3}, x}, {{"alpha", Scalar(2.5)}});
  g.add_node("transpose",
             {g.add_node("unsqueeze", {x, Scalar(int64_t{0})}), int64_t{0}, int64_t{1}});
  EXPECT_EQ(g.nodes()[0].args[1], Arg(Scalar(int64_t{2})));
  EXPECT_EQ(g.nodes()[0].args[2], Arg(Scalar(int64_t{1})));  // default alpha=1
  EXPECT_EQ(g.nodes()[1].args[1], Arg(Scalar(true)));
  EXPECT_EQ(g.nodes()[2].args[0], Arg(Scalar(int64_t{3})));
  EXPECT_EQ(g.nodes()[3].args[1], Arg(int64_t{0}));  // an Int Scalar for an int param
  // A dtype name is canonicalized.
  g.add_node("sum", {x}, {{"dtype", std::string("float64")}});
  EXPECT_EQ(g.nodes().back().args[3], Arg(std::string("f64")));
  EXPECT_EQ(g.values().back().type.dtype, DType::Float64);
}

TEST(GraphTest, BindingErrors) {
  Graph g("g");
  ValueRef x = g.add_input("x", DType::Float32, {4, 8});
  EXPECT_EQ(add_node_error(g, "softmax", {x}), "unknown op 'softmax'");
  EXPECT_EQ(add_node_error(g, "add", {x, x, Scalar{}}),
            "add: takes at most 2 positional arguments but 3 were given");
  EXPECT_EQ(add_node_error(g, "exp", {x, x}),
            "exp: takes at most 1 positional argument but 2 were given");
  EXPECT_EQ(add_node_error(g, "sum", {x}, {{"axis", int64_t{0}}}),
            "sum: unexpected keyword argument 'axis'");
  EXPECT_EQ(add_node_error(g, "sum", {x, int64_t{0}}, {{"dim", int64_t{1}}}),
            "sum: got multiple values for argument 'dim'");
  EXPECT_EQ(add_node_error(g, "mul", {x}), "mul: missing required argument 'other'");
  EXPECT_EQ(add_node_error(g, "add", {x, x}, {{"alpha", x}}),
            "add: argument 'alpha' expects a scalar, got a tensor");
  EXPECT_EQ(add_node_error(g, "exp", {Scalar{}}),
            "exp: argument 'self' expects a tensor, got a float scalar");
  EXPECT_EQ(add_node_error(g, "transpose", {x, Scalar(1.0), int64_t{0}}),
            "transpose: argument 'dim0' expects an int, got a float scalar");
  EXPECT_EQ(add_node_error(g, "sum", {x, std::string("0")}),
            "sum: argument 'dim' expects an int list or None, got a string");
  EXPECT_EQ(add_node_error(g, "sum", {x}, {{"dtype", std::string("f33")}}),
            "sum: argument 'dtype': unknown dtype 'f33'");
  EXPECT_EQ(add_node_error(g, "exp", {ValueRef{7}}),
            "exp: argument 'self': value reference 7 does not belong to graph 'g'");
  // (An int scalar holds an int64 exactly: a non-integral int is no longer representable.)
  EXPECT_EQ(add_node_error(g, "transpose", {x, Scalar(true), int64_t{0}}),
            "transpose: argument 'dim0' expects an int, got a bool scalar");
  EXPECT_EQ(add_node_error(g, "exp", {x}, {}, "x"), "exp: duplicate value name 'x'");
  EXPECT_EQ(add_node_error(g, "exp", {x}, {}, "a-b"),
            "exp: invalid value name 'a-b' (expected an identifier)");
  // Nothing was added by the failed calls.
  EXPECT_TRUE(g.nodes().empty());
  EXPECT_EQ(g.values().size(), 1u);
}

TEST(GraphTest, FreshNamesAvoidCollisions) {
  Graph g("g");
  ValueRef x = g.add_input("v1", DType::Float32, {4});
  ValueRef a = g.add_node("exp", {x});
  ValueRef b = g.add_node("exp", {a});
  ValueRef c = g.add_node("exp", {b}, {}, "v3");
  ValueRef d = g.add_node("exp", {c});
  EXPECT_EQ(g.value(a).name, "v0");
  EXPECT_EQ(g.value(b).name, "v2");  // v1 is the input
  EXPECT_EQ(g.value(d).name, "v4");  // v3 was taken by name
}

TEST(GraphTest, SetOutputsValidates) {
  Graph g("g");
  ValueRef x = g.add_input("x", DType::Float32, {4});
  EXPECT_THROW(g.set_outputs({}), GraphError);
  EXPECT_THROW(g.set_outputs({ValueRef{3}}), GraphError);
  g.set_outputs({x, x});
  EXPECT_EQ(g.outputs().size(), 2u);
}

TEST(GraphTest, StructuralEquality) {
  auto build = [](double alpha, const char* out_name, DType dtype) {
    Graph g("g");
    ValueRef x = g.add_input("x", dtype, {4});
    ValueRef y = g.add_node("add", {x, x}, {{"alpha", Scalar(alpha)}}, out_name);
    g.set_outputs({y});
    return g;
  };
  EXPECT_EQ(build(0.5, "y", DType::Float32), build(0.5, "y", DType::Float32));
  EXPECT_EQ(build(NAN, "y", DType::Float32), build(NAN, "y", DType::Float32));
  EXPECT_FALSE(build(0.5, "y", DType::Float32) == build(0.25, "y", DType::Float32));
  EXPECT_FALSE(build(0.5, "y", DType::Float32) == build(0.5, "z", DType::Float32));
  EXPECT_FALSE(build(0.5, "y", DType::Float32) == build(0.5, "y", DType::Float64));
  EXPECT_FALSE(Graph("a") == Graph("b"));
}

TEST(OpRegistryTest, AllOpsRegisteredWithCategories) {
  const std::vector<std::string> expected = {
      "add", "sub", "mul", "div", "maximum", "minimum", "gt", "lt", "ge", "le", "eq", "ne", "neg",
      "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "pow", "where", "sum",
      "mean", "amax", "amin", "reshape", "view", "permute", "transpose", "unsqueeze", "squeeze",
      "expand", "clone", "contiguous",
      // issue 6 reductions
      "prod", "argmax", "argmin", "any", "all", "var", "std", "var_mean", "logsumexp",
      // issue 6, point 6
      "slice", "select", "narrow", "split", "split_with_sizes", "as_strided", "cat", "stack",
      "constant_pad_nd", "flip", "roll", "slice_scatter", "select_scatter", "index_select",
      "gather", "embedding", "index",
      // the pointwise ops of issue 6
      "remainder", "fmod", "floor_divide", "fmax", "fmin", "atan2", "copysign", "hypot",
      "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
      "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "_to_copy",
      "convert_element_type", "exp2", "expm1", "log2", "log10", "log1p", "sin", "cos", "tan",
      "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv",
      "reciprocal", "floor", "ceil", "trunc", "sign", "round", "frac", "isnan", "isinf", "isfinite",
      "nan_to_num", "silu", "mish", "hardsigmoid", "hardswish", "gelu", "softplus", "leaky_relu",
      "elu", "hardtanh", "clamp", "clamp_min", "clamp_max", "lerp",
      // issue 7, point 3: factory ops
      "full", "zeros", "ones", "full_like", "zeros_like", "ones_like", "fill", "scalar_tensor",
      "arange", "iota",
      // issue 14, point 3: contractions
      "mm", "bmm", "addmm", "baddbmm",
      // issue 15: convolution
      "convolution", "convolution_backward",
      // pooling
      "max_pool2d_with_indices", "avg_pool2d", "_adaptive_avg_pool2d",
      "max_pool2d_with_indices_backward", "avg_pool2d_backward", "_adaptive_avg_pool2d_backward",
      // issue 15, point 4: scatters
      "index_put", "index_add", "scatter", "scatter_add", "scatter_reduce",
      // issue 15, point 1: attention
      "_scaled_dot_product_flash_attention_for_cpu",
      "_scaled_dot_product_flash_attention_for_cpu_backward",
      // the written-out attention (graph_passes/fuse_written_attention.h)
      "softmax_attention",
      // issue 16, point 7: scans
      "cumsum", "cumprod", "logcumsumexp", "cummax", "cummin",
      // issue 16, point 6: an input written in place
      "copy_"};
  std::vector<std::string> names = registered_op_names();
  for (const std::string& name : expected) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_EQ(names.size(), expected.size());
  EXPECT_EQ(find_op_schema("add")->category, OpCategory::Pointwise);
  EXPECT_EQ(find_op_schema("where")->category, OpCategory::Pointwise);
  EXPECT_EQ(find_op_schema("amin")->category, OpCategory::Reduction);
  EXPECT_EQ(find_op_schema("squeeze")->category, OpCategory::View);
  EXPECT_EQ(find_op_schema("expand")->category, OpCategory::View);
  EXPECT_EQ(find_op_schema("cummax")->category, OpCategory::Scan);
  EXPECT_EQ(find_op_schema("clone")->category, OpCategory::Copy);
  EXPECT_EQ(find_op_schema("contiguous")->category, OpCategory::Copy);
  EXPECT_EQ(find_op_schema("avg_pool2d")->category, OpCategory::Pooling);
  EXPECT_EQ(find_op_schema("scatter_add")->category, OpCategory::Scatter);
  EXPECT_EQ(find_op_schema("_scaled_dot_product_flash_attention_for_cpu")->category,
            OpCategory::Attention);
  EXPECT_EQ(find_op_schema("softmax"), nullptr);
}

TEST(OpRegistryTest, SchemasFollowAten) {
  auto signature = [](const char* op) {
    std::string text;
    for (const Param& p : find_op_schema(op)->params) {
      text += (p.keyword_only ? "*" : "") + p.name + (p.default_value ? "?" : "") + " ";
    }
    return text;
  };
  EXPECT_EQ(signature("add"), "self other *alpha? ");
  EXPECT_EQ(signature("div"), "self other *rounding_mode? ");
  EXPECT_EQ(signature("where"), "condition self other ");
  EXPECT_EQ(signature("pow"), "self exponent ");
  EXPECT_EQ(signature("sum"), "self dim? keepdim? *dtype? ");
  EXPECT_EQ(signature("amax"), "self dim? keepdim? ");
  EXPECT_EQ(signature("reshape"), "self shape ");
  EXPECT_EQ(signature("view"), "self size ");
  EXPECT_EQ(signature("permute"), "self dims ");
  EXPECT_EQ(signature("transpose"), "self dim0 dim1 ");
  EXPECT_EQ(signature("squeeze"), "self dim? ");
  EXPECT_EQ(signature("expand"), "self size *implicit? ");
  EXPECT_EQ(signature("clone"), "self *memory_format? ");
  EXPECT_EQ(signature("contiguous"), "self *memory_format? ");
  EXPECT_EQ(*find_op_schema("contiguous")->params[1].default_value,
            Arg(std::string("contiguous_format")));
  EXPECT_EQ(*find_op_schema("amax")->params[1].default_value, Arg(std::vector<int64_t>{}));
  EXPECT_EQ(find_op_schema("gt")->params[0].kind, ParamKind::Tensor);
  EXPECT_EQ(find_op_schema("gt")->params[1].kind, ParamKind::TensorOrScalar);
  EXPECT_EQ(find_op_schema("maximum")->params[1].kind, ParamKind::Tensor);
}

TEST(OpRegistryTest, ArgumentAccessors) {
  Graph g = testing::one_statement("x: f32[2, 3]", "sum(x, dim=[1], keepdim=True, dtype='f64')");
  const Node& n = g.nodes()[0];
  EXPECT_EQ(tensor_arg(g, n, 0).name, "x");
  EXPECT_TRUE(is_tensor_arg(n, 0));
  EXPECT_FALSE(is_tensor_arg(n, 1));
  EXPECT_EQ(int_list_arg(n, 1), (std::vector<int64_t>{1}));
  EXPECT_TRUE(bool_arg(n, 2));
  EXPECT_EQ(string_arg(n, 3), "f64");
  EXPECT_THROW(scalar_arg(n, 1), GraphError);
  EXPECT_THROW(int_arg(n, 0), GraphError);

  Graph h = testing::one_statement("x: f32[2, 3]", "add(x, 2, alpha=3)");
  EXPECT_EQ(scalar_arg(h.nodes()[0], 1), (Scalar(int64_t{2})));
  EXPECT_EQ(scalar_arg(h.nodes()[0], 2), (Scalar(int64_t{3})));
  Graph k = testing::one_statement("x: f32[2, 3]", "transpose(x, -1, 0)");
  EXPECT_EQ(int_arg(k.nodes()[0], 1), -1);
  Graph m = testing::one_statement("x: f32[2, 3]", "sum(x)");
  EXPECT_EQ(int_list_arg(m.nodes()[0], 1), std::nullopt);
  EXPECT_EQ(string_arg(m.nodes()[0], 3), std::nullopt);
}

TEST(OpRegistryTest, ShapeHelpers) {
  EXPECT_EQ(normalize_dim(-1, 3, "op"), 2);
  EXPECT_EQ(normalize_dim(0, 3, "op"), 0);
  try {
    normalize_dim(3, 3, "op");
    FAIL();
  } catch (const GraphError& e) {
    EXPECT_STREQ(e.what(),
                 "op: argument 'dim': dim 3 is out of range for a tensor of rank 3 (expected in "
                 "[-3, 2])");
  }
  EXPECT_THROW(normalize_dim(0, 0, "op"), GraphError);
  EXPECT_EQ(broadcast_sizes({2, 1, 3}, {4, 3}, "op"), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(broadcast_sizes({}, {5}, "op"), (std::vector<int64_t>{5}));
  EXPECT_EQ(broadcast_sizes({0, 1}, {1, 7}, "op"), (std::vector<int64_t>{0, 7}));
  EXPECT_THROW(broadcast_sizes({2}, {3}, "op"), GraphError);
  EXPECT_EQ(infer_reshape_sizes({4, 6}, {3, -1}, "op"), (std::vector<int64_t>{3, 8}));
  EXPECT_EQ(infer_reshape_sizes({}, {1, 1}, "op"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(infer_reshape_sizes({0, 4}, {4, 0}, "op"), (std::vector<int64_t>{4, 0}));
  EXPECT_THROW(infer_reshape_sizes({4, 6}, {5, -1}, "op"), GraphError);
  EXPECT_EQ(reduction_dims(std::nullopt, 3, "op"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(reduction_dims(std::vector<int64_t>{}, 2, "op"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(reduction_dims(std::vector<int64_t>{-1, 0, 2}, 3, "op"), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(reduction_dims(std::vector<int64_t>{-1}, 0, "op"), (std::vector<int64_t>{}));
  EXPECT_THROW(reduction_dims(std::vector<int64_t>{3}, 3, "op"), GraphError);
}

}  // namespace
}  // namespace stax::ir
