// Independent vector accumulators (Section 8.1, Proposition 8.1(2)) and streaming stores
// (issue 6 point 5): the decisions in the kernel IR, and compiled kernels of both against
// exact references at lengths around the unrolled group of W vectors.
#include <cmath>
#include <limits>

#include "driver/compiler.h"
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using index::Expr;
using kernel::StmtKind;
using lowering::OpsHandler;
using lowering::OpsValue;
using lowering::PointwiseOp;
using lowering::ReductionType;

std::vector<runtime::SimdLevel> vector_levels() {
  std::vector<runtime::SimdLevel> out;
  for (auto l : {runtime::SimdLevel::Avx2, runtime::SimdLevel::Avx512}) {
    if (runtime::cpu_supports(l)) out.push_back(l);
  }
  return out;
}

int max_independent(const kernel::Kernel& k) {
  int w = 1;
  for (const auto& a : k.accumulators) w = std::max(w, a.independent);
  return w;
}

int reduces_on_other_parts(const kernel::Kernel& k) {
  return count_stmts(
      k, [](const kernel::Stmt& s) { return s.kind == StmtKind::Reduce && s.part > 0; });
}

TEST(IndependentAccumulators, FullSumAtAvx512GetsSeveralAccumulators) {
  auto s = schedule_text(
      "def f(x: f32[4096, 1024]):\n    s = sum(x)\n    m = amax(x)\n    return s, m\n");
  for (int threads : {1, 4}) {
    const auto k = lower_all(*s, avx512(threads)).at(0);
    // Float add and max: latency 4 x 2 per cycle = 8 chains; 2 accumulators and 1 loaded value
    // per copy of the body fit 10 times in 32 registers.
    for (const auto& a : k.accumulators) EXPECT_EQ(a.independent, 8) << a.name();
    EXPECT_GT(reduces_on_other_parts(k), 0);
    const std::string& reason = k.decisions.nests.at(0).reason;
    EXPECT_TRUE(contains(reason, "8 accumulators (add latency 4 x 2 per cycle")) << reason;
    // What `stax explain --ir` prints for the nest.
    EXPECT_TRUE(contains(kernel::describe_after_pass("simplify", k), reason));
    const std::string text = kernel::print_kernel(k);
    // The block parts are combined before the fold into the double outer accumulator.
    EXPECT_TRUE(contains(text,
                         "acc0_blk = stax::op_add(stax::op_add(stax::op_add(acc0_blk, "
                         "acc0_blk_1), stax::op_add(acc0_blk_2, acc0_blk_3))"))
        << text;
    EXPECT_TRUE(contains(text, "acc0_blk_7 = stax::Vec<float, 16>(0.0f);")) << text;
    EXPECT_TRUE(contains(text, "acc1_7 = stax::op_maximum(acc1_7,")) << text;
  }
  // AVX2 has 16 registers: 3 per copy bound W to 5, the power of two below is 4.
  const auto avx2 = lower_all(*s, {runtime::SimdLevel::Avx2, 1, {}}).at(0);
  EXPECT_EQ(max_independent(avx2), 4);
}

TEST(IndependentAccumulators, ShortLoopsAndArgReductionsKeepOneAccumulator) {
  // 3 vectors per row: no unrolling.
  auto shorter = schedule_text("def f(x: f32[4, 48]):\n    s = sum(x, dim=[1])\n    return s\n");
  const auto k = lower_all(*shorter, avx512()).at(0);
  EXPECT_EQ(max_independent(k), 1);
  EXPECT_EQ(reduces_on_other_parts(k), 0);
  EXPECT_TRUE(contains(k.decisions.nests.at(0).reason, "1 accumulator ("))
      << k.decisions.nests[0].reason;
  // A row of 64 vectors: int64 sum at latency 1 x 2 per cycle on AVX-512 is 2 chains.
  auto ints = schedule_text("def f(x: i64[4, 1024]):\n    s = sum(x, dim=[1])\n    return s\n");
  EXPECT_EQ(max_independent(lower_all(*ints, avx512()).at(0)), 2);
  // Argmax keeps one part (no tie-breaking combination of parts).
  auto arg = schedule_text("def f(x: f32[4, 4096]):\n    i = argmax(x, 1)\n    return i\n");
  EXPECT_EQ(max_independent(lower_all(*arg, avx512()).at(0)), 1);
}

// A full reduction of x[n] of `type` over `dtype` values (sums of integers in int64).
lowering::LoweredGraph full_reduction(ReductionType type, DType dtype, int64_t n) {
  const bool integer_sum = type == ReductionType::Sum && is_integral(dtype);
  auto body = [dtype, integer_sum](OpsHandler& h, const std::vector<Expr>&,
                                   const std::vector<Expr>& r) {
    OpsValue v = h.load("x", r[0], dtype);
    return integer_sum ? h.to_dtype(v, DType::Int64) : v;
  };
  const DType value = integer_sum ? DType::Int64 : dtype;
  return make_graph(
      {{"x", dtype, {n}}},
      {make_buffer("out", lowering::reduction_result_dtype(type, value), {}, body, {n}, type, {})});
}

CompiledGraph compile_full(ReductionType type, DType dtype, int64_t n, runtime::SimdLevel simd,
                           int threads) {
  CompileOptions o;
  o.simd = simd;
  o.num_threads = threads;
  return compile_lowered(full_reduction(type, dtype, n), o);
}

TEST(IndependentAccumulators, EveryReductionWithPartsGetsThem) {
  // 4096 elements: 256 vectors of 16 floats or int32 widened to int64 (8 lanes), 64 of bools.
  struct Case {
    ReductionType type;
    DType dtype;
    int w;
  };
  const Case cases[] = {
      {ReductionType::Sum, DType::Float32, 8}, {ReductionType::Sum, DType::Int32, 2},
      {ReductionType::Max, DType::Float32, 8}, {ReductionType::Prod, DType::Float64, 8},
      {ReductionType::Any, DType::Bool, 4},    {ReductionType::ArgMax, DType::Float32, 1}};
  for (const Case& c : cases) {
    auto s = schedule_lowered(full_reduction(c.type, c.dtype, 4096));
    EXPECT_EQ(max_independent(lower_all(*s, avx512()).at(0)), c.w)
        << lowering::reduction_name(c.type) << " of " << dtype_name(c.dtype);
  }
}

// Lengths around multiples of W x lanes for W = 8 and 4 at 16 and 8 lanes, plus one with a
// cascade block (2048 floats) and a remainder inside the last block.
std::vector<int64_t> lengths() {
  return {1,
          15,
          31,
          63,
          64,
          65,
          127,
          128,
          129,
          255,
          256,
          257,
          16 * 8 * 3 + 16 * 2 + 5,
          4096 + 128 * 3 + 16 * 2 + 5};
}

TEST(IndependentAccumulators, SumsAndMaximaOfEveryPartReachTheResult) {
  for (auto simd : vector_levels()) {
    for (int threads : {1, 3}) {
      for (int64_t n : lengths()) {
        const std::string where = std::string(runtime::simd_level_name(simd)) + ", " +
                                  std::to_string(threads) + " threads, n = " + std::to_string(n);
        // Distinct small integers: every float partial sum is exact, so the compiled sum must
        // equal the reference exactly, and dropping any element's part changes it.
        Tensor xf = Tensor::empty(DType::Float32, {n});
        Tensor xi = Tensor::empty(DType::Int32, {n});
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double v = static_cast<double>(i % 61) + 1.0;  // positive: no part sums to 0
          xf.set_flat(i, v);
          xi.set_flat(i, v * 1000003.0);
          sum += v;
        }
        EXPECT_EQ(compile_full(ReductionType::Sum, DType::Float32, n, simd, threads)
                      .run({xf})
                      .at(0)
                      .get_flat(0),
                  sum)
            << "f32 sum, " << where;
        EXPECT_EQ(compile_full(ReductionType::Sum, DType::Int32, n, simd, threads)
                      .run({xi})
                      .at(0)
                      .get_flat(0),
                  sum * 1000003.0)
            << "i32 sum, " << where;
        // The maximum, the true of any and the first maximum of argmax at every position: each
        // position belongs to some part, so a dropped part loses it at some position.
        const CompiledGraph mx = compile_full(ReductionType::Max, DType::Float32, n, simd, threads);
        const CompiledGraph am =
            compile_full(ReductionType::ArgMax, DType::Float32, n, simd, threads);
        const CompiledGraph any = compile_full(ReductionType::Any, DType::Bool, n, simd, threads);
        const int64_t stride = n > 300 ? 7 : 1;
        for (int64_t p = 0; p < n; p += stride) {
          Tensor x = Tensor::empty(DType::Float32, {n});
          Tensor b = Tensor::empty(DType::Bool, {n});
          for (int64_t i = 0; i < n; ++i) {
            x.set_flat(i, -1.0 - static_cast<double>(i % 5));
            b.set_flat(i, 0.0);
          }
          x.set_flat(p, 2.0);
          b.set_flat(p, 1.0);
          ASSERT_EQ(mx.run({x}).at(0).get_flat(0), 2.0) << "max at " << p << ", " << where;
          ASSERT_EQ(any.run({b}).at(0).get_flat(0), 1.0) << "any at " << p << ", " << where;
          // A tie after p: the first index wins; a NaN after p: the NaN wins. With 3 threads
          // the tie is in the masked tail of a split reduction, which the thread of the last
          // block adds after it (split_reduction.cpp), so the earlier index still wins.
          const int64_t q = n - 1;
          x.set_flat(q, 2.0);
          ASSERT_EQ(am.run({x}).at(0).get_flat(0), static_cast<double>(p))
              << "argmax tie at " << p << ", " << where;
          x.set_flat(q, std::numeric_limits<double>::quiet_NaN());
          if (q != p) {
            ASSERT_EQ(am.run({x}).at(0).get_flat(0), static_cast<double>(q))
                << "argmax NaN at " << q << ", " << where;
          }
        }
        Tensor none = Tensor::empty(DType::Bool, {n});
        for (int64_t i = 0; i < n; ++i) none.set_flat(i, 0.0);
        EXPECT_EQ(any.run({none}).at(0).get_flat(0), 0.0) << "any of none, " << where;
      }
    }
  }
}

// A split reduction's result depends on the team size only: the masked tail belongs to the
// thread of the last iteration, not to whichever thread gets to it first. Values of both signs
// make every float rounding depend on the order of the additions.
TEST(SplitReductions, TheMaskedTailGivesTheSameResultInEveryRun) {
  const int64_t n = 4096 * 8 + 16 * 3 + 5;
  Tensor x = Tensor::empty(DType::Float32, {n});
  for (int64_t i = 0; i < n; ++i) {
    x.set_flat(i, std::sin(static_cast<double>(i) * 0.37) * (1.0 + static_cast<double>(i % 7)));
  }
  for (auto simd : vector_levels()) {
    const CompiledGraph sum = compile_full(ReductionType::Sum, DType::Float32, n, simd, 3);
    const double first = sum.run({x}).at(0).get_flat(0);
    for (int run = 0; run < 40; ++run) {
      ASSERT_EQ(sum.run({x}).at(0).get_flat(0), first)
          << "run " << run << " at " << runtime::simd_level_name(simd);
    }
  }
}

// z = x + y over `sizes`; with `pad`, x and y have rows of sizes[1] + pad elements, so that
// the loops over z's rows and columns do not merge into one.
lowering::LoweredGraph add_graph(const std::vector<int64_t>& sizes, int64_t pad = 0) {
  std::vector<int64_t> in_sizes = sizes;
  if (pad > 0) in_sizes[1] += pad;
  auto body = [in_sizes, pad](OpsHandler& h, const std::vector<Expr>& idx,
                              const std::vector<Expr>&) {
    const Expr at = pad > 0 ? idx[0] * Expr(in_sizes[1]) + idx[1] : flat(idx, in_sizes);
    return lowering::apply(h, PointwiseOp::Add,
                           {h.load("x", at, DType::Float32), h.load("y", at, DType::Float32)});
  };
  return make_graph({{"x", DType::Float32, in_sizes}, {"y", DType::Float32, in_sizes}},
                    {make_buffer("z", DType::Float32, sizes, body)});
}

int streaming_stores(const kernel::Kernel& k) {
  return count_stmts(
      k, [](const kernel::Stmt& s) { return s.kind == StmtKind::Store && s.access.streaming; });
}

TEST(StreamingStores, LargeOutputsWrittenOnceStreamSmallOnesNot) {
  auto s = schedule_lowered(add_graph({64 * 1024 * 1024}));
  kernel::TargetOptions small_llc = avx512(4);
  small_llc.outputs_in_mapped_memory = true;
  small_llc.caches.llc_bytes = 32 * 1024 * 1024;  // the 256 MiB output does not fit
  const auto k = lower_all(*s, small_llc).at(0);
  EXPECT_EQ(streaming_stores(k), 1);
  const std::string text = kernel::print_kernel(k);
  EXPECT_TRUE(contains(text, ".store_stream(z + x0);")) << text;
  // Each thread fences its streaming stores before the barrier that ends the loop.
  EXPECT_TRUE(contains(text, "schedule(static) nowait")) << text;
  EXPECT_TRUE(contains(text, "  stax::stream_fence();\n#pragma omp barrier\n")) << text;
  // A 300 MiB last level (this machine's) holds the 256 MiB output but not the kernel's
  // 768 MiB of loads and stores, which evict the output before anything reads it: streaming.
  kernel::TargetOptions output_fits = small_llc;
  output_fits.caches.llc_bytes = int64_t{300} * 1024 * 1024;
  EXPECT_EQ(streaming_stores(lower_all(*s, output_fits).at(0)), 1);
  kernel::TargetOptions large_llc = small_llc;
  large_llc.caches.llc_bytes = int64_t{1024} * 1024 * 1024;  // all 768 MiB stay cached
  const auto fits = lower_all(*s, large_llc).at(0);
  EXPECT_EQ(streaming_stores(fits), 0);
  EXPECT_FALSE(contains(kernel::print_kernel(fits), "stream_fence")) << kernel::print_kernel(fits);
  // Rows of 1000 floats start at offsets that are not multiples of 16: ordinary stores.
  auto rows = schedule_lowered(add_graph({64 * 1024, 1000}, 1));
  EXPECT_EQ(streaming_stores(lower_all(*rows, small_llc).at(0)), 0);
  // Freshly allocated outputs (the default): their pages' zeroing leaves the lines cached,
  // so ordinary stores.
  kernel::TargetOptions fresh = small_llc;
  fresh.outputs_in_mapped_memory = false;
  EXPECT_EQ(streaming_stores(lower_all(*s, fresh).at(0)), 0);
}

TEST(StreamingStores, StreamingKernelsMatchTheReference) {
  // 1 MiB outputs with a 256 KiB llc: aligned full vectors, one with a 37-element tail, and
  // rows of 515 elements read from rows of 516 (unaligned: ordinary stores).
  struct Case {
    std::vector<int64_t> sizes;
    int64_t pad;
    int streaming;
  };
  const Case cases[] = {{{262144}, 0, 1}, {{262144 + 37}, 0, 1}, {{512, 515}, 1, 0}};
  for (auto simd : vector_levels()) {
    for (const Case& c : cases) {
      std::vector<int64_t> in_sizes = c.sizes;
      if (c.pad > 0) in_sizes[1] += c.pad;
      int64_t n = 1;
      for (int64_t d : in_sizes) n *= d;
      Tensor x = Tensor::empty(DType::Float32, in_sizes);
      Tensor y = Tensor::empty(DType::Float32, in_sizes);
      for (int64_t i = 0; i < n; ++i) {
        x.set_flat(i, static_cast<double>(i % 1013));
        y.set_flat(i, 0.5 * static_cast<double>(i % 7));
      }
      runtime::CacheSizes caches;
      caches.llc_bytes = 256 * 1024;
      CompileOptions o;
      o.simd = simd;
      o.num_threads = 3;
      o.caches = caches;
      o.outputs_in_mapped_memory = true;
      const kernel::TargetOptions t{simd, 3, caches, true};
      EXPECT_EQ(streaming_stores(lower_all(*schedule_lowered(add_graph(c.sizes, c.pad)), t).at(0)),
                c.streaming);
      const Tensor z = compile_lowered(add_graph(c.sizes, c.pad), o).run({x, y}).at(0);
      const int64_t cols = c.sizes.size() == 2 ? c.sizes[1] : c.sizes[0];
      const int64_t in_cols = c.sizes.size() == 2 ? in_sizes[1] : in_sizes[0];
      const int64_t rows = c.sizes.size() == 2 ? c.sizes[0] : 1;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < cols; ++j) {
          // Sums of integers and halves below 2^24 are exact in float.
          const int64_t i = r * in_cols + j;
          ASSERT_EQ(z.get_flat(r * cols + j), x.get_flat(i) + y.get_flat(i))
              << runtime::simd_level_name(simd) << ", element " << r * cols + j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace stax::kernel_test
