// Compiled kernels of the new code generator against the eager oracle and against reference
// values computed here: every SIMD level the CPU runs, 1 and 3 threads; the error code of
// integer division by zero and of indirect indices out of range.
#include <cmath>
#include <limits>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using index::Expr;
using lowering::OpsHandler;
using lowering::OpsValue;
using lowering::PointwiseOp;
using lowering::ReductionType;

CompileOptions options_for(runtime::SimdLevel simd, int threads) {
  CompileOptions o;
  o.simd = simd;
  o.num_threads = threads;
  return o;
}

void expect_matches_eager(const std::string& text) {
  const ir::Graph g = ir::parse_graph(text);
  std::vector<Tensor> inputs;
  uint64_t seed = 1;
  for (ir::ValueRef in : g.inputs()) {
    inputs.push_back(eager::random_tensor(g.value(in).type.dtype, g.value(in).type.sizes, seed++));
  }
  const auto expected = eager::run(g, inputs);
  const auto tolerances = output_tolerances(g);
  for (auto simd : runtime::runnable_simd_levels()) {
    for (int threads : {1, 3}) {
      const CompiledGraph c = compile(g, options_for(simd, threads));
      const auto actual = c.run(inputs);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t k = 0; k < actual.size(); ++k) {
        const auto d =
            eager::compare(actual[k], expected[k], tolerances[k].rtol, tolerances[k].atol);
        EXPECT_TRUE(d.within_tolerance)
            << "output " << k << " at " << runtime::simd_level_name(simd) << ", " << threads
            << " threads: max abs " << d.max_abs << "\n"
            << text;
      }
    }
  }
}

TEST(KernelEndToEnd, FloatProgramsInEveryFormMatchEager) {
  expect_matches_eager("def f(x: f32[100]):\n    y = exp(x)\n    return y\n");
  expect_matches_eager("def f(x: f32[300, 200]):\n    s = sum(x, dim=[0])\n    return s\n");
  expect_matches_eager(
      "def f(x: f32[100003]):\n    s = sum(x)\n    m = amin(x)\n    return s, m\n");
  expect_matches_eager(
      "def f(x: f32[130, 70], y: f32[70, 130]):\n    t = transpose(y, 0, 1)\n"
      "    z = mul(x, t)\n    return z\n");
  expect_matches_eager(
      "def f(x: f32[32, 1000]):\n    m = amax(x, dim=[1], keepdim=True)\n"
      "    d = sub(x, m)\n    e = exp(d)\n    s = sum(e, dim=[1], keepdim=True)\n"
      "    y = div(e, s)\n"
      "    return y\n");
  expect_matches_eager(
      "def f(x: f32[7, 33], y: f32[33]):\n    c = gt(x, y)\n    z = where(c, x, y)\n"
      "    return z, c\n");
}

lowering::LoweredGraph floor_divide_graph(int64_t n) {
  auto body = [](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
    return lowering::apply(h, PointwiseOp::FloorDiv,
                           {h.load("a", idx[0], DType::Int64), h.load("b", idx[0], DType::Int64)});
  };
  return make_graph({{"a", DType::Int64, {n}}, {"b", DType::Int64, {n}}},
                    {make_buffer("c", DType::Int64, {n}, body)});
}

TEST(KernelEndToEnd, IntegerDivisionByZeroRaisesZeroDivisionError) {
  const int64_t n = 37;  // two vectors and a tail on AVX-512
  Tensor a = Tensor::empty(DType::Int64, {n});
  Tensor b = Tensor::empty(DType::Int64, {n});
  for (int64_t i = 0; i < n; ++i) {
    a.set_flat(i, static_cast<double>(i * 7 - 100));
    b.set_flat(i, static_cast<double>(i % 5 - 2 == 0 ? 3 : i % 5 - 2));
  }
  for (auto simd : runtime::runnable_simd_levels()) {
    for (int threads : {1, 3}) {
      const CompiledGraph c = compile_lowered(floor_divide_graph(n), options_for(simd, threads));
      const Tensor out = c.run({a, b}).at(0);
      for (int64_t i = 0; i < n; ++i) {
        const auto x = static_cast<int64_t>(a.get_flat(i));
        const auto y = static_cast<int64_t>(b.get_flat(i));
        const int64_t q = x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0);  // Python //
        EXPECT_EQ(static_cast<int64_t>(out.get_flat(i)), q) << x << " // " << y;
      }
      // A zero divisor in the vector part, then only in the tail.
      for (int64_t at : {int64_t{5}, n - 1}) {
        Tensor z = Tensor::empty(DType::Int64, {n});
        for (int64_t i = 0; i < n; ++i) z.set_flat(i, i == at ? 0.0 : 1.0);
        try {
          c.run({a, z});
          ADD_FAILURE() << "no error for a zero divisor at " << at;
        } catch (const std::runtime_error& e) {
          EXPECT_TRUE(contains(e.what(), "ZeroDivisionError")) << e.what();
        }
      }
    }
  }
}

TEST(KernelEndToEnd, IndirectIndexOutOfRangeNamesTheOpAndTheValue) {
  const int64_t n = 23;
  auto body = [](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
    const ir::IndexRule wrapping{10, true, true, "index 'y': index {} is out of bounds"};
    const Expr where = h.indirect_index(h.load("idx", idx[0], DType::Int64), wrapping);
    return h.load("table", where, DType::Float32);
  };
  auto graph = [&] {
    return make_graph({{"idx", DType::Int64, {n}}, {"table", DType::Float32, {10}}},
                      {make_buffer("y", DType::Float32, {n}, body)});
  };
  Tensor table = Tensor::empty(DType::Float32, {10});
  for (int64_t i = 0; i < 10; ++i) table.set_flat(i, static_cast<double>(i) * 1.5);
  Tensor idx = Tensor::empty(DType::Int64, {n});
  for (int64_t i = 0; i < n; ++i) idx.set_flat(i, static_cast<double>((i * 3) % 20 - 10));
  for (auto simd : runtime::runnable_simd_levels()) {
    const CompiledGraph c = compile_lowered(graph(), options_for(simd, 2));
    const Tensor y = c.run({idx, table}).at(0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t k = static_cast<int64_t>(idx.get_flat(i));
      if (k < 0) k += 10;  // negative indices wrap once
      EXPECT_EQ(y.get_flat(i), table.get_flat(k)) << i;
    }
    Tensor bad = Tensor::empty(DType::Int64, {n});
    for (int64_t i = 0; i < n; ++i) bad.set_flat(i, i == 20 ? 12.0 : 1.0);
    try {
      c.run({bad, table});
      ADD_FAILURE() << "no error for index 12 of 10";
    } catch (const ir::IndexError& e) {
      EXPECT_TRUE(contains(e.what(), "index 'y': index 12 is out of bounds")) << e.what();
    }
  }
}

TEST(KernelEndToEnd, EveryReductionTypeOfRowsMatchesAReference) {
  // Rows of 41 elements (two vectors and a tail on AVX-512), with a NaN-free random input.
  const int64_t rows = 5, len = 41;
  Tensor x = Tensor::empty(DType::Float32, {rows, len});
  for (int64_t i = 0; i < rows * len; ++i) {
    x.set_flat(i, static_cast<double>(static_cast<float>(std::sin(static_cast<double>(i) * 1.7))));
  }
  const ReductionType types[] = {
      ReductionType::Sum,         ReductionType::Prod,     ReductionType::Max, ReductionType::Min,
      ReductionType::ArgMax,      ReductionType::ArgMin,   ReductionType::Any, ReductionType::All,
      ReductionType::WelfordMean, ReductionType::WelfordM2};
  for (ReductionType t : types) {
    const bool logical = t == ReductionType::Any || t == ReductionType::All;
    auto body = [logical](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>& r) {
      OpsValue v = h.load("x", idx[0] * Expr(41) + r[0], DType::Float32);
      if (logical) v = lowering::apply(h, PointwiseOp::Gt, {v, h.constant(-0.99, DType::Float32)});
      return v;
    };
    const DType out_dtype =
        lowering::reduction_result_dtype(t, logical ? DType::Bool : DType::Float32);
    for (auto simd : runtime::runnable_simd_levels()) {
      const CompiledGraph c = compile_lowered(
          make_graph({{"x", DType::Float32, {rows, len}}},
                     {make_buffer("out", out_dtype, {rows}, body, {len}, t, {rows})}),
          options_for(simd, 1));
      const Tensor out = c.run({x}).at(0);
      for (int64_t row = 0; row < rows; ++row) {
        double sum = 0, prod = 1, mx = -HUGE_VAL, mn = HUGE_VAL;
        int64_t amax = 0, amin = 0;
        bool any = false, all = true;
        for (int64_t j = 0; j < len; ++j) {
          const double v = x.get_flat(row * len + j);
          sum += v;
          prod *= v;
          if (v > mx) mx = v, amax = j;
          if (v < mn) mn = v, amin = j;
          any = any || v > -0.99;
          all = all && v > -0.99;
        }
        const double mean = sum / static_cast<double>(len);
        double m2 = 0;
        for (int64_t j = 0; j < len; ++j) {
          m2 += (x.get_flat(row * len + j) - mean) * (x.get_flat(row * len + j) - mean);
        }
        const double got = out.get_flat(row);
        // float32 over 41 elements: 41 roundings of at most 2^-24 relative each.
        const double tol = 41 * std::ldexp(1.0, -24) * 4;
        const std::string what = std::string(lowering::reduction_name(t)) + " at " +
                                 std::string(runtime::simd_level_name(simd)) + " row " +
                                 std::to_string(row);
        switch (t) {
          case ReductionType::Sum:
            EXPECT_NEAR(got, sum, tol * 41) << what;
            break;
          case ReductionType::Prod:
            EXPECT_NEAR(got, prod, std::fabs(prod) * tol + 1e-30) << what;
            break;
          case ReductionType::Max:
            EXPECT_EQ(got, mx) << what;
            break;
          case ReductionType::Min:
            EXPECT_EQ(got, mn) << what;
            break;
          case ReductionType::ArgMax:
            EXPECT_EQ(got, static_cast<double>(amax)) << what;
            break;
          case ReductionType::ArgMin:
            EXPECT_EQ(got, static_cast<double>(amin)) << what;
            break;
          case ReductionType::Any:
            EXPECT_EQ(got != 0, any) << what;
            break;
          case ReductionType::All:
            EXPECT_EQ(got != 0, all) << what;
            break;
          case ReductionType::WelfordMean:
            EXPECT_NEAR(got, mean, tol) << what;
            break;
          case ReductionType::WelfordM2:
            EXPECT_NEAR(got, m2, tol * m2 + 1e-5) << what;
            break;
        }
      }
    }
  }
}

TEST(KernelEndToEnd, ExplainIrShowsEveryPass) {
  CompileOptions o = options_for(runtime::SimdLevel::Avx512, 2);
  o.record_ir = true;
  const auto c = analyze(
      ir::parse_graph("def f(x: f32[64, 100]):\n    s = sum(x, dim=[1])\n    return s\n"), o);
  ASSERT_FALSE(c->module.ir_log.empty());
  std::string all;
  for (const auto& step : c->module.ir_log) all += step;
  for (const char* pass :
       {"after build ===", "after kernel form ===", "after parallel depth ===",
        "after apply kernel form ===", "after cascade blocking ===", "after split reductions ===",
        "after parallelize ===", "after simplify ==="}) {
    EXPECT_TRUE(contains(all, pass)) << pass;
  }
  EXPECT_TRUE(contains(
      all, "vectorized(W=16) over r0 (along the innermost reduction loop r0; loads: 1 contiguous)"))
      << all;
  // Without --ir nothing is kept.
  EXPECT_TRUE(analyze(ir::parse_graph("def f(x: f32[4]):\n    y = neg(x)\n    return y\n"),
                      options_for(runtime::SimdLevel::Avx512, 1))
                  ->module.ir_log.empty());
}

}  // namespace
}  // namespace stax::kernel_test
