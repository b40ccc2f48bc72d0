// Tests of the contractions' schemas (issue 14, point 3): ATen's parameter names and order,
// result types, the arguments as contraction_args reads them, and every refusal torch 2.13.0
// makes (probed with torch.mm, bmm, addmm and baddbmm on CPU), each message naming the op and
// the operands' sizes; the text format prints and reparses them.
#include <gtest/gtest.h>

#include "ir/contraction_args.h"
#include "ir/op_schema.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using testing::infer;
using testing::infer_error;
using testing::type;

// The schema as "name(p1, p2, *, k=...)" with keyword-only markers.
std::string signature(const std::string& op) {
  const OpSchema* s = find_op_schema(op);
  if (s == nullptr) return "<unregistered>";
  std::string out = op + "(";
  bool star = false;
  for (size_t i = 0; i < s->params.size(); ++i) {
    const Param& p = s->params[i];
    if (i) out += ", ";
    if (p.keyword_only && !star) {
      out += "*, ";
      star = true;
    }
    out += p.name;
    if (p.default_value) out += "=" + format_scalar(std::get<Scalar>(*p.default_value));
  }
  return out + ")";
}

TEST(ContractionSchemaTest, AtenNamesAndOrder) {
  // torch.ops.aten.X.default._schema (torch 2.13.0).
  EXPECT_EQ(signature("mm"), "mm(self, mat2)");
  EXPECT_EQ(signature("bmm"), "bmm(self, mat2)");
  EXPECT_EQ(signature("addmm"), "addmm(self, mat1, mat2, *, beta=1, alpha=1)");
  EXPECT_EQ(signature("baddbmm"), "baddbmm(self, batch1, batch2, *, beta=1, alpha=1)");
  for (const char* op : {"mm", "bmm", "addmm", "baddbmm"}) {
    EXPECT_EQ(find_op_schema(op)->category, OpCategory::Contraction) << op;
  }
}

TEST(ContractionSchemaTest, ResultTypes) {
  EXPECT_EQ(infer("a: f32[2, 3], b: f32[3, 4]", "mm(a, b)"), type(DType::Float32, {2, 4}));
  // Strided operands: the result is contiguous.
  EXPECT_EQ(infer("a: bf16[2, 3] strides=[1, 2], b: bf16[3, 4]", "mm(a, b)"),
            type(DType::BFloat16, {2, 4}));
  EXPECT_EQ(infer("a: i8[5, 2, 3], b: i8[5, 3, 7]", "bmm(a, b)"), type(DType::Int8, {5, 2, 7}));
  EXPECT_EQ(infer("c: f64[4], a: f64[2, 3], b: f64[3, 4]", "addmm(c, a, b, beta=0, alpha=2.5)"),
            type(DType::Float64, {2, 4}));
  EXPECT_EQ(infer("c: f16[1, 1, 4], a: f16[6, 2, 3], b: f16[6, 3, 4]", "baddbmm(c, a, b)"),
            type(DType::Float16, {6, 2, 4}));
  // Every dtype but bool (torch implements the four for u8, i8, i16, i32, i64 and the floats).
  for (const char* d : {"u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"}) {
    const std::string t = std::string(d);
    EXPECT_EQ(infer("a: " + t + "[2, 3], b: " + t + "[3, 4]", "mm(a, b)").dtype, *parse_dtype(d))
        << d;
  }
  // Empty dims: k = 0 gives a [m, n] result (zeros, or beta * bias), m = 0 or batch = 0 an
  // empty one.
  EXPECT_EQ(infer("a: f32[2, 0], b: f32[0, 3]", "mm(a, b)"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(infer("a: f32[0, 2], b: f32[2, 3]", "mm(a, b)"), type(DType::Float32, {0, 3}));
  EXPECT_EQ(infer("a: f32[0, 2, 2], b: f32[0, 2, 3]", "bmm(a, b)"),
            type(DType::Float32, {0, 2, 3}));
}

TEST(ContractionSchemaTest, BiasExpandsAsTorchExpands) {
  // Accepted by torch.addmm for a [2, 4] result: [4], [1], [], [2, 1], [1, 4], [2, 4].
  for (const char* bias : {"f32[4]", "f32[1]", "f32[]", "f32[2, 1]", "f32[1, 4]", "f32[2, 4]"}) {
    EXPECT_EQ(infer(std::string("c: ") + bias + ", a: f32[2, 3], b: f32[3, 4]", "addmm(c, a, b)"),
              type(DType::Float32, {2, 4}))
        << bias;
  }
  for (const char* bias : {"f32[4]", "f32[]", "f32[2, 1, 1]", "f32[2, 4]", "f32[1, 2, 4]"}) {
    EXPECT_EQ(
        infer(std::string("c: ") + bias + ", a: f32[2, 2, 3], b: f32[2, 3, 4]", "baddbmm(c, a, b)"),
        type(DType::Float32, {2, 2, 4}))
        << bias;
  }
}

TEST(ContractionSchemaTest, ArgumentsAsContractionArgsReadsThem) {
  const Graph g = testing::one_statement("c: i32[3], a: i32[4, 2, 5], b: i32[4, 5, 3]",
                                         "baddbmm(c, a, b, beta=2.7, alpha=-3)");
  const ContractionArgs a = contraction_args(g, g.nodes().at(0));
  EXPECT_TRUE(a.batched);
  EXPECT_EQ(a.batch, 4);
  EXPECT_EQ(a.m, 2);
  EXPECT_EQ(a.k, 5);
  EXPECT_EQ(a.n, 3);
  EXPECT_EQ(a.lhs, 1u);
  EXPECT_EQ(a.rhs, 2u);
  EXPECT_EQ(a.bias, std::optional<size_t>(0));
  EXPECT_EQ(a.beta, Scalar(2.7));
  EXPECT_EQ(a.alpha, Scalar(int64_t{-3}));
  EXPECT_EQ(a.scalar_dtype, DType::Int32);
  const Graph h = testing::one_statement("a: bf16[4, 5], b: bf16[5, 3]", "mm(a, b)");
  const ContractionArgs m = contraction_args(h, h.nodes().at(0));
  EXPECT_FALSE(m.batched);
  EXPECT_EQ(m.batch, 1);
  EXPECT_EQ(m.lhs, 0u);
  EXPECT_EQ(m.rhs, 1u);
  EXPECT_FALSE(m.bias.has_value());
  EXPECT_EQ(m.scalar_dtype, DType::Float32);  // 16-bit floats compute alpha/beta in float32
  EXPECT_EQ(m.result_sizes(), (std::vector<int64_t>{4, 3}));
}

TEST(ContractionSchemaTest, RefusesWrongRanks) {
  // torch: "self must be a matrix", "mat1 must be a matrix, got 1-D tensor", "batch1 must be
  // a 3D tensor".
  EXPECT_EQ(infer_error("a: f32[3], b: f32[3, 4]", "mm(a, b)"),
            "mm: argument 'self': must be a matrix (2-D), got a 1-D tensor of sizes [3]");
  EXPECT_EQ(infer_error("a: f32[2, 3], b: f32[1, 3, 4]", "mm(a, b)"),
            "mm: argument 'mat2': must be a matrix (2-D), got a 3-D tensor of sizes [1, 3, 4]");
  EXPECT_EQ(infer_error("a: f32[], b: f32[3, 4]", "mm(a, b)"),
            "mm: argument 'self': must be a matrix (2-D), got a 0-D tensor of sizes []");
  EXPECT_EQ(infer_error("c: f32[2, 4], a: f32[3], b: f32[3, 4]", "addmm(c, a, b)"),
            "addmm: argument 'mat1': must be a matrix (2-D), got a 1-D tensor of sizes [3]");
  EXPECT_EQ(infer_error("a: f32[2, 3], b: f32[3, 4]", "bmm(a, b)"),
            "bmm: argument 'self': must be a 3-D tensor (a batch of matrices), got a 2-D tensor "
            "of sizes [2, 3]");
  EXPECT_EQ(infer_error("c: f32[4], a: f32[2, 2, 3], b: f32[3, 4]", "baddbmm(c, a, b)"),
            "baddbmm: argument 'batch2': must be a 3-D tensor (a batch of matrices), got a 2-D "
            "tensor of sizes [3, 4]");
}

TEST(ContractionSchemaTest, RefusesMismatchedInnerAndBatchSizes) {
  // torch: "mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)".
  EXPECT_EQ(infer_error("a: f32[2, 3], b: f32[5, 4]", "mm(a, b)"),
            "mm: self and mat2 shapes cannot be multiplied (2x3 and 5x4): self has 3 columns, "
            "mat2 has 5 rows");
  EXPECT_EQ(infer_error("c: f32[2, 4], a: f32[2, 3], b: f32[5, 4]", "addmm(c, a, b)"),
            "addmm: mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4): mat1 has 3 columns, "
            "mat2 has 5 rows");
  EXPECT_EQ(infer_error("a: f32[2, 2, 3], b: f32[2, 5, 4]", "bmm(a, b)"),
            "bmm: self and mat2 shapes cannot be multiplied (2x2x3 and 2x5x4): self has 3 "
            "columns, mat2 has 5 rows");
  // torch: "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got:
  // [3, 3]."
  EXPECT_EQ(infer_error("a: f32[2, 2, 3], b: f32[3, 3, 4]", "bmm(a, b)"),
            "bmm: self and mat2 have different batch sizes (2x2x3 and 3x3x4)");
  EXPECT_EQ(infer_error("c: f32[4], a: f32[1, 2, 3], b: f32[3, 3, 4]", "baddbmm(c, a, b)"),
            "baddbmm: batch1 and batch2 have different batch sizes (1x2x3 and 3x3x4)");
}

TEST(ContractionSchemaTest, RefusesMixedDtypesAndBool) {
  // torch: "expected m1 and m2 to have the same dtype, but got: float != double"; addmm and
  // baddbmm check the bias too ("self and mat2 must have the same dtype"), even with beta=0.
  EXPECT_EQ(infer_error("a: f32[2, 3], b: f64[3, 4]", "mm(a, b)"),
            "mm: expected its operands to have the same dtype, but got self f32[2, 3], mat2 "
            "f64[3, 4]");
  EXPECT_EQ(infer_error("a: bf16[2, 3], b: f32[3, 4]", "mm(a, b)"),
            "mm: expected its operands to have the same dtype, but got self bf16[2, 3], mat2 "
            "f32[3, 4]");
  EXPECT_EQ(infer_error("a: i32[2, 2, 3], b: i64[2, 3, 4]", "bmm(a, b)"),
            "bmm: expected its operands to have the same dtype, but got self i32[2, 2, 3], mat2 "
            "i64[2, 3, 4]");
  EXPECT_EQ(infer_error("c: bf16[2, 4], a: f32[2, 3], b: f32[3, 4]", "addmm(c, a, b, beta=0)"),
            "addmm: expected its operands to have the same dtype, but got self bf16[2, 4], mat1 "
            "f32[2, 3], mat2 f32[3, 4]");
  EXPECT_EQ(infer_error("c: f64[4], a: f32[2, 2, 3], b: f32[2, 3, 4]", "baddbmm(c, a, b)"),
            "baddbmm: expected its operands to have the same dtype, but got self f64[4], batch1 "
            "f32[2, 2, 3], batch2 f32[2, 3, 4]");
  // torch: "addmm_impl_cpu_" not implemented for 'Bool'.
  EXPECT_EQ(infer_error("a: bool[2, 3], b: bool[3, 4]", "mm(a, b)"),
            "mm: bool is not supported (PyTorch implements mm for integer and floating dtypes "
            "only): self bool[2, 3], mat2 bool[3, 4]");
  EXPECT_EQ(infer_error("c: bool[2, 2, 4], a: bool[2, 2, 3], b: bool[2, 3, 4]", "baddbmm(c, a, b)"),
            "baddbmm: bool is not supported (PyTorch implements baddbmm for integer and floating "
            "dtypes only): self bool[2, 2, 4], batch1 bool[2, 2, 3], batch2 bool[2, 3, 4]");
}

TEST(ContractionSchemaTest, RefusesABiasThatDoesNotExpand) {
  // torch: "The expanded size of the tensor (4) must match the existing size (3) at
  // non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: [3]", and expand's "the
  // number of sizes provided (2) must be greater or equal to the number of dimensions in the
  // tensor (3)" (a bias that merely broadcasts, [1, 2, 4], is refused).
  EXPECT_EQ(infer_error("c: f32[3], a: f32[2, 3], b: f32[3, 4]", "addmm(c, a, b)"),
            "addmm: argument 'self': sizes [3] do not expand to the result's sizes [2, 4] (size "
            "3 at its dim 0 against 4)");
  EXPECT_EQ(infer_error("c: f32[3, 4], a: f32[2, 3], b: f32[3, 4]", "addmm(c, a, b)"),
            "addmm: argument 'self': sizes [3, 4] do not expand to the result's sizes [2, 4] "
            "(size 3 at its dim 0 against 2)");
  EXPECT_EQ(infer_error("c: f32[1, 2, 4], a: f32[2, 3], b: f32[3, 4]", "addmm(c, a, b)"),
            "addmm: argument 'self': sizes [1, 2, 4] do not expand to the result's sizes [2, 4]: "
            "it has 3 dims, the result 2");
  EXPECT_EQ(infer_error("c: f32[3, 2, 4], a: f32[2, 2, 3], b: f32[2, 3, 4]", "baddbmm(c, a, b)"),
            "baddbmm: argument 'self': sizes [3, 2, 4] do not expand to the result's sizes [2, "
            "2, 4] (size 3 at its dim 0 against 2)");
  EXPECT_EQ(
      infer_error("c: f32[1, 2, 2, 4], a: f32[2, 2, 3], b: f32[2, 3, 4]", "baddbmm(c, a, b)"),
      "baddbmm: argument 'self': sizes [1, 2, 2, 4] do not expand to the result's sizes [2, 2, "
      "4]: it has 4 dims, the result 3");
}

TEST(ContractionSchemaTest, AlphaAndBetaConvertAsTorchConvertsThem) {
  const std::string ints = "c: i8[2, 4], a: i8[2, 3], b: i8[3, 4]";
  // Floats for integer dtypes are accepted and truncated (torch.addmm(int8..., beta=2.7)).
  EXPECT_EQ(infer(ints, "addmm(c, a, b, beta=2.7, alpha=-2.7)"), type(DType::Int8, {2, 4}));
  EXPECT_EQ(infer(ints, "addmm(c, a, b, beta=True, alpha=False)"), type(DType::Int8, {2, 4}));
  // torch: "value cannot be converted to type int8_t without overflow".
  EXPECT_EQ(infer_error(ints, "addmm(c, a, b, alpha=300)"),
            "addmm: argument 'alpha': value 300 cannot be converted to i8 without overflow "
            "([-128, 127])");
  EXPECT_EQ(infer_error(ints, "addmm(c, a, b, beta=200.0)"),
            "addmm: argument 'beta': value 200.0 cannot be converted to i8 without overflow "
            "([-128, 127])");
  EXPECT_EQ(infer_error(ints, "addmm(c, a, b, beta=nan)"),
            "addmm: argument 'beta': value nan cannot be converted to i8 without overflow "
            "([-128, 127])");
  // uint8 takes -1 (it wraps to 255) but not -2.7.
  const std::string u8 = "c: u8[2, 2, 4], a: u8[2, 2, 3], b: u8[2, 3, 4]";
  EXPECT_EQ(infer(u8, "baddbmm(c, a, b, alpha=-1)"), type(DType::UInt8, {2, 2, 4}));
  EXPECT_EQ(infer_error(u8, "baddbmm(c, a, b, alpha=-2.7)"),
            "baddbmm: argument 'alpha': value -2.7 cannot be converted to u8 without overflow "
            "([0, 255])");
  // int64 takes 2^63 as a double (c10 compares as doubles) but not 1e19.
  const std::string i64 = "c: i64[2, 4], a: i64[2, 3], b: i64[3, 4]";
  EXPECT_EQ(infer(i64, "addmm(c, a, b, alpha=9.223372036854776e18)"), type(DType::Int64, {2, 4}));
  EXPECT_NE(infer_error(i64, "addmm(c, a, b, alpha=1e19)").find("cannot be converted to i64"),
            std::string::npos);
  // Floating dtypes: checked against float32 for f16/bf16/f32 (1e6 is accepted for f16 and
  // gives inf; 1e39 is refused), against float64 for f64; inf and nan pass.
  const std::string f16 = "c: f16[2, 4], a: f16[2, 3], b: f16[3, 4]";
  EXPECT_EQ(infer(f16, "addmm(c, a, b, alpha=1e6, beta=inf)"), type(DType::Float16, {2, 4}));
  EXPECT_EQ(infer_error(f16, "addmm(c, a, b, alpha=1e39)"),
            "addmm: argument 'alpha': value 1e+39 cannot be converted to f32 without overflow "
            "(largest finite value 3.4028234663852886e+38)");
  EXPECT_EQ(infer("c: f64[2, 4], a: f64[2, 3], b: f64[3, 4]", "addmm(c, a, b, alpha=1e300)"),
            type(DType::Float64, {2, 4}));
}

TEST(ContractionSchemaTest, TextFormatRoundTrip) {
  const Graph g = parse_graph(
      R"(def t(c: f32[4], a: f32[2, 3] strides=[1, 2], b: f32[3, 4], x: i16[5, 2, 3], y: i16[5, 3, 4]):
    m = mm(a, b)
    d = addmm(c, a, b, beta=0, alpha=-1.5)
    e = addmm(c, a, b)
    f = bmm(x, y)
    g = baddbmm(f, x, y, beta=2)
    return m, d, e, g
)");
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("addmm(c, a, b, beta=0, alpha=-1.5)"), std::string::npos) << text;
  EXPECT_NE(text.find("addmm(c, a, b)\n"), std::string::npos) << text;  // defaults omitted
  EXPECT_NE(text.find("baddbmm(f, x, y, beta=2)"), std::string::npos) << text;
  EXPECT_EQ(parse_graph(text), g);
}

}  // namespace
}  // namespace stax::ir
