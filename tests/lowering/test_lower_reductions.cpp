// Lowering of the issue-6 reductions: the primitive reductions each ATen reduction becomes,
// the dtypes they accumulate in, and, evaluated on concrete data by a test-only handler, the
// values and result dtypes of the eager interpreter (PyTorch's). Code generation of these
// reductions is tested end to end separately; this checks lowering alone.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "eager/interpreter.h"
#include "evaluating_handler.h"
#include "ir/graph.h"
#include "lowering/lowering.h"
#include "scheduler/recording_handler.h"

namespace stax::lowering {
namespace {

using index::Expr;
using testing::EvaluatingHandler;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  std::string decl;          // "f32[2, 3]", optionally with strides
  std::string call;          // the reduction of x
  std::vector<double> data;  // x's elements in row-major (logical) order
};

ir::Graph graph_of(const Case& c) {
  return ir::parse_graph("def g(x: " + c.decl + "):\n  r = " + c.call + "\n  return r\n");
}

// x as a tensor with the declared layout.
Tensor input_of(const ir::Graph& g, const Case& c) {
  const ir::TensorType& t = g.value(g.inputs()[0]).type;
  Tensor x = Tensor::empty_strided(t.dtype, t.sizes, t.strides);
  for (int64_t p = 0; p < x.numel(); ++p) x.set_flat(p, c.data.at(static_cast<size_t>(p)));
  return x;
}

// Machine epsilon of a floating dtype.
double epsilon(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return 0x1p-10;
    case DType::BFloat16:
      return 0x1p-7;
    case DType::Float32:
      return 0x1p-23;
    default:
      return 0x1p-52;
  }
}

// Lowers and evaluates c, runs it eagerly, and compares values and dtypes: integers and bools
// exactly, floats within 4 ulps of the dtype (lowering rounds M2 and sums to the dtype before
// the epilogue's division where eager divides in double: at most a couple of roundings).
void expect_matches_eager(const Case& c) {
  SCOPED_TRACE(c.decl + ": " + c.call);
  const ir::Graph g = graph_of(c);
  const Tensor x = input_of(g, c);
  const Tensor expected = eager::run(g, {x}).at(0);
  const LoweredGraph lowered = lower(g);
  ASSERT_EQ(lowered.outputs.size(), 1u);
  EXPECT_EQ(lowered.outputs[0].dtype, expected.dtype());
  EXPECT_EQ(index::static_values(lowered.outputs[0].sizes, "test"), expected.sizes());
  EvaluatingHandler h;
  const std::vector<double> got = testing::evaluate_lowered(lowered, {x}, h).at(0);
  ASSERT_EQ(static_cast<int64_t>(got.size()), expected.numel());
  for (int64_t p = 0; p < expected.numel(); ++p) {
    const double want = expected.get_flat(p);
    const double have = got[static_cast<size_t>(p)];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(have)) << "element " << p << ": " << have;
    } else if (is_floating(expected.dtype()) && std::isfinite(want)) {
      EXPECT_NEAR(have, want, 4 * epsilon(expected.dtype()) * std::max(1.0, std::abs(want)))
          << "element " << p;
    } else {
      EXPECT_EQ(have, want) << "element " << p;
    }
  }
}

// The (reduction type, reduced value dtype) pairs the lowered graph's reductions apply.
std::vector<std::pair<ReductionType, DType>> reductions_of(const Case& c) {
  const ir::Graph g = graph_of(c);
  const Tensor x = input_of(g, c);
  EvaluatingHandler h;
  testing::evaluate_lowered(lower(g), {x}, h);
  // One entry per reduced element; keep the distinct ones in order.
  std::vector<std::pair<ReductionType, DType>> distinct;
  for (const auto& r : h.reductions) {
    if (std::find(distinct.begin(), distinct.end(), r) == distinct.end()) distinct.push_back(r);
  }
  return distinct;
}

using R = ReductionType;
using P = std::pair<ReductionType, DType>;

TEST(LowerReductions, IntegerSumsAndProductsAccumulateInInt64) {
  const Case sum{"i8[2, 3]", "sum(x, 1)", {100, 100, 100, -128, -128, 1}};
  EXPECT_EQ(reductions_of(sum), (std::vector<P>{{R::Sum, DType::Int64}}));
  expect_matches_eager(sum);
  const Case prod{"u8[3]", "prod(x)", {200, 200, 3}};
  EXPECT_EQ(reductions_of(prod), (std::vector<P>{{R::Prod, DType::Int64}}));
  expect_matches_eager(prod);
  expect_matches_eager({"bool[4]", "sum(x)", {1, 0, 1, 1}});
  // dtype=i8: converted to i8, accumulated in i64, wrapped back: 100 * 3 = 44 (mod 256).
  expect_matches_eager({"i64[2]", "prod(x, dtype='i8')", {100, 3}});
  expect_matches_eager({"i32[2, 2]", "sum(x, dtype='f64')", {1, 2, 3, 4}});
}

TEST(LowerReductions, HalfPrecisionAccumulatesInFloat32AndRoundsOnce) {
  const Case sum{"f16[3]", "sum(x)", {2048, 1, 1}};  // 2050: a running f16 sum stays 2048
  EXPECT_EQ(reductions_of(sum), (std::vector<P>{{R::Sum, DType::Float32}}));
  expect_matches_eager(sum);
  const LoweredGraph lowered = lower(graph_of(sum));
  ASSERT_EQ(lowered.buffers.size(), 2u);  // the f32 accumulation, then its f16 rounding
  EXPECT_EQ(lowered.buffers[0].dtype, DType::Float32);
  EXPECT_EQ(lowered.buffers[1].dtype, DType::Float16);
  EXPECT_EQ(reductions_of({"bf16[2, 2]", "amax(x, 1)", {1, 2, 3, kNaN}}),
            (std::vector<P>{{R::Max, DType::Float32}}));
  expect_matches_eager({"bf16[2, 2]", "amax(x, 1)", {1, 2, 3, kNaN}});
  expect_matches_eager({"f16[4]", "mean(x)", {1000, 1000, 1000, 1}});
  expect_matches_eager({"f16[2, 2]", "prod(x, 0)", {300, 2, 300, 3}});  // inf and 6
}

TEST(LowerReductions, ExtremaAndArgExtrema) {
  expect_matches_eager({"f32[2, 3]", "amin(x, [1], keepdim=True)", {3, kNaN, 1, 0, -0.0, 2}});
  expect_matches_eager({"i8[2, 3]", "amax(x)", {-128, 5, 127, 3, 0, 1}});
  // amax/amin of bool are any/all.
  EXPECT_EQ(reductions_of({"bool[3]", "amax(x)", {0, 1, 0}}),
            (std::vector<P>{{R::Any, DType::Bool}}));
  expect_matches_eager({"bool[3]", "amax(x)", {0, 1, 0}});
  expect_matches_eager({"bool[3]", "amin(x)", {1, 1, 0}});
  EXPECT_EQ(reductions_of({"i8[3]", "argmin(x)", {3, -1, -1}}),
            (std::vector<P>{{R::ArgMin, DType::Int8}}));
  expect_matches_eager({"i8[3]", "argmin(x)", {3, -1, -1}});
  expect_matches_eager({"u8[2, 2]", "argmax(x, 1)", {3, 255, 255, 0}});
  expect_matches_eager({"f32[4]", "argmax(x)", {1, kNaN, 3, kNaN}});
  expect_matches_eager({"f16[4]", "argmin(x)", {1, -5, kNaN, -5}});
  // Without dim: the flattened index over all dims, keepdim keeps the rank.
  expect_matches_eager({"i64[2, 2, 2]", "argmax(x)", {1, 9, 3, 4, 5, 6, 9, 8}});
  expect_matches_eager({"i64[2, 2]", "argmax(x, keepdim=True)", {1, 5, 7, 2}});
  expect_matches_eager({"i64[2, 2, 2]", "argmin(x, 2, keepdim=True)", {1, 9, 3, 4, 5, 0, 7, 8}});
}

TEST(LowerReductions, ReductionsOverTransposedInputs) {
  // x is stored column-major: the logical row-major order is what the reduction follows.
  const std::vector<double> data = {5, 1, 7, 7, 2, 9, 0, 3, 9, 4, 8, 6};
  for (const char* call : {"argmax(x)", "argmin(x, 0)", "argmax(x, 1, keepdim=True)", "sum(x, 0)",
                           "amax(x, [1])", "var(x, 1)", "logsumexp(x, [0])"}) {
    expect_matches_eager({"f32[3, 4] strides=[1, 3]", call, data});
  }
}

TEST(LowerReductions, AnyAndAll) {
  EXPECT_EQ(reductions_of({"f32[2, 2]", "any(x, 1)", {0, kNaN, 0, -0.0}}),
            (std::vector<P>{{R::Any, DType::Bool}}));
  expect_matches_eager({"f32[2, 2]", "any(x, 1)", {0, kNaN, 0, -0.0}});
  expect_matches_eager({"i64[2, 2]", "all(x, 0)", {1, 2, 0, 3}});
  expect_matches_eager({"u8[2, 2]", "all(x, 1)", {1, 2, 0, 3}});  // u8 result
  expect_matches_eager({"u8[2, 2]", "any(x)", {0, 0, 0, 3}});
}

TEST(LowerReductions, VarAndStdUseWelfordInDouble) {
  // PyTorch's CPU kernels accumulate var/std in double for every floating dtype.
  const Case var{"f32[2, 3]", "var(x, 1)", {1, 2, 4, 3, 3, 3}};
  EXPECT_EQ(reductions_of(var), (std::vector<P>{{R::WelfordM2, DType::Float64}}));
  expect_matches_eager(var);
  expect_matches_eager({"f32[2, 3]", "var(x, 1, correction=0)", {1, 2, 4, 3, 3, 3}});
  expect_matches_eager({"f32[2, 3]", "std(x, correction=0.5)", {1, 2, 4, 3, 3, 3}});
  expect_matches_eager({"f64[3]", "std(x, keepdim=True)", {1, 2, 4}});
  EXPECT_EQ(reductions_of({"bf16[3]", "std(x)", {1, 2, 4}}),
            (std::vector<P>{{R::WelfordM2, DType::Float64}}));
  // A whole f32/f64 tensor's var/std: PyTorch's two passes, the mean in the dtype, then the
  // squared deviations summed in double.
  EXPECT_EQ(reductions_of({"f32[2, 3]", "std(x)", {1, 2, 4, 3, 3, 3}}),
            (std::vector<P>{{R::Sum, DType::Float32}, {R::Sum, DType::Float64}}));
  EXPECT_EQ(reductions_of({"f32[1, 3]", "var(x, 1)", {1, 2, 4}}),
            (std::vector<P>{{R::Sum, DType::Float32}, {R::Sum, DType::Float64}}));
  expect_matches_eager({"f32[1, 3]", "var(x, 1, keepdim=True)", {1, 2, 4}});
  expect_matches_eager({"f32[3]", "var(x, correction=-1)", {1, 2, 4}});
  expect_matches_eager({"bf16[3]", "std(x)", {1, 2, 4}});
  expect_matches_eager({"f16[3]", "var(x)", {1, 2, 4}});
}

TEST(LowerReductions, VarWithTooFewElements) {
  expect_matches_eager({"f32[1]", "var(x)", {1}});                   // 0 / 0: NaN
  expect_matches_eager({"f32[2]", "var(x, correction=2)", {1, 2}});  // 0.5 / 0: inf
  expect_matches_eager({"f32[2]", "std(x, correction=3)", {1, 2}});  // max(0, -1): inf
  expect_matches_eager({"f32[2]", "var(x, correction=2)", {1, 1}});  // NaN
  expect_matches_eager({"f32[2]", "var(x)", {1, kInf}});             // NaN
}

TEST(LowerReductions, VarMeanSharesOneWelfordValue) {
  const ir::Graph g = ir::parse_graph(
      "def g(x: f32[2, 3] strides=[1, 2]):\n  v, m = var_mean(x, 1, keepdim=True)\n"
      "  return m, v\n");
  const LoweredGraph lowered = lower(g);
  // One WelfordM2 and one WelfordMean buffer over the same loops and the same value.
  // One node per result: var's WelfordM2 buffer and mean's WelfordMean buffer, each with
  // its epilogue stored as a graph output, and nothing else.
  ASSERT_EQ(lowered.buffers.size(), 4u);
  std::vector<const ComputedBuffer*> welford;
  for (const ComputedBuffer& b : lowered.buffers) {
    if (b.reduction) welford.push_back(&b);
  }
  ASSERT_EQ(welford.size(), 2u);
  EXPECT_EQ(welford[0]->reduction, ReductionType::WelfordM2);
  EXPECT_EQ(welford[1]->reduction, ReductionType::WelfordMean);
  EXPECT_EQ(welford[0]->ranges, welford[1]->ranges);
  EXPECT_EQ(welford[0]->reduction_ranges, welford[1]->reduction_ranges);
  for (const ComputedBuffer* b : welford) {
    scheduler::RecordingHandler rec;
    b->run_body(rec, {Expr(1)}, {Expr(2)});
    ASSERT_EQ(rec.loads.size(), 1u);
    EXPECT_EQ(rec.loads[0].buffer, "x");
    EXPECT_EQ(index::evaluate(rec.loads[0].index, {}), 1 + 2 * 2);
  }
  const Tensor x = input_of(g, {"f32[2, 3] strides=[1, 2]", "", {1, 2, 4, 3, 3, 3}});
  const std::vector<Tensor> expected = eager::run(g, {x});
  EvaluatingHandler h;
  const auto got = testing::evaluate_lowered(lowered, {x}, h);
  ASSERT_EQ(got.size(), 2u);
  for (size_t o = 0; o < 2; ++o) {
    EXPECT_EQ(lowered.outputs[o].dtype, expected[o].dtype());
    EXPECT_EQ(index::static_values(lowered.outputs[o].sizes, "test"), expected[o].sizes());
    for (int64_t p = 0; p < expected[o].numel(); ++p) {
      EXPECT_NEAR(got[o][static_cast<size_t>(p)], expected[o].get_flat(p), 1e-6) << o << " " << p;
    }
  }
  // Empty: the mean is NaN, as PyTorch's, not the accumulator's initial 0.
  const ir::Graph e =
      ir::parse_graph("def g(x: bf16[2, 0]):\n  v, m = var_mean(x, 1)\n  return v, m\n");
  EvaluatingHandler he;
  const auto empty =
      testing::evaluate_lowered(lower(e), {Tensor::empty(DType::BFloat16, {2, 0})}, he);
  for (const auto& out : empty) {
    for (double v : out) EXPECT_TRUE(std::isnan(v));
  }
}

TEST(LowerReductions, LogSumExp) {
  const Case lse{"f32[2, 2]", "logsumexp(x, [1])", {1, 2, 3, 4}};
  EXPECT_EQ(reductions_of(lse),
            (std::vector<P>{{R::Max, DType::Float32}, {R::Sum, DType::Float32}}));
  expect_matches_eager(lse);
  expect_matches_eager({"f32[2, 2]", "logsumexp(x, 0, keepdim=True)", {1, 2, 3, 4}});
  expect_matches_eager({"f32[2]", "logsumexp(x, 0)", {1000, 1000}});
  expect_matches_eager({"i64[3]", "logsumexp(x, 0)", {1, 2, 3}});
  expect_matches_eager({"f16[3]", "logsumexp(x, 0)", {1, 2, 3}});
  expect_matches_eager({"bool[3]", "logsumexp(x, 0)", {1, 0, 1}});
  // PyTorch's handling of infinite maxima: the shift is 0 there.
  expect_matches_eager({"f32[2]", "logsumexp(x, 0)", {kInf, 1}});
  expect_matches_eager({"f32[2]", "logsumexp(x, 0)", {-kInf, -kInf}});
  expect_matches_eager({"f32[2]", "logsumexp(x, 0)", {kInf, -kInf}});
  expect_matches_eager({"f32[2]", "logsumexp(x, 0)", {-kInf, 0}});
  expect_matches_eager({"f32[2]", "logsumexp(x, 0)", {kNaN, 1}});
}

TEST(LowerReductions, EmptyReductionsGiveTheIdentity) {
  for (const char* call :
       {"sum(x, 1)", "prod(x, 1)", "any(x, 1)", "all(x, 1, keepdim=True)", "mean(x, 1)",
        "var(x, 1)", "std(x, 1, correction=0)", "logsumexp(x, [1])"}) {
    expect_matches_eager({"f32[2, 0]", call, {}});
  }
  expect_matches_eager({"i32[0]", "prod(x)", {}});
  expect_matches_eager({"f32[2, 0]", "argmax(x, 0)", {}});  // an empty result
}

TEST(LowerReductions, MeanIsTheRoundedSumOverN) {
  const Case mean{"f32[2, 3]", "mean(x, [0, 1])", {1, 2, 3, 4, 5, 7}};
  EXPECT_EQ(reductions_of(mean), (std::vector<P>{{R::Sum, DType::Float32}}));
  expect_matches_eager(mean);
  expect_matches_eager({"i32[4]", "mean(x, dtype='f32')", {1, 2, 3, 5}});
  // Three 3e38 overflow the f32 sum: the mean is inf, as PyTorch's sum(...).div_(3).
  expect_matches_eager({"f32[3]", "mean(x)", {3e38, 3e38, 3e38}});
}

}  // namespace
}  // namespace stax::lowering
