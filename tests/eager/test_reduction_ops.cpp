// Tests of the eager reductions of issue 6: prod, argmax/argmin, any/all, var/std and
// logsumexp, with PyTorch's result dtypes, NaN/inf rules, correction and empty reductions.
// Expected values come from torch 2.13.0 (CPU).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "eager_test_util.h"

namespace stax::eager {
namespace {

using testing::int64_values;
using testing::make;
using testing::run1;
using testing::values;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// `value` rounded to f16 (through a tensor element, as the interpreter stores it).
double round_to_f16_for_test(double value) {
  Tensor t = Tensor::empty(DType::Float16, {});
  t.set({}, value);
  return t.get({});
}

// Runs `r = CALL` on one input declared as `decl` (e.g. "f32[2, 3]").
Tensor reduce(const std::string& decl, const std::string& call, const Tensor& x) {
  return run1("def g(x: " + decl + "):\n  r = " + call + "\n  return r\n", {x});
}

TEST(ReductionOps, ProdWidensIntegersToInt64) {
  Tensor x = make(DType::Int8, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = reduce("i8[2, 3]", "prod(x)", x);
  EXPECT_EQ(r.dtype(), DType::Int64);
  EXPECT_EQ(int64_values(r), (std::vector<int64_t>{720}));
  r = reduce("i8[2, 3]", "prod(x, 1)", x);
  EXPECT_EQ(int64_values(r), (std::vector<int64_t>{6, 120}));
  // i32 * i32 does not wrap at 32 bits: 65536 * 65536 * 3.
  Tensor i = make(DType::Int32, {3}, {65536, 65536, 3});
  EXPECT_EQ(int64_values(reduce("i32[3]", "prod(x)", i))[0], int64_t{12884901888});
  // int64 products wrap modulo 2^64: (2^40 + 1)(2^30 + 3).
  Tensor w = Tensor::empty(DType::Int64, {2});
  static_cast<int64_t*>(w.data())[0] = (int64_t{1} << 40) + 1;
  static_cast<int64_t*>(w.data())[1] = (int64_t{1} << 30) + 3;
  EXPECT_EQ(int64_values(reduce("i64[2]", "prod(x)", w))[0], int64_t{3299608625155});
  Tensor b = make(DType::Bool, {2}, {1, 0});
  r = reduce("bool[2]", "prod(x)", b);
  EXPECT_EQ(r.dtype(), DType::Int64);
  EXPECT_EQ(int64_values(r)[0], 0);
}

TEST(ReductionOps, ProdDtypeAndFloats) {
  // dtype=u8: 200 * 2 wraps to 144.
  Tensor u = make(DType::UInt8, {2}, {200, 2});
  Tensor r = reduce("u8[2]", "prod(x, dtype='u8')", u);
  EXPECT_EQ(r.dtype(), DType::UInt8);
  EXPECT_EQ(r.get({}), 144);
  Tensor q = make(DType::UInt8, {2, 2}, {1, 2, 3, 4});
  r = reduce("u8[2, 2]", "prod(x, 1, keepdim=True)", q);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values(r), (std::vector<double>{2, 12}));
  Tensor f = make(DType::Float32, {2, 2}, {1.5, 2, -3, 0.5});
  EXPECT_EQ(values(reduce("f32[2, 2]", "prod(x, dim=0)", f)), (std::vector<double>{-4.5, 1.0}));
  // f16: 300 * 300 overflows the f16 range.
  Tensor h = make(DType::Float16, {2}, {300, 300});
  r = reduce("f16[2]", "prod(x)", h);
  EXPECT_EQ(r.dtype(), DType::Float16);
  EXPECT_EQ(r.get({}), kInf);
}

TEST(ReductionOps, EmptyReductionsGiveTheIdentity) {
  Tensor e = Tensor::empty(DType::Float32, {2, 0});
  EXPECT_EQ(values(reduce("f32[2, 0]", "prod(x, 1, keepdim=True)", e)),
            (std::vector<double>{1, 1}));
  EXPECT_EQ(values(reduce("f32[2, 0]", "sum(x, 1)", e)), (std::vector<double>{0, 0}));
  Tensor any = reduce("f32[2, 0]", "any(x, 1)", e);
  EXPECT_EQ(any.dtype(), DType::Bool);
  EXPECT_EQ(values(any), (std::vector<double>{0, 0}));
  EXPECT_EQ(values(reduce("f32[2, 0]", "all(x, 1)", e)), (std::vector<double>{1, 1}));
  EXPECT_EQ(int64_values(reduce("i32[0]", "prod(x)", Tensor::empty(DType::Int32, {0}))),
            (std::vector<int64_t>{1}));
  for (const char* call : {"mean(x, 1)", "var(x, 1)", "std(x, 1, correction=0)"}) {
    for (double v : values(reduce("f32[2, 0]", call, e))) EXPECT_TRUE(std::isnan(v)) << call;
  }
  EXPECT_EQ(values(reduce("f32[2, 0]", "logsumexp(x, [1])", e)),
            (std::vector<double>{-kInf, -kInf}));
}

TEST(ReductionOps, ArgMaxAndArgMinTakeTheFirstExtreme) {
  Tensor ties = make(DType::Int64, {4}, {3, 1, 3, 2});
  Tensor r = reduce("i64[4]", "argmax(x)", ties);
  EXPECT_EQ(r.dtype(), DType::Int64);
  EXPECT_EQ(int64_values(r), (std::vector<int64_t>{0}));
  EXPECT_EQ(int64_values(reduce("i64[4]", "argmin(x)", make(DType::Int64, {4}, {1, 1, 0, 0}))),
            (std::vector<int64_t>{2}));
  Tensor i8 = make(DType::Int8, {2, 3}, {3, 1, 1, 0, 2, 0});
  EXPECT_EQ(int64_values(reduce("i8[2, 3]", "argmin(x, 1)", i8)), (std::vector<int64_t>{1, 0}));
  Tensor u8 = make(DType::UInt8, {2, 2}, {3, 255, 255, 0});
  EXPECT_EQ(int64_values(reduce("u8[2, 2]", "argmax(x, dim=1)", u8)), (std::vector<int64_t>{1, 0}));
  Tensor inf = make(DType::Float32, {3}, {-kInf, kInf, kInf});
  EXPECT_EQ(int64_values(reduce("f32[3]", "argmax(x)", inf))[0], 1);
  Tensor zeros = make(DType::Float32, {2}, {-0.0, 0.0});
  EXPECT_EQ(int64_values(reduce("f32[2]", "argmax(x)", zeros))[0], 0);
}

TEST(ReductionOps, ArgReductionsLetTheFirstNaNWin) {
  Tensor x = make(DType::Float32, {4}, {1, kNaN, 3, kNaN});
  EXPECT_EQ(int64_values(reduce("f32[4]", "argmax(x)", x))[0], 1);
  Tensor y = make(DType::Float32, {4}, {1, kNaN, -3, kNaN});
  EXPECT_EQ(int64_values(reduce("f32[4]", "argmin(x)", y))[0], 1);
  Tensor m = make(DType::Float32, {2, 2}, {1, kNaN, kNaN, 5});
  EXPECT_EQ(int64_values(reduce("f32[2, 2]", "argmax(x, 1)", m)), (std::vector<int64_t>{1, 0}));
  Tensor h = make(DType::BFloat16, {3}, {kNaN, 7, kNaN});
  EXPECT_EQ(int64_values(reduce("bf16[3]", "argmin(x)", h))[0], 0);
}

TEST(ReductionOps, ArgReductionsFlattenWithoutDim) {
  Tensor x = make(DType::Int64, {2, 2, 2}, {1, 9, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(int64_values(reduce("i64[2, 2, 2]", "argmax(x)", x))[0], 1);
  EXPECT_EQ(int64_values(reduce("i64[2, 2, 2]", "argmax(x, 0)", x)),
            (std::vector<int64_t>{1, 0, 1, 1}));
  Tensor y = make(DType::Int64, {2, 2, 2}, {1, 9, 3, 4, 5, 0, 7, 8});
  Tensor r = reduce("i64[2, 2, 2]", "argmin(x, 2, keepdim=True)", y);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(int64_values(r), (std::vector<int64_t>{0, 0, 1, 0}));
  Tensor z = make(DType::Int64, {2, 2}, {1, 5, 7, 2});
  r = reduce("i64[2, 2]", "argmax(x, keepdim=True)", z);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(int64_values(r), (std::vector<int64_t>{2}));
  r = reduce("f32[]", "argmax(x)", make(DType::Float32, {}, {3}));
  EXPECT_EQ(int64_values(r), (std::vector<int64_t>{0}));
}

TEST(ReductionOps, AnyAndAll) {
  Tensor i = make(DType::Int64, {2, 2}, {0, 1, 0, 0});
  Tensor r = reduce("i64[2, 2]", "any(x, 1)", i);
  EXPECT_EQ(r.dtype(), DType::Bool);
  EXPECT_EQ(values(r), (std::vector<double>{1, 0}));
  EXPECT_EQ(values(reduce("i64[2, 2]", "any(x, [0, 1])", i)), (std::vector<double>{1}));
  // NaN is nonzero; -0.0 is zero.
  Tensor f = make(DType::Float32, {2}, {0, kNaN});
  EXPECT_EQ(values(reduce("f32[2]", "any(x)", f)), (std::vector<double>{1}));
  Tensor z = make(DType::Float32, {2, 2}, {0, 0, 0, -0.0});
  EXPECT_EQ(values(reduce("f32[2, 2]", "any(x, 1)", z)), (std::vector<double>{0, 0}));
  Tensor a = make(DType::Int64, {2, 2}, {1, 2, 0, 3});
  EXPECT_EQ(values(reduce("i64[2, 2]", "all(x, 0)", a)), (std::vector<double>{0, 1}));
  // u8 inputs give u8 results (as PyTorch).
  Tensor u = make(DType::UInt8, {2, 2}, {1, 2, 0, 3});
  r = reduce("u8[2, 2]", "all(x, 1)", u);
  EXPECT_EQ(r.dtype(), DType::UInt8);
  EXPECT_EQ(values(r), (std::vector<double>{1, 0}));
  r = reduce("u8[2, 2]", "any(x)", u);
  EXPECT_EQ(r.dtype(), DType::UInt8);
  EXPECT_EQ(r.get({}), 1);
}

TEST(ReductionOps, VarAndStdWithCorrection) {
  Tensor x = make(DType::Float32, {2, 3}, {1, 2, 4, 3, 3, 3});
  // f32 results of torch 2.13.0.
  EXPECT_EQ(values(reduce("f32[2, 3]", "var(x, 1)", x)),
            (std::vector<double>{2.3333332538604736, 0.0}));
  EXPECT_EQ(values(reduce("f32[2, 3]", "var(x, 1, correction=0)", x)),
            (std::vector<double>{1.5555555820465088, 0.0}));
  EXPECT_EQ(reduce("f32[2, 3]", "var(x, correction=0.5)", x).get({}), 0.9696969985961914);
  EXPECT_EQ(values(reduce("f32[2, 3]", "std(x, [1])", x)),
            (std::vector<double>{1.5275251865386963, 0.0}));
  Tensor r = reduce("f32[2, 3]", "var(x, 0, keepdim=True)", x);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(r), (std::vector<double>{2.0, 0.5, 0.5}));
  EXPECT_EQ(reduce("f32[2, 3]", "var(x)", x).get({}), 1.0666667222976685);
  EXPECT_EQ(reduce("f32[2, 3]", "std(x)", x).get({}), 1.0327955484390259);
  Tensor d = make(DType::Float64, {3}, {1, 2, 4});
  EXPECT_EQ(reduce("f64[3]", "var(x)", d).get({}), 2.333333333333333);
  Tensor h = make(DType::Float16, {3}, {1, 2, 4});
  r = reduce("f16[3]", "var(x)", h);
  EXPECT_EQ(r.dtype(), DType::Float16);
  EXPECT_EQ(r.get({}), 2.333984375);
  EXPECT_EQ(reduce("bf16[3]", "std(x)", make(DType::BFloat16, {3}, {1, 2, 4})).get({}), 1.53125);
}

TEST(ReductionOps, VarWithTooFewElements) {
  // M2 / max(0, N - correction): 0 / 0 is NaN, M2 > 0 over 0 is inf.
  Tensor one = make(DType::Float32, {1}, {1});
  EXPECT_TRUE(std::isnan(reduce("f32[1]", "var(x)", one).get({})));
  EXPECT_EQ(reduce("f32[1]", "var(x, correction=0)", one).get({}), 0.0);
  EXPECT_TRUE(std::isnan(reduce("f32[1]", "std(x)", one).get({})));
  Tensor two = make(DType::Float32, {2}, {1, 2});
  EXPECT_EQ(reduce("f32[2]", "var(x, correction=2)", two).get({}), kInf);
  EXPECT_EQ(reduce("f32[2]", "var(x, correction=3)", two).get({}), kInf);
  EXPECT_EQ(reduce("f32[2]", "std(x, correction=-1)", two).get({}), 0.40824830532073975);
  Tensor same = make(DType::Float32, {2}, {1, 1});
  EXPECT_TRUE(std::isnan(reduce("f32[2]", "var(x, correction=2)", same).get({})));
  EXPECT_EQ(reduce("f32[3]", "std(x, correction=3)", make(DType::Float32, {3}, {1, 2, 4})).get({}),
            kInf);
  // inf or NaN anywhere gives NaN.
  EXPECT_TRUE(std::isnan(reduce("f32[2]", "var(x)", make(DType::Float32, {2}, {1, kInf})).get({})));
  EXPECT_TRUE(std::isnan(reduce("f32[2]", "std(x)", make(DType::Float32, {2}, {kNaN, 1})).get({})));
}

TEST(ReductionOps, VarAccumulatesInDouble) {
  // 1e4 + k * 1e-3: a float32 running mean loses the deviations. Over a dim (Welford in
  // double) the variance of {1e4 + 0.001 k : k = 0..3} (as f32 values) is exact, rounded
  // once; a whole tensor's var is PyTorch's two passes, whose float32 mean (10000.001953125
  // here, eager's 10000.0009765625: the same deviations, mirrored) shifts it (torch 2.13.0).
  std::vector<double> data;
  double sum = 0;
  for (int k = 0; k < 4; ++k) {
    data.push_back(static_cast<float>(1e4 + 0.001 * k));
    sum += data.back();
  }
  const double mean = sum / 4;
  double m2 = 0;
  for (double v : data) m2 += (v - mean) * (v - mean);
  Tensor x = make(DType::Float32, {4}, data);
  EXPECT_EQ(reduce("f32[4]", "var(x)", x).get({}), 1.9073486328125e-06);
  std::vector<double> rows = data;
  rows.insert(rows.end(), data.begin(), data.end());
  Tensor two = make(DType::Float32, {2, 4}, rows);
  EXPECT_EQ(values(reduce("f32[2, 4]", "var(x, 1)", two)),
            std::vector<double>(2, static_cast<float>(m2 / 3)));
}

TEST(ReductionOps, VarianceNearTheFloat32RangeLimits) {
  // Squares of 1e30 overflow float32 and of 1e-30 underflow; PyTorch's std keeps them in
  // double (its var overflows, or underflows, only when rounded). torch 2.13.0's values.
  Tensor big = make(DType::Float32, {4}, {1e30, 2e30, 3e30, 4e30});
  EXPECT_EQ(reduce("f32[4]", "std(x)", big).get({}), 1.2909945044578055e+30);
  EXPECT_EQ(reduce("f32[4]", "var(x)", big).get({}), kInf);
  Tensor tiny = make(DType::Float32, {4}, {1e-30, 2e-30, 3e-30, 4e-30});
  EXPECT_EQ(reduce("f32[4]", "std(x)", tiny).get({}), 1.2909944760730667e-30);
  EXPECT_EQ(reduce("f32[4]", "var(x)", tiny).get({}), 0.0);
  Tensor m = make(DType::Float32, {2, 3}, {1e30, 2e30, 3e30, 4e30, -1e30, 5e30});
  EXPECT_EQ(values(reduce("f32[2, 3]", "std(x, 1)", m)),
            (std::vector<double>{9.999999394896025e+29, 3.2145503770853187e+30}));
  EXPECT_EQ(
      values(reduce("f32[2, 3]", "std(x, 0, correction=0)", m)),
      (std::vector<double>{1.500000098129063e+30, 1.500000098129063e+30, 1.0000000150474662e+30}));
  Tensor s = make(DType::Float32, {2, 3}, {1e-30, 2e-30, 3e-30, 4e-30, -1e-30, 5e-30});
  EXPECT_EQ(values(reduce("f32[2, 3]", "std(x, 1)", s)),
            (std::vector<double>{1.0000000031710769e-30, 3.214550109950738e-30}));
  // At 1e19 the variance fits in float32 but M2 does not.
  Tensor e19 = make(DType::Float32, {2, 4}, {1e19, -1e19, 2e19, -2e19, 1e19, -1e19, 2e19, -2e19});
  EXPECT_EQ(values(reduce("f32[2, 4]", "var(x, 1)", e19)),
            std::vector<double>(2, 3.3333332943699295e+38));
  // A whole tensor's var/std take mean() first, whose float32 sum overflows here; var_mean
  // (Welford) and a var over a dim do not.
  Tensor huge = make(DType::Float32, {4}, {3e38, 3e38, 3e38, 3e38});
  EXPECT_EQ(reduce("f32[4]", "var(x)", huge).get({}), kInf);
  EXPECT_EQ(reduce("f32[4]", "std(x)", huge).get({}), kInf);
  std::vector<Tensor> vm =
      testing::run_text("def g(x: f32[4]):\n  v, m = var_mean(x)\n  return v, m\n", {huge});
  EXPECT_EQ(vm[0].get({}), 0.0);
  EXPECT_EQ(vm[1].get({}), 3.0000000054977558e+38);
  Tensor huge_rows = make(DType::Float32, {2, 4}, std::vector<double>(8, 3e38));
  EXPECT_EQ(values(reduce("f32[2, 4]", "var(x, 1)", huge_rows)), (std::vector<double>{0.0, 0.0}));
  // Empty: NaN whatever the correction.
  EXPECT_TRUE(std::isnan(
      reduce("f32[0]", "var(x, correction=-1)", Tensor::empty(DType::Float32, {0})).get({})));
}

TEST(ReductionOps, VarMeanReturnsVarAndMean) {
  const char* program = "def g(x: f32[2, 3]):\n  v, m = var_mean(x, 1)\n  return v, m\n";
  Tensor x = make(DType::Float32, {2, 3}, {1, 2, 4, 3, 3, 3});
  std::vector<Tensor> r = testing::run_text(program, {x});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(values(r[0]), (std::vector<double>{2.3333332538604736, 0.0}));
  EXPECT_EQ(values(r[1]), (std::vector<double>{2.3333332538604736, 3.0}));
  // The mean is Welford's: it does not overflow where mean()'s f32 sum does (torch 2.13.0).
  Tensor big = make(DType::Float32, {3}, {1e38, 3e38, 3e38});
  r = testing::run_text("def g(x: f32[3]):\n  v, m = var_mean(x)\n  return v, m\n", {big});
  EXPECT_EQ(r[0].get({}), kInf);
  EXPECT_EQ(r[1].get({}), 2.3333334277534083e+38);
  EXPECT_EQ(run1("def g(x: f32[3]):\n  m = mean(x)\n  return m\n", {big}).get({}), kInf);
  Tensor h = make(DType::Float16, {3}, {1, 2, 4});
  r = testing::run_text(
      "def g(x: f16[3]):\n  v, m = var_mean(x, correction=0, keepdim=True)\n  return m, v\n", {h});
  EXPECT_EQ(r[0].dtype(), DType::Float16);
  EXPECT_EQ(r[0].sizes(), (std::vector<int64_t>{1}));
  EXPECT_EQ(r[0].get({0}), 2.333984375);
  EXPECT_EQ(r[1].get({0}), round_to_f16_for_test(14.0 / 9.0));
  // Empty: both NaN.
  r = testing::run_text("def g(x: f32[2, 0]):\n  v, m = var_mean(x, 1)\n  return v, m\n",
                        {Tensor::empty(DType::Float32, {2, 0})});
  for (const Tensor& t : r) {
    for (double v : values(t)) EXPECT_TRUE(std::isnan(v));
  }
}

TEST(ReductionOps, LogSumExp) {
  Tensor x = make(DType::Float32, {2, 2}, {1, 2, 3, 4});
  // torch 2.13.0 (its exp/log are within an ulp of the correctly rounded ones eager uses).
  std::vector<double> r = values(reduce("f32[2, 2]", "logsumexp(x, [1])", x));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FLOAT_EQ(r[0], 2.3132617473602295);
  EXPECT_FLOAT_EQ(r[1], 4.31326150894165);
  Tensor k = reduce("f32[2, 2]", "logsumexp(x, 0, keepdim=True)", x);
  EXPECT_EQ(k.sizes(), (std::vector<int64_t>{1, 2}));
  EXPECT_FLOAT_EQ(values(k)[0], 3.1269280910491943);
  EXPECT_FLOAT_EQ(values(k)[1], 4.126927852630615);
  // Large values do not overflow: the maximum is shifted out.
  EXPECT_FLOAT_EQ(
      reduce("f32[2]", "logsumexp(x, 0)", make(DType::Float32, {2}, {1000, 1000})).get({}),
      1000.6931762695312);
  Tensor i = reduce("i64[3]", "logsumexp(x, 0)", make(DType::Int64, {3}, {1, 2, 3}));
  EXPECT_EQ(i.dtype(), DType::Float32);
  EXPECT_FLOAT_EQ(i.get({}), 3.4076058864593506);
  Tensor h = reduce("f16[3]", "logsumexp(x, 0)", make(DType::Float16, {3}, {1, 2, 3}));
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(h.get({}), 3.408203125);
  EXPECT_EQ(reduce("f64[2]", "logsumexp(x, 0)", make(DType::Float64, {2}, {1, 2})).get({}),
            2.313261687518223);
}

TEST(ReductionOps, LogSumExpOfInfiniteMaxima) {
  auto lse = [](std::vector<double> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return reduce("f32[" + std::to_string(n) + "]", "logsumexp(x, 0)", make(DType::Float32, {n}, v))
        .get({});
  };
  EXPECT_EQ(lse({kInf, 1}), kInf);
  EXPECT_EQ(lse({-kInf, -kInf}), -kInf);
  EXPECT_EQ(lse({kInf, -kInf}), kInf);
  EXPECT_EQ(lse({kInf, kInf}), kInf);
  EXPECT_EQ(lse({-kInf, 0}), 0.0);
  EXPECT_TRUE(std::isnan(lse({kNaN, 1})));
}

TEST(ReductionOps, EmptyReductionsWithoutIdentityAreErrors) {
  for (const char* call : {"argmax(x, 1)", "argmin(x)", "amax(x)", "amin(x, [1])"}) {
    try {
      ir::parse_graph("def g(x: f32[2, 0]):\n  r = " + std::string(call) + "\n  return r\n");
      ADD_FAILURE() << call << " was accepted";
    } catch (const ir::ParseError& e) {
      const std::string op = std::string(call).substr(0, std::string(call).find('('));
      EXPECT_NE(std::string(e.what()).find(op + ": argument 'self': cannot reduce over dim 1 of "
                                                "size 0"),
                std::string::npos)
          << e.what();
    }
  }
  // Reducing the non-empty dim of an empty tensor is fine.
  Tensor r = reduce("f32[2, 0]", "argmax(x, 0)", Tensor::empty(DType::Float32, {2, 0}));
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{0}));
}

}  // namespace
}  // namespace stax::eager
