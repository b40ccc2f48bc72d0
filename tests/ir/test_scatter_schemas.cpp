// Tests of the scatter schemas (issue 15, point 4): ATen's parameter names, order and defaults
// for index_put, index_add, scatter (src or value) and scatter_add, the result type (self's),
// the arguments as scatter_args reads them, and every refusal of ir/scatter_args.cpp next to
// the message torch 2.13.0 gives for the same call (probed with torch.ops.aten.*.default on
// CPU; torch's message is in the comment), each naming the op; the text format prints and
// reparses them.
#include <gtest/gtest.h>

#include "ir/op_schema.h"
#include "ir/scatter_args.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using testing::infer;
using testing::infer_error;
using testing::type;

void expect_params(const char* op,
                   const std::vector<std::tuple<std::string, ParamKind, bool>>& expected,
                   const std::vector<std::optional<Arg>>& defaults) {
  const OpSchema* s = find_op_schema(op);
  ASSERT_NE(s, nullptr) << op;
  EXPECT_EQ(s->category, OpCategory::Scatter) << op;
  EXPECT_FALSE(static_cast<bool>(s->result_count)) << op;
  ASSERT_EQ(s->params.size(), expected.size()) << op;
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& [name, kind, keyword_only] = expected[i];
    EXPECT_EQ(s->params[i].name, name) << op;
    EXPECT_EQ(s->params[i].kind, kind) << op << " " << name;
    EXPECT_EQ(s->params[i].keyword_only, keyword_only) << op << " " << name;
    EXPECT_EQ(s->params[i].default_value, defaults[i]) << op << " " << name;
  }
}

TEST(ScatterSchemaTest, AtenNamesOrderAndDefaults) {
  using K = ParamKind;
  const std::nullopt_t req = std::nullopt;
  // aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False)
  expect_params("index_put",
                {{"self", K::Tensor, false},
                 {"indices", K::OptionalTensorList, false},
                 {"values", K::Tensor, false},
                 {"accumulate", K::Bool, false}},
                {req, req, req, Arg(false)});
  // aten::index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1)
  expect_params("index_add",
                {{"self", K::Tensor, false},
                 {"dim", K::Int, false},
                 {"index", K::Tensor, false},
                 {"source", K::Tensor, false},
                 {"alpha", K::Scalar, true}},
                {req, req, req, req, Arg(Scalar(int64_t{1}))});
  // aten::scatter.src(Tensor self, int dim, Tensor index, Tensor src) and
  // aten::scatter.value(Tensor self, int dim, Tensor index, Scalar value): one schema.
  expect_params("scatter",
                {{"self", K::Tensor, false},
                 {"dim", K::Int, false},
                 {"index", K::Tensor, false},
                 {"src", K::TensorOrScalar, false}},
                {req, req, req, req});
  // aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src)
  expect_params("scatter_add",
                {{"self", K::Tensor, false},
                 {"dim", K::Int, false},
                 {"index", K::Tensor, false},
                 {"src", K::Tensor, false}},
                {req, req, req, req});
  // aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *,
  //                          bool include_self=True)
  expect_params("scatter_reduce",
                {{"self", K::Tensor, false},
                 {"dim", K::Int, false},
                 {"index", K::Tensor, false},
                 {"src", K::Tensor, false},
                 {"reduce", K::OptionalString, false},
                 {"include_self", K::Bool, true}},
                {req, req, req, req, req, Arg(true)});
  for (const char* op : {"index_put", "index_add", "scatter", "scatter_add", "scatter_reduce"}) {
    EXPECT_EQ(find_op_schema(op)->category, OpCategory::Scatter) << op;
  }
  EXPECT_EQ(find_op_schema("index")->category, OpCategory::Copy);
  EXPECT_EQ(find_op_schema("gather")->category, OpCategory::Copy);
}

TEST(ScatterSchemaTest, ResultIsSelfsType) {
  // Every dtype, any index dtype of int32/int64, strided self: the result has self's sizes
  // and dtype (contiguous).
  for (const char* d : {"f32", "f64", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"}) {
    const DType dt = *parse_dtype(d);
    const std::string t = d;
    EXPECT_EQ(infer("x: " + t + "[3, 4], i: i64[2], v: " + t + "[3, 2]",
                    "index_put(x, [None, i], v, True)"),
              type(dt, {3, 4}))
        << d;
    EXPECT_EQ(infer("x: " + t + "[3, 4], i: i32[2], v: " + t + "[3, 2]", "index_add(x, 1, i, v)"),
              type(dt, {3, 4}))
        << d;
    EXPECT_EQ(infer("x: " + t + "[3, 4], i: i64[2, 2], v: " + t + "[3, 3]", "scatter(x, 0, i, v)"),
              type(dt, {3, 4}))
        << d;
    EXPECT_EQ(infer("x: " + t + "[3, 4], i: i32[2, 2]", "scatter(x, 1, i, 1)"), type(dt, {3, 4}))
        << d;
    EXPECT_EQ(
        infer("x: " + t + "[3, 4], i: i64[2, 5], v: " + t + "[2, 6]", "scatter_add(x, -1, i, v)"),
        type(dt, {3, 4}))
        << d;
  }
  EXPECT_EQ(
      infer("x: f32[3, 4] strides=[1, 3], i: i64[2], v: f32[2]", "index_put(x, [None, i], v)"),
      type(DType::Float32, {3, 4}));
  // Empty index tensors and self dims.
  EXPECT_EQ(infer("x: f32[0, 4], i: i64[3], v: f32[0, 3]", "index_add(x, 1, i, v)"),
            type(DType::Float32, {0, 4}));
  EXPECT_EQ(infer("x: f32[3, 4], i: i64[0], v: f32[1]", "index_put(x, [None, i], v)"),
            type(DType::Float32, {3, 4}));
  EXPECT_EQ(infer("x: f32[3, 4], i: i64[3, 0], v: f32[3, 2]", "scatter_add(x, 1, i, v)"),
            type(DType::Float32, {3, 4}));
  EXPECT_EQ(infer("x: f32[], i: i64[], v: f32[]", "scatter(x, 0, i, v)"), type(DType::Float32, {}));
}

TEST(ScatterSchemaTest, ArgumentsAsScatterArgsReadsThem) {
  // index_put over [None, i] with i of rank 2: the space is [3, 2, 2]; values [2, 1] are read
  // at space dims 1 (values dim 0) and broadcast along dims 0 and 2.
  const Graph p = testing::one_statement("x: bf16[3, 4], i: i64[2, 2], v: bf16[2, 1]",
                                         "index_put(x, [None, i], v, True)");
  const ScatterArgs a = scatter_args(p, p.nodes().at(0));
  EXPECT_EQ(a.space(), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(a.values_dims, (std::vector<int64_t>{-1, 0, -1}));
  EXPECT_EQ(a.combine, ScatterCombine::Add);
  EXPECT_FALSE(a.float_sum);  // each addition rounds
  EXPECT_TRUE(a.layout.term().rule.wraps);
  EXPECT_TRUE(a.layout.term().rule.index_error);
  EXPECT_EQ(a.layout.term().rule.message,
            "index_put: index {} is out of bounds for dimension 0 with size 4");
  EXPECT_EQ(a.dtype, DType::BFloat16);

  // index_add along the first or last dim of a rank-2+ self with an int64 index and alpha 1
  // is eager's scatter_add (16-bit sums in float, RuntimeError); otherwise a loop over the
  // index (IndexError "index out of range in self").
  const auto index_add = [](const std::string& inputs, const std::string& expr) {
    const Graph g = testing::one_statement(inputs, expr);
    return scatter_args(g, g.nodes().at(0));
  };
  const std::string bf = "x: bf16[3, 4], i: i64[2], v: bf16[3, 2]";
  const ScatterArgs s = index_add(bf, "index_add(x, 1, i, v)");
  EXPECT_TRUE(s.float_sum);
  EXPECT_FALSE(s.layout.term().rule.index_error);
  EXPECT_EQ(s.layout.term().rule.message,
            "index_add: index {} is out of bounds for dimension 1 with size 4");
  EXPECT_EQ(s.space(), (std::vector<int64_t>{3, 2}));
  for (const std::string& expr : {std::string("index_add(x, 1, i, v, alpha=2)"),
                                  std::string("index_add(x, 1, i, v, alpha=True)")}) {
    const ScatterArgs l = index_add(bf, expr);
    EXPECT_FALSE(l.float_sum) << expr;
    EXPECT_TRUE(l.layout.term().rule.index_error) << expr;
    EXPECT_EQ(l.layout.term().rule.message,
              "index_add: index out of range in self (index {} for dimension 1 with size 4)");
  }
  EXPECT_FALSE(
      index_add("x: bf16[3, 4], i: i32[2], v: bf16[3, 2]", "index_add(x, 1, i, v)").float_sum);
  EXPECT_FALSE(index_add("x: bf16[2, 3, 4], i: i64[2], v: bf16[2, 2, 4]", "index_add(x, 1, i, v)")
                   .float_sum);
  EXPECT_FALSE(index_add("x: bf16[4], i: i64[2], v: bf16[2]", "index_add(x, 0, i, v)").float_sum);
  EXPECT_EQ(
      index_add("x: f32[3, 4], i: i64[2], v: f32[3, 2]", "index_add(x, 1, i, v, alpha=0.5)").alpha,
      Scalar(0.5));
  // A self without elements along dim: eager returns before reading the index.
  EXPECT_EQ(index_add("x: f32[0, 4], i: i64[2], v: f32[2, 4]", "index_add(x, 0, i, v)").space(),
            (std::vector<int64_t>{0, 4}));

  // scatter: gather's layout, the space is the index's sizes; scatter.value has no values.
  const Graph g = testing::one_statement("x: i32[3, 4], i: i64[2, 3]", "scatter(x, 1, i, 2.7)");
  const ScatterArgs v = scatter_args(g, g.nodes().at(0));
  EXPECT_EQ(v.space(), (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(v.values.has_value());
  EXPECT_EQ(v.value, Scalar(2.7));
  EXPECT_EQ(v.combine, ScatterCombine::Assign);
  EXPECT_FALSE(v.layout.term().rule.wraps);
  EXPECT_FALSE(v.layout.term().rule.index_error);
  const Graph h =
      testing::one_statement("x: f16[3, 4], i: i64[2, 3], v: f16[3, 5]", "scatter_add(x, 0, i, v)");
  const ScatterArgs sa = scatter_args(h, h.nodes().at(0));
  EXPECT_TRUE(sa.float_sum);
  EXPECT_EQ(sa.values_dims, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(sa.layout.term().rule.message,
            "scatter_add: index {} is out of bounds for dimension 0 with size 3");
}

TEST(ScatterSchemaTest, IndexPutRefusals) {
  const std::string x = "x: f32[3, 4], ";
  // IndexError: too many indices for tensor of dimension 2 (got 3)
  EXPECT_EQ(infer_error(x + "i: i64[1], v: f32[1]", "index_put(x, [None, None, i], v)"),
            "index_put: too many indices for tensor of dimension 2 (got 3)");
  // IndexError: too many indices for tensor of dimension 0 (got 1)
  EXPECT_EQ(infer_error("x: f32[], i: i64[1], v: f32[]", "index_put(x, [i], v)"),
            "index_put: too many indices for tensor of dimension 0 (got 1)");
  // Two tensor indices broadcast together. IndexError: shape mismatch: indexing tensors could
  // not be broadcast together with shapes [2], [3]
  EXPECT_EQ(infer_error(x + "i: i64[2], j: i64[3], v: f32[1]", "index_put(x, [i, j], v)"),
            "index_put: shape mismatch: indexing tensors could not be broadcast together with "
            "shapes [2], [3]");
  // RuntimeError: shape mismatch: value tensor of shape [3] cannot be broadcast to indexing
  // result of shape [2]
  EXPECT_EQ(infer_error(x + "i: i64[2], j: i64[1], v: f32[3]", "index_put(x, [i, j], v)"),
            "index_put: shape mismatch: value tensor of shape [3] cannot be broadcast to "
            "indexing result of shape [2]");
  // RuntimeError: ntensor >= 3 INTERNAL ASSERT FAILED (all indices None).
  EXPECT_EQ(infer_error(x + "v: f32[3, 4]", "index_put(x, [None], v)"),
            "index_put: needs a tensor index (all indices are None)");
  // torch accepts a bool (or uint8) mask; its result's shape depends on the data: refused.
  EXPECT_EQ(infer_error(x + "m: bool[3], v: f32[4]", "index_put(x, [m], v)"),
            "index_put: the mask index 'm' (bool) gives a result whose shape depends on the data; "
            "not supported");
  EXPECT_EQ(infer_error(x + "m: u8[3], v: f32[4]", "index_put(x, [m], v)"),
            "index_put: the mask index 'm' (u8) gives a result whose shape depends on the data; "
            "not supported");
  // IndexError: tensors used as indices must be long, int, byte or bool tensors
  EXPECT_EQ(infer_error(x + "i: f32[1], v: f32[4]", "index_put(x, [i], v)"),
            "index_put: tensors used as indices must be long, int, byte or bool tensors, got 'i' "
            "(f32)");
  EXPECT_EQ(infer_error(x + "i: i16[1], v: f32[4]", "index_put(x, [i], v)"),
            "index_put: tensors used as indices must be long, int, byte or bool tensors, got 'i' "
            "(i16)");
  // RuntimeError: Index put requires the source and destination dtypes match, got Float for
  // the destination and Double for the source.
  EXPECT_EQ(infer_error(x + "i: i64[1], v: f64[4]", "index_put(x, [i], v, True)"),
            "index_put: Index put requires the source and destination dtypes match, got f32 for "
            "the destination and f64 for the source");
  // ... got Int for the destination and Long for the source.
  EXPECT_EQ(infer_error("x: i32[3, 4], i: i64[1], v: i64[4]", "index_put(x, [i], v)"),
            "index_put: Index put requires the source and destination dtypes match, got i32 for "
            "the destination and i64 for the source");
  // RuntimeError: shape mismatch: value tensor of shape [3] cannot be broadcast to indexing
  // result of shape [3, 2]
  EXPECT_EQ(infer_error(x + "i: i64[2], v: f32[3]", "index_put(x, [None, i], v)"),
            "index_put: shape mismatch: value tensor of shape [3] cannot be broadcast to "
            "indexing result of shape [3, 2]");
  // ... value tensor of shape [1, 3, 2] cannot be broadcast to indexing result of shape
  // [3, 2] (more dims than the result, even of size 1).
  EXPECT_EQ(infer_error(x + "i: i64[2], v: f32[1, 3, 2]", "index_put(x, [None, i], v, True)"),
            "index_put: shape mismatch: value tensor of shape [1, 3, 2] cannot be broadcast to "
            "indexing result of shape [3, 2]");
  // ... value tensor of shape [2, 1] cannot be broadcast to indexing result of shape [3, 0]
  EXPECT_EQ(infer_error(x + "i: i64[0], v: f32[2, 1]", "index_put(x, [None, i], v)"),
            "index_put: shape mismatch: value tensor of shape [2, 1] cannot be broadcast to "
            "indexing result of shape [3, 0]");
  // Accepted: [1, 2], [2], [] and [1, 1] into [3, 2] or [3, 0].
  for (const char* v : {"f32[1, 2]", "f32[2]", "f32[]", "f32[3, 1]"}) {
    EXPECT_EQ(infer(x + "i: i64[2], v: " + v, "index_put(x, [None, i], v)"),
              type(DType::Float32, {3, 4}))
        << v;
  }
  EXPECT_EQ(infer(x + "i: i64[0], v: f32[1, 1]", "index_put(x, [None, i], v)"),
            type(DType::Float32, {3, 4}));
}

TEST(ScatterSchemaTest, IndexAddRefusals) {
  const std::string x = "x: f32[3, 4], ";
  // IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 2)
  EXPECT_EQ(infer_error(x + "i: i64[1], v: f32[3, 1]", "index_add(x, 2, i, v)"),
            "index_add: argument 'dim': dim 2 is out of range for a tensor of rank 2 (expected in "
            "[-2, 1])");
  EXPECT_EQ(infer_error(x + "i: i64[1], v: f32[3, 1]", "index_add(x, -3, i, v)"),
            "index_add: argument 'dim': dim -3 is out of range for a tensor of rank 2 (expected in "
            "[-2, 1])");
  // RuntimeError: index_add_(): Expected dtype int32/int64 for index but got: Float
  EXPECT_EQ(infer_error(x + "i: f32[1], v: f32[3, 1]", "index_add(x, 1, i, v)"),
            "index_add: Expected dtype int32/int64 for index 'i' but got f32");
  // ... but got: Short
  EXPECT_EQ(infer_error(x + "i: i16[1], v: f32[3, 1]", "index_add(x, 1, i, v)"),
            "index_add: Expected dtype int32/int64 for index 'i' but got i16");
  // IndexError: index_add_(): Index is supposed to be a vector, but got dim: 2 with type: Long
  // and size: [1, 1]
  EXPECT_EQ(infer_error(x + "i: i64[1, 1], v: f32[3, 1]", "index_add(x, 1, i, v)"),
            "index_add: Index is supposed to be a vector, but got dim: 2 with size: [1, 1]");
  // RuntimeError: index_add_(): self (Float) and source (Double) must have the same scalar type
  EXPECT_EQ(infer_error(x + "i: i64[1], v: f64[3, 1]", "index_add(x, 1, i, v)"),
            "index_add: self and source must have the same scalar type (self f32, v f64)");
  // RuntimeError: index_add_(): Number of indices (2) should be equal to source.size(dim):
  // (3), for dim: 1
  EXPECT_EQ(
      infer_error(x + "i: i64[2], v: f32[3, 3]", "index_add(x, 1, i, v)"),
      "index_add: Number of indices (2) should be equal to source.size(dim): (3), for dim: 1");
  // RuntimeError: source tensor shape must match self tensor shape, excluding the specified
  // dimension. Got self.shape = [3, 4] source.shape = [2, 2]
  EXPECT_EQ(infer_error(x + "i: i64[2], v: f32[2, 2]", "index_add(x, 1, i, v)"),
            "index_add: source tensor shape must match self tensor shape, excluding the specified "
            "dimension. Got self.shape = [3, 4] source.shape = [2, 2]");
  // ... Got self.shape = [3, 4] source.shape = [3, 2, 1]
  EXPECT_EQ(infer_error(x + "i: i64[2], v: f32[3, 2, 1]", "index_add(x, 1, i, v)"),
            "index_add: source tensor shape must match self tensor shape, excluding the specified "
            "dimension. Got self.shape = [3, 4] source.shape = [3, 2, 1]");
  // ... Got self.shape = [3] source.shape = [] (a 0-dim source counts one index).
  EXPECT_EQ(infer_error("x: f32[3], i: i64[1], v: f32[]", "index_add(x, 0, i, v)"),
            "index_add: source tensor shape must match self tensor shape, excluding the specified "
            "dimension. Got self.shape = [3] source.shape = []");
  // torch accepts a 0-dim self (index_add(tensor(1.), 0, tensor([0]), tensor(2.))); Stax
  // refuses it.
  EXPECT_EQ(infer_error("x: f32[], i: i64[1], v: f32[]", "index_add(x, 0, i, v)"),
            "index_add: a 0-dim self is not supported (index_add of a 1-D tensor is)");
  // RuntimeError: value cannot be converted to type int8_t without overflow (alpha), also
  // for an empty index of a 1-D self; a rank-2+ self with an empty index or no elements
  // returns before alpha is converted.
  EXPECT_EQ(infer_error("x: i8[3, 4], i: i64[1], v: i8[1, 4]", "index_add(x, 0, i, v, alpha=300)"),
            "index_add: argument 'alpha': value 300 cannot be converted to i8 without overflow "
            "([-128, 127])");
  EXPECT_NE(infer_error("x: i8[3], i: i64[0], v: i8[0]", "index_add(x, 0, i, v, alpha=128)")
                .find("cannot be converted to i8 without overflow"),
            std::string::npos);
  EXPECT_EQ(infer("x: i8[3, 4], i: i64[0], v: i8[0, 4]", "index_add(x, 0, i, v, alpha=300)"),
            type(DType::Int8, {3, 4}));
  // ... to type c10::Half without overflow (alpha=1e5; bfloat16 takes 70000).
  EXPECT_NE(infer_error("x: f16[3], i: i64[1], v: f16[1]", "index_add(x, 0, i, v, alpha=1e5)"),
            "<no error>");
  EXPECT_EQ(infer("x: bf16[3], i: i64[1], v: bf16[1]", "index_add(x, 0, i, v, alpha=70000.0)"),
            type(DType::BFloat16, {3}));
  // Accepted: a float alpha for an integer self (converted, 2.5 -> 2), -1 for uint8, a 0-dim
  // index of a 1-D self.
  EXPECT_EQ(infer("x: i8[3], i: i64[1], v: i8[1]", "index_add(x, 0, i, v, alpha=2.5)"),
            type(DType::Int8, {3}));
  EXPECT_EQ(infer("x: u8[3], i: i64[1], v: u8[1]", "index_add(x, 0, i, v, alpha=-1)"),
            type(DType::UInt8, {3}));
  EXPECT_EQ(infer("x: f32[3], i: i64[], v: f32[1]", "index_add(x, 0, i, v)"),
            type(DType::Float32, {3}));
}

TEST(ScatterSchemaTest, ScatterRefusals) {
  const std::string x = "x: f32[3, 4], ";
  for (const std::string op : {"scatter", "scatter_add"}) {
    const auto call = [&op](const std::string& dim) { return op + "(x, " + dim + ", i, v)"; };
    // IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 2)
    EXPECT_EQ(
        infer_error(x + "i: i64[1, 1], v: f32[1, 1]", call("2")),
        op +
            ": argument 'dim': dim 2 is out of range for a tensor of rank 2 (expected in [-2, 1])");
    // RuntimeError: scatter(): Expected dtype int32/int64 for index
    EXPECT_EQ(infer_error(x + "i: f32[1, 1], v: f32[1, 1]", call("1")),
              op + ": Expected dtype int32/int64 for index 'i' but got f32");
    EXPECT_EQ(infer_error(x + "i: i16[1, 1], v: f32[1, 1]", call("1")),
              op + ": Expected dtype int32/int64 for index 'i' but got i16");
    // RuntimeError: Index tensor must have the same number of dimensions as self tensor
    EXPECT_EQ(infer_error(x + "i: i64[1], v: f32[1, 1]", call("1")),
              op + ": Index tensor must have the same number of dimensions as self tensor");
    // RuntimeError: scatter(): Expected self.dtype to be equal to src.dtype
    EXPECT_EQ(infer_error(x + "i: i64[1, 1], v: f64[1, 1]", call("1")),
              op + ": scatter(): Expected self.dtype to be equal to src.dtype (self f32, v f64)");
    EXPECT_EQ(infer_error("x: i32[3, 4], i: i64[1, 1], v: i64[1, 1]", call("1")),
              op + ": scatter(): Expected self.dtype to be equal to src.dtype (self i32, v i64)");
    // RuntimeError: Index tensor must have the same number of dimensions as src tensor
    EXPECT_EQ(infer_error(x + "i: i64[1, 1], v: f32[1, 1, 1]", call("1")),
              op + ": Index tensor must have the same number of dimensions as src tensor");
    // A src of fewer dims: torch raises IndexError: Dimension out of range (expected to be in
    // range of [-1, 0], but got 1) (it reads src.size(1)); Stax names the mismatch.
    EXPECT_EQ(infer_error(x + "i: i64[1, 1], v: f32[1]", call("1")),
              op + ": Index tensor must have the same number of dimensions as src tensor");
    // RuntimeError: Expected index [4, 1] to be no larger than self [3, 4] apart from
    // dimension 1 and to be no larger size than src [4, 1]
    EXPECT_EQ(infer_error(x + "i: i64[4, 1], v: f32[4, 1]", call("1")),
              op + ": Expected index [4, 1] to be no larger than self [3, 4] apart from "
                   "dimension 1 and to be no larger size than src [4, 1]");
    // ... Expected index [2, 2] to be no larger than self [3, 4] apart from dimension 1 and to
    // be no larger size than src [2, 1]
    EXPECT_EQ(infer_error(x + "i: i64[2, 2], v: f32[2, 1]", call("1")),
              op + ": Expected index [2, 2] to be no larger than self [3, 4] apart from "
                   "dimension 1 and to be no larger size than src [2, 1]");
    // ... than src [1, 3]
    EXPECT_EQ(infer_error(x + "i: i64[2, 2], v: f32[1, 3]", call("1")),
              op + ": Expected index [2, 2] to be no larger than self [3, 4] apart from "
                   "dimension 1 and to be no larger size than src [1, 3]");
    // Accepted: an index larger than self along dim (values land anywhere along it).
    EXPECT_EQ(infer(x + "i: i64[1, 9], v: f32[1, 9]", call("1")), type(DType::Float32, {3, 4}));
    // torch accepts a 0-dim index with a 1-D self (and a 1-D index with a 0-dim self); Stax
    // refuses them.
    EXPECT_EQ(infer_error("x: f32[3], i: i64[], v: f32[]", call("0")),
              op + ": a 0-dim index or self is supported only when both are 0-dim");
    // torch skips the shape checks when the index is empty (index [5, 0] with self [3, 4]);
    // Stax still makes them.
    EXPECT_NE(infer_error(x + "i: i64[5, 0], v: f32[5, 0]", call("1")), "<no error>");
  }
  // scatter.value: RuntimeError: value cannot be converted to type int8_t without overflow
  EXPECT_EQ(infer_error("x: i8[3, 4], i: i64[1, 1]", "scatter(x, 1, i, 300)"),
            "scatter: argument 'value': value 300 cannot be converted to i8 without overflow "
            "([-128, 127])");
  // ... to type c10::Half without overflow
  EXPECT_NE(infer_error("x: f16[3, 4], i: i64[1, 1]", "scatter(x, 1, i, 1e5)"), "<no error>");
  // RuntimeError: Expected index [4, 1] to be no larger than self [3, 4] apart from
  // dimension 1 (scatter.value: no src; Stax names the index's own sizes as src).
  EXPECT_NE(infer_error("x: f32[3, 4], i: i64[4, 1]", "scatter(x, 1, i, 1.0)")
                .find("scatter: Expected index [4, 1] to be no larger than self [3, 4] apart "
                      "from dimension 1"),
            std::string::npos);
  // RuntimeError: Index tensor must have the same number of dimensions as self tensor
  EXPECT_EQ(infer_error("x: f32[3, 4], i: i64[1]", "scatter(x, 1, i, 1.0)"),
            "scatter: Index tensor must have the same number of dimensions as self tensor");
  // Accepted: float values into an integer self (truncated where it runs), 0-dim everything.
  EXPECT_EQ(infer("x: i32[3, 4], i: i64[1, 1]", "scatter(x, 1, i, 2.7)"),
            type(DType::Int32, {3, 4}));
  EXPECT_EQ(infer("x: f32[], i: i64[]", "scatter(x, -1, i, 2.0)"), type(DType::Float32, {}));
}

TEST(ScatterSchemaTest, ScatterReduceModesAndRefusals) {
  const std::string in = "x: f32[3, 4], i: i64[2, 2], v: f32[2, 4]";
  const auto read = [&](const std::string& call) {
    const Graph g = parse_graph("def t(" + in + "):\n    y = " + call + "\n    return y\n");
    return scatter_args(g, g.nodes().back());
  };
  // torch 2.13.0 takes 'max' and 'min' as amax and amin.
  const std::vector<std::pair<std::string, ScatterCombine>> modes = {
      {"sum", ScatterCombine::Add},   {"prod", ScatterCombine::Multiply},
      {"mean", ScatterCombine::Mean}, {"amax", ScatterCombine::Max},
      {"amin", ScatterCombine::Min},  {"max", ScatterCombine::Max},
      {"min", ScatterCombine::Min}};
  for (const auto& [reduce, combine] : modes) {
    const ScatterArgs a = read("scatter_reduce(x, 1, i, v, '" + reduce + "')");
    EXPECT_EQ(a.combine, combine) << reduce;
    EXPECT_TRUE(a.include_self);
    EXPECT_FALSE(a.float_sum);
  }
  EXPECT_FALSE(read("scatter_reduce(x, 1, i, v, 'sum', include_self=False)").include_self);
  // 16-bit reductions are kept in float.
  const Graph h = parse_graph(
      "def t(x: bf16[3, 4], i: i64[2, 2], v: bf16[2, 4]):\n"
      "    y = scatter_reduce(x, 0, i, v, 'amax')\n    return y\n");
  EXPECT_TRUE(scatter_args(h, h.nodes().back()).float_sum);
  // RuntimeError: reduce argument must be either sum, prod, mean, amax or amin, got add
  EXPECT_EQ(infer_error(in, "scatter_reduce(x, 1, i, v, 'add')"),
            "scatter_reduce: reduce argument must be either sum, prod, mean, amax or amin, got "
            "add");
  // NotImplementedError: "scatter_gather_tensor_cpu_reduce_mean" not implemented for 'Bool'
  EXPECT_EQ(infer_error("x: bool[3, 4], i: i64[2, 2], v: bool[2, 4]",
                        "scatter_reduce(x, 1, i, v, 'mean')"),
            "scatter_reduce: \"scatter_gather_tensor_cpu_reduce_mean\" not implemented for "
            "'Bool'");
  // The shape checks are scatter's.
  EXPECT_EQ(
      infer_error("x: f32[3, 4], i: i64[4, 1], v: f32[4, 1]", "scatter_reduce(x, 1, i, v, 'sum')"),
      "scatter_reduce: Expected index [4, 1] to be no larger than self [3, 4] apart from "
      "dimension 1 and to be no larger size than src [4, 1]");
  EXPECT_EQ(infer(in, "scatter_reduce(x, 1, i, v, 'prod', include_self=False)"),
            type(DType::Float32, {3, 4}));
}

TEST(ScatterSchemaTest, TextFormatRoundTrip) {
  const Graph g = parse_graph(
      R"(def t(x: f32[3, 4], i: i64[2], j: i32[2, 2], v: f32[3, 2], w: f32[2, 4], s: f32[2, 3]):
    a = index_put(x, [None, i], v)
    b = index_put(x, [None, i], v, True)
    c = index_put(x, indices=[i, None], values=w, accumulate=False)
    d = index_add(x, 1, i, v, alpha=2)
    e = index_add(x, 0, i, w, alpha=-0.5)
    f = index_add(x, -1, i, v)
    g = scatter(x, 1, j, s)
    h = scatter(x, 1, j, 2.5)
    k = scatter(x, 0, j, -inf)
    l = scatter_add(x, -2, j, w)
    m = scatter_reduce(x, 0, j, w, 'amin', include_self=False)
    return a, b, c, d, e, f, g, h, k, l, m
)");
  const std::string text = print_graph(g);
  for (const char* line :
       {"index_put(x, [None, i], v)", "index_put(x, [None, i], v, accumulate=True)",
        "index_put(x, [i, None], w)", "index_add(x, 1, i, v, alpha=2)",
        "index_add(x, 0, i, w, alpha=-0.5)", "scatter(x, 1, j, s)", "scatter(x, 1, j, 2.5)",
        "scatter(x, 0, j, -inf)", "scatter_add(x, -2, j, w)",
        "scatter_reduce(x, 0, j, w, 'amin', include_self=False)"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin\n" << text;
  }
  const Graph h = parse_graph(text);
  EXPECT_EQ(h, g);
  EXPECT_EQ(print_graph(h), text);
  for (const char* name : {"a", "d", "h", "l"}) {
    EXPECT_EQ(g.value(*g.find_value(name)).type, type(DType::Float32, {3, 4})) << name;
  }
}

}  // namespace
}  // namespace stax::ir
