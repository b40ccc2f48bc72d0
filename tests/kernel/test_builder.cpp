// The IR-building handler: loads, values, CSE, reductions of every type, masks, indirect
// indices and the error checks of integer division.
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using index::Expr;
using kernel::LetKind;
using kernel::StmtKind;
using lowering::OpsHandler;
using lowering::OpsValue;
using lowering::PointwiseOp;
using lowering::ReductionType;

TEST(KernelBuilder, LoadsAreSharedAndOpsAreTyped) {
  auto s =
      schedule_text("def f(x: f32[64]):\n    a = mul(x, x)\n    b = add(a, x)\n    return b\n");
  const auto ks = lower_all(*s, {runtime::SimdLevel::Scalar, 1, {}});
  ASSERT_EQ(ks.size(), 1u);
  // x is read once although mul and add both use it.
  EXPECT_EQ(count_lets(ks[0], LetKind::Load), 1);
  EXPECT_EQ(count_lets(ks[0], LetKind::Compute), 2);
  const std::string text = kernel::print_kernel(ks[0]);
  EXPECT_TRUE(contains(text, "stax::op_mul(")) << text;
  EXPECT_TRUE(contains(text, "stax::op_add(")) << text;
  EXPECT_TRUE(contains(text, "in_x[x0]")) << text;
}

// An int64 graph built directly: c = a // b, d = a % b, e = trunc_div(a, b).
lowering::LoweredGraph integer_division_graph() {
  const std::vector<int64_t> n = {37};
  auto body = [](PointwiseOp op) {
    return [op](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      const OpsValue a = h.load("a", idx[0], DType::Int64);
      const OpsValue b = h.load("b", idx[0], DType::Int64);
      return lowering::apply(h, op, {a, b});
    };
  };
  return make_graph({{"a", DType::Int64, n}, {"b", DType::Int64, n}},
                    {make_buffer("c", DType::Int64, n, body(PointwiseOp::FloorDiv)),
                     make_buffer("d", DType::Int64, n, body(PointwiseOp::Remainder))});
}

TEST(KernelBuilder, IntegerDivisionChecksItsDivisor) {
  auto s = schedule_lowered(integer_division_graph());
  const auto ks = lower_all(*s, avx512());
  int checks = 0;
  std::string text;
  for (const auto& k : ks) {
    checks += count_stmts(k, [](const kernel::Stmt& st) {
      return st.kind == StmtKind::Check && st.check == kernel::CheckKind::DivisionByZero;
    });
    text += kernel::print_kernel(k);
    ASSERT_FALSE(k.errors.empty());
    EXPECT_EQ(k.errors[0].message, "ZeroDivisionError");
  }
  // One check per divisor value (the vector loop and its tail each check theirs).
  EXPECT_GE(checks, 2);
  EXPECT_TRUE(contains(text, "stax::any_zero(")) << text;
  EXPECT_TRUE(contains(text, "*stax_error = 1;")) << text;
  // The tail's dead lanes are filled with 1 before the check (37 = 2 * 16 + 5).
  EXPECT_TRUE(contains(text, "::set(")) << text;
}

TEST(KernelBuilder, FloatDivisionHasNoCheck) {
  auto s = schedule_text("def f(x: f32[8], y: f32[8]):\n    z = div(x, y)\n    return z\n");
  const auto ks = lower_all(*s, avx512());
  EXPECT_EQ(count_stmts(ks[0], [](const kernel::Stmt& st) { return st.kind == StmtKind::Check; }),
            0);
  EXPECT_TRUE(ks[0].errors.empty());
}

// A reduction of every type over rows of x (f32 [6, 50]); any/all over x > 0.5.
lowering::LoweredGraph every_reduction_graph() {
  const std::vector<int64_t> rows = {6};
  const std::vector<int64_t> red = {50};
  std::vector<lowering::ComputedBuffer> buffers;
  const ReductionType types[] = {
      ReductionType::Sum,         ReductionType::Prod,     ReductionType::Max, ReductionType::Min,
      ReductionType::ArgMax,      ReductionType::ArgMin,   ReductionType::Any, ReductionType::All,
      ReductionType::WelfordMean, ReductionType::WelfordM2};
  for (ReductionType t : types) {
    const bool logical = t == ReductionType::Any || t == ReductionType::All;
    auto body = [logical](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& r) {
      OpsValue x = h.load("x", idx[0] * Expr(50) + r[0], DType::Float32);
      if (logical) x = lowering::apply(h, PointwiseOp::Gt, {x, h.constant(0.5, DType::Float32)});
      return x;
    };
    buffers.push_back(
        make_buffer(std::string("out_") + std::string(lowering::reduction_name(t)),
                    lowering::reduction_result_dtype(t, logical ? DType::Bool : DType::Float32),
                    rows, body, red, t, rows));
  }
  return make_graph({{"x", DType::Float32, {6, 50}}}, std::move(buffers));
}

TEST(KernelBuilder, EveryReductionTypeBuildsVerifiesAndPrints) {
  for (const auto simd : {runtime::SimdLevel::Scalar, runtime::SimdLevel::Avx512}) {
    auto s = schedule_lowered(every_reduction_graph());
    const auto ks = lower_all(*s, {simd, 1, {}});
    std::string text;
    int accumulators = 0;
    for (const auto& k : ks) {
      text += kernel::print_kernel(k);
      accumulators += count_stmts(
          k, [](const kernel::Stmt& st) { return st.kind == StmtKind::AccumulatorInit; });
    }
    for (const char* api :
         {"stax::op_add(", "stax::op_mul(", "stax::op_maximum(", "stax::op_minimum(",
          "stax::argmax_update(", "stax::argmin_update(", "stax::op_logical_or(",
          "stax::op_logical_and(", "stax::welford_update("}) {
      EXPECT_TRUE(contains(text, api)) << api << "\n" << text;
    }
    EXPECT_TRUE(contains(text, ".m2")) << text;
    EXPECT_TRUE(contains(text, ".mean")) << text;
    if (simd == runtime::SimdLevel::Avx512) {
      for (const char* api : {"stax::reduce_sum(", "stax::reduce_max(", "stax::reduce_argmax(",
                              "stax::WelfordVec<float, 16>", "stax::welford_reduce("}) {
        EXPECT_TRUE(contains(text, api)) << api << "\n" << text;
      }
    }
    (void)accumulators;
  }
}

TEST(KernelBuilder, WelfordMeanAndM2OfOneValueShareOneAccumulator) {
  // var_mean's shape: one body reduces one value with WelfordM2 and WelfordMean (stored in
  // the two halves of `out`).
  const std::vector<int64_t> rows = {4};
  auto body = [](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& r) {
    const OpsValue x = h.load("x", idx[0] * Expr(41) + r[0], DType::Float64);
    h.store_reduction("out", idx[0] + Expr(4), h.reduction(ReductionType::WelfordM2, x));
    return x;  // run_body reduces it with WelfordMean into out[idx]
  };
  auto s = schedule_lowered(make_graph(
      {{"x", DType::Float64, {4, 41}}},
      {make_buffer("out", DType::Float64, rows, body, {41}, ReductionType::WelfordMean, {8})}));
  for (const auto simd : {runtime::SimdLevel::Scalar, runtime::SimdLevel::Avx512}) {
    const auto ks = lower_all(*s, {simd, 1, {}});
    ASSERT_EQ(ks.size(), 1u);
    EXPECT_EQ(
        count_stmts(ks[0],
                    [](const kernel::Stmt& st) { return st.kind == StmtKind::AccumulatorInit; }),
        1);
    EXPECT_EQ(
        count_stmts(ks[0], [](const kernel::Stmt& st) { return st.kind == StmtKind::Reduce; }),
        simd == runtime::SimdLevel::Scalar ? 1 : 2);  // vector loop and tail
    EXPECT_EQ(count_lets(ks[0], LetKind::AccumulatorResult), 2);
  }
}

// An index rule that wraps negative values, as index.Tensor's (ir::IndexRule).
const ir::IndexRule kWrappingRule{10, true, true, "index 'y': index {} is out of bounds"};

TEST(KernelBuilder, MasksReachLoadsAndIndirectIndicesAreChecked) {
  // y[i] = i < 5 ? table[idx[i]] : 0, with idx an int64 input and table f32[10].
  const std::vector<int64_t> n = {23};
  auto body = [](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
    const OpsValue i = h.index_value(idx[0], DType::Int64);
    const OpsValue in_range = lowering::apply(h, PointwiseOp::Lt, {i, h.constant(5, DType::Int64)});
    h.push_mask(in_range);
    const OpsValue position = h.load("idx", idx[0], DType::Int64);
    const Expr where = h.indirect_index(position, kWrappingRule);
    const OpsValue v = h.load("table", where, DType::Float32);
    h.pop_mask();
    return lowering::apply(h, PointwiseOp::Where, {in_range, v, h.constant(0, DType::Float32)});
  };
  auto s = schedule_lowered(make_graph({{"idx", DType::Int64, n}, {"table", DType::Float32, {10}}},
                                       {make_buffer("y", DType::Float32, n, body)}));
  for (const auto simd : {runtime::SimdLevel::Scalar, runtime::SimdLevel::Avx512}) {
    const auto ks = lower_all(*s, {simd, 1, {}});
    ASSERT_EQ(ks.size(), 1u);
    const std::string text = kernel::print_kernel(ks[0]);
    ASSERT_EQ(ks[0].errors.size(), 1u);
    EXPECT_EQ(ks[0].errors[0].kind, kernel::CheckKind::IndexOutOfRange);
    EXPECT_EQ(ks[0].errors[0].message, kWrappingRule.message);
    EXPECT_TRUE(contains(text, "stax::any_out_of_range(")) << text;
    EXPECT_TRUE(contains(text, "-10, 10")) << text;
    if (simd == runtime::SimdLevel::Avx512) {
      EXPECT_TRUE(contains(text, "::load_masked(")) << text;
      EXPECT_TRUE(contains(text, "::gather_masked(in_table")) << text;
      EXPECT_TRUE(contains(text, "::arange(")) << text;
    } else {
      EXPECT_TRUE(contains(text, " ? in_idx[x0] : ")) << text;
    }
  }
}

TEST(KernelBuilder, HalfValuesAreFloatsRoundedAfterEveryOp) {
  // y = (x + x) * x in float16: loaded as float, added in float, rounded through Half,
  // multiplied, stored as Half (the store rounds: the product is not rounded before it).
  const std::vector<int64_t> n = {8};
  auto body = [](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
    const OpsValue x = h.to_dtype(h.load("x", idx[0], DType::Float16), DType::Float32);
    const OpsValue sum = h.to_dtype(lowering::apply(h, PointwiseOp::Add, {x, x}), DType::Float16);
    const OpsValue product =
        lowering::apply(h, PointwiseOp::Mul, {h.to_dtype(sum, DType::Float32), x});
    return h.to_dtype(product, DType::Float16);
  };
  auto s = schedule_lowered(
      make_graph({{"x", DType::Float16, n}}, {make_buffer("y", DType::Float16, n, body)}));
  const auto ks = lower_all(*s, avx512());
  const std::string text = kernel::print_kernel(ks[0]);
  // Loaded from Half storage as float lanes, added, rounded through Half, stored as Half.
  EXPECT_EQ(ks[0].decisions.nests.at(0).form, kernel::KernelForm::Vectorized)
      << ks[0].decisions.nests[0].reason;
  EXPECT_TRUE(contains(text, "stax::Vec<float, 16>::load(in_x + x0, 8)")) << text;
  const size_t round = text.find("stax::round_to<stax::Half>(");
  EXPECT_NE(round, std::string::npos) << text;
  EXPECT_EQ(text.find("stax::round_to<", round + 1), std::string::npos) << text;
  EXPECT_TRUE(contains(text, ".store(y + x0, 8)")) << text;
}

}  // namespace
}  // namespace stax::kernel_test
