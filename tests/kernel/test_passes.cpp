// The passes: kernel form with its reason, Algorithm 8.1, split and column reductions, the
// tiled form, cascade blocking, simplification, and the order the pipeline runs them in.
#include <fstream>
#include <sstream>

#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using kernel::KernelForm;
using kernel::LetKind;
using kernel::StmtKind;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string bench(const std::string& name) {
  return read(std::string(STAX_BENCH_DIR) + "/" + name);
}

bool has(const kernel::Kernel& k, StmtKind kind) {
  return count_stmts(k, [&](const kernel::Stmt& s) { return s.kind == kind; }) > 0;
}

TEST(KernelPasses, PipelineRunsThePassesInOrder) {
  auto s = schedule_text("def f(x: f32[64]):\n    y = exp(x)\n    return y\n");
  std::vector<std::string> passes;
  lower_all(*s, avx512(), &passes);
  EXPECT_EQ(passes,
            (std::vector<std::string>{"build", "kernel form", "parallel depth", "apply kernel form",
                                      "cascade blocking", "independent accumulators",
                                      "split reductions", "parallelize", "streaming stores",
                                      "narrow indices", "hoist invariants", "simplify"}));
}

TEST(KernelPasses, PointwiseLoopIsVectorizedWithAMaskedTail) {
  auto s = schedule_text("def f(x: f32[100]):\n    y = exp(x)\n    return y\n");
  const auto k = lower_all(*s, avx512()).at(0);
  EXPECT_EQ(kernel::nest_form_names(k), (std::vector<std::string>{"vectorized(W=16) over x0"}));
  const std::string text = kernel::print_kernel(k);
  EXPECT_TRUE(contains(text, "for (int32_t x0 = 0; x0 < 96; x0 += 16)")) << text;
  EXPECT_TRUE(contains(text, "stax::Vec<float, 16>::load(in_x + x0, 4)")) << text;
  EXPECT_TRUE(contains(text, ".store(buf0 + x0, 4)")) << text;
  EXPECT_TRUE(contains(text, "const int32_t x0 = 96;")) << text;
}

TEST(KernelPasses, ScalarLevelGivesTheScalarFormWithAReason) {
  auto s = schedule_text("def f(x: f32[100]):\n    y = exp(x)\n    return y\n");
  const auto k = lower_all(*s, {runtime::SimdLevel::Scalar, 1, {}}).at(0);
  EXPECT_EQ(kernel::nest_form_names(k), (std::vector<std::string>{"scalar"}));
  EXPECT_EQ(k.decisions.nests[0].reason, "the SIMD level is scalar");
  EXPECT_FALSE(contains(kernel::print_kernel(k), "stax::Vec<"));
}

TEST(KernelPasses, TransposedOperandGivesTheTiledForm) {
  auto s = schedule_text(bench("transpose_add.stax"));
  const auto k = lower_all(*s, avx512(4)).at(0);
  EXPECT_EQ(kernel::nest_form_names(k),
            (std::vector<std::string>{"tiled(T=48) vectorized(W=16) over x1"}));
  EXPECT_TRUE(contains(k.decisions.nests[0].reason, "stride 2048")) << k.decisions.nests[0].reason;
  const std::string text = kernel::print_kernel(k);
  // T from the default 32 KiB L1 (test_tiled_transpose.cpp).
  EXPECT_TRUE(contains(text, "alignas(64) float tile0[2304];")) << text;
  EXPECT_TRUE(contains(text, "stax::Vec<float, 16>::load(tile0 + ")) << text;
  EXPECT_TRUE(contains(text, "#pragma omp for collapse(1) schedule(static)")) << text;
}

// ViT's embedding: the patch convolution's channels moved last by a view and a transpose, a
// class token put in front by cat, then a layernorm over the channels. The cat's operand region
// reads the convolution at token t - 1, which the loop range does not prove non-negative; the
// view's index map must still keep the channel index a plain c (stride 256 along it), so the
// row statistics vectorize along the channels (strided loads) instead of running scalar.
TEST(KernelPasses, CatOfReshapedOperandKeepsItsChannelStride) {
  auto s = schedule_text(
      "def f(conv: bf16[2, 64, 16, 16], cls: bf16[1, 1, 64], pos: bf16[1, 257, 64]):\n"
      "    v = view(conv, [2, 64, 256])\n"
      "    t = transpose(v, 1, 2)\n"
      "    e = expand(cls, [2, -1, -1], implicit=False)\n"
      "    c = cat([e, t], 1)\n"
      "    a = add(c, pos, alpha=1)\n"
      "    f = _to_copy(a, dtype=\"f32\")\n"
      "    var, mean = var_mean(f, [2], correction=0, keepdim=True)\n"
      "    d = sub(f, mean, alpha=1)\n"
      "    r = rsqrt(var)\n"
      "    y = mul(d, r)\n"
      "    return y\n");
  // Each nest takes the lanes of its widest type (the row statistics' Welford accumulates
  // in double, as ATen's var_mean of float does).
  for (const kernel::Kernel& k : lower_all(*s, avx512())) {
    for (size_t n = 0; n < k.decisions.nests.size(); ++n) {
      const std::string form = kernel::nest_form_names(k).at(n);
      const bool statistics = contains(form, " over r");
      const int64_t lanes = avx512().vector_lanes(statistics ? DType::Float64 : DType::Float32);
      EXPECT_TRUE(contains(form, "vectorized(W=" + std::to_string(lanes) + ")"))
          << form << ": " << k.decisions.nests[n].reason;
    }
  }
}

TEST(KernelPasses, ColumnReductionKeepsOneOutputPerLaneInBlocksOfEightVectors) {
  auto s = schedule_text(bench("column_sum.stax"));
  const auto ks = lower_all(*s, avx512(4));
  ASSERT_EQ(ks.size(), 1u);
  const auto& k = ks[0];
  EXPECT_EQ(kernel::nest_form_names(k),
            (std::vector<std::string>{"vectorized(W=16) over x0, one output per lane"}));
  // Two reductions, eight column blocks each, all inside one chain of reduction loops.
  EXPECT_EQ(
      count_stmts(k, [](const kernel::Stmt& st) { return st.kind == StmtKind::AccumulatorInit; }),
      16);
  for (const auto& a : k.accumulators) {
    if (a.lanes > 1) {
      EXPECT_TRUE(a.per_lane_result);
    }
  }
  const std::string text = kernel::print_kernel(k);
  EXPECT_TRUE(contains(text, "x0_block += 128")) << text;
  // 8192 rows: the float sums are blocked, folded per block into double lanes.
  EXPECT_TRUE(contains(text, "_outer.fold(")) << text;
  EXPECT_TRUE(contains(text, "_outer.lanes()")) << text;
}

// The one kernel of a 3x3 max pool of stride 2 over an input of type `input` (and the
// symbols' `where` clause), its values returned.
kernel::Kernel max_pool_kernel(const std::string& input, const std::string& where = "") {
  auto s = schedule_text("def f(x: " + input + ")" + where +
                         ":\n"
                         "    v, i = max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 1], "
                         "False)\n"
                         "    return v\n");
  auto ks = lower_all(*s, avx512());
  EXPECT_EQ(ks.size(), 1u);
  return ks.at(0);
}

// A window reduction (max pooling's 3x3 windows, a stride of 2 along the output row) puts one
// output in each lane, its loads gathered, rather than 9 terms in 16 mostly masked lanes; a
// reduction at least a vector long is still vectorized along itself. Over sizes known only at
// run time (issue 33) the output row's extent is (s0 + 1) // 2: the column form takes it
// with a tail of run-time length.
TEST(KernelPasses, ShortWindowReductionsPutOneOutputInEachLane) {
  const kernel::Kernel k = max_pool_kernel("f32[2, 8, 40, 40]");
  ASSERT_EQ(k.decisions.nests.size(), 1u);
  EXPECT_EQ(kernel::nest_form_names(k).at(0), "vectorized(W=16) over x1, one output per lane");
  EXPECT_TRUE(contains(k.decisions.nests[0].reason, "shorter than the 16 lanes (9 terms"))
      << k.decisions.nests[0].reason;
  const kernel::Kernel symbolic =
      max_pool_kernel("f32[2, 8, s0, s0]", " where s0: [2, 4096] hint=40");
  ASSERT_EQ(symbolic.decisions.nests.size(), 1u);
  EXPECT_TRUE(contains(kernel::nest_form_names(symbolic).at(0), ", one output per lane"))
      << kernel::nest_form_names(symbolic).at(0) << ": " << symbolic.decisions.nests[0].reason;
  EXPECT_TRUE(contains(kernel::print_kernel(symbolic), "% 16)"))  // the tail's run-time count
      << kernel::print_kernel(symbolic);
  auto rows = schedule_text("def f(x: f32[64, 40]):\n    s = sum(x, [1])\n    return s\n");
  const auto row_kernels = lower_all(*rows, avx512());
  ASSERT_EQ(row_kernels.size(), 1u);
  EXPECT_TRUE(contains(kernel::nest_form_names(row_kernels[0]).at(0), "over r0"))
      << kernel::nest_form_names(row_kernels[0]).at(0);
}

// With its indices the pool's outputs' dims do not collapse over the symbol, and the nest
// that turns each window's argmax into an input index shares the reductions' loops as outer
// loops: the innermost outer loop is then the vectorized one, for every nest under it, rather
// than 9 terms in 16 mostly masked lanes per output.
TEST(KernelPasses, WindowReductionsUnderSharedOuterLoopsVectorizeTheOuterLoop) {
  auto s = schedule_text(
      "def f(x: f32[2, 8, s0, s0]) where s0: [2, 4096] hint=40:\n"
      "    v, i = max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 1], False)\n"
      "    return v, i\n");
  const auto ks = lower_all(*s, avx512());
  ASSERT_EQ(ks.size(), 1u);
  const auto& k = ks[0];
  ASSERT_GT(k.decisions.nests.size(), 1u);
  EXPECT_TRUE(k.decisions.column_over_outer);
  for (size_t n = 0; n < k.decisions.nests.size(); ++n) {
    EXPECT_EQ(kernel::nest_form_names(k).at(n), "vectorized(W=8) over x2, one output per lane");
    EXPECT_TRUE(contains(k.decisions.nests[n].reason, "under the shared outer loops"))
        << k.decisions.nests[n].reason;
  }
  // The outer loops x0 and x1 are left to the threads, x2 to the lanes.
  EXPECT_LE(k.decisions.parallel_depth, 2);
  const std::string text = kernel::print_kernel(k);
  EXPECT_TRUE(contains(text, "x2_block += 64")) << text;
  EXPECT_TRUE(contains(text, "gather_masked")) << text;
  EXPECT_TRUE(contains(text, "% 8)")) << text;
}

TEST(KernelPasses, FullReductionIsSplitAcrossThreadsAndBlocked) {
  auto s = schedule_text(bench("full_sum.stax"));
  const auto k = lower_all(*s, avx512(4)).at(0);
  EXPECT_EQ(kernel::nest_form_names(k),
            (std::vector<std::string>{"vectorized(W=16) over r0, split across threads"}));
  EXPECT_TRUE(k.decisions.split_reduction);
  EXPECT_TRUE(has(k, StmtKind::Barrier));
  EXPECT_TRUE(has(k, StmtKind::StorePartial));
  EXPECT_TRUE(has(k, StmtKind::FoldBlock));
  EXPECT_GT(count_lets(k, LetKind::CombinePartials), 0);
  const std::string text = kernel::print_kernel(k);
  EXPECT_TRUE(contains(text, "#pragma omp for collapse(1) schedule(static) nowait")) << text;
  EXPECT_TRUE(contains(kernel::print_kernel_preamble(k), "[STAX_MAX_THREADS];"));
  // One thread: Algorithm 8.1 gives depth 0 and no split.
  const auto serial = lower_all(*s, avx512(1)).at(0);
  EXPECT_FALSE(serial.decisions.split_reduction);
  EXPECT_EQ(serial.decisions.parallel_depth, 0);
  EXPECT_TRUE(has(serial, StmtKind::Single));
}

TEST(KernelPasses, LongRowSumsAreBlockedShortOnesNot) {
  auto longer = schedule_text("def f(x: f32[4, 4096]):\n    s = sum(x, dim=[1])\n    return s\n");
  const auto k = lower_all(*longer, avx512()).at(0);
  EXPECT_TRUE(has(k, StmtKind::FoldBlock));
  EXPECT_TRUE(contains(kernel::print_kernel(k), "r0_blk")) << kernel::print_kernel(k);
  auto shorter = schedule_text("def f(x: f32[4, 1000]):\n    s = sum(x, dim=[1])\n    return s\n");
  EXPECT_FALSE(has(lower_all(*shorter, avx512()).at(0), StmtKind::FoldBlock));
  // Max is exact in any order: never blocked.
  auto amax = schedule_text("def f(x: f32[4, 4096]):\n    s = amax(x, dim=[1])\n    return s\n");
  EXPECT_FALSE(has(lower_all(*amax, avx512()).at(0), StmtKind::FoldBlock));
}

TEST(KernelPasses, ParallelDepthFollowsAlgorithm81) {
  auto s = schedule_text(read(std::string(STAX_EXAMPLES_DIR) + "/example_1_1.stax"));
  const auto ks = lower_all(*s, avx512(4));
  ASSERT_FALSE(ks.empty());
  EXPECT_EQ(ks[0].decisions.parallel_depth, 1);
  EXPECT_TRUE(
      contains(kernel::print_kernel(ks[0]), "#pragma omp for collapse(1) schedule(static)"));
}

TEST(KernelPasses, SimplifyRemovesUnusedValues) {
  // Every definition the printed code holds is used: the tail of a vector loop has no
  // leftover definitions of the main loop's.
  auto s = schedule_text("def f(x: f32[100], y: f32[100]):\n    z = add(x, y)\n    return z\n");
  const auto k = lower_all(*s, avx512()).at(0);
  std::map<int, int> uses;
  kernel::for_each_stmt(k.body, [&](const kernel::Stmt& st) {
    if (st.kind == StmtKind::Let) {
      uses.emplace(st.let.id, 0);
      for (int a : st.let.args) ++uses[a];
    }
    if (st.value >= 0) ++uses[st.value];
  });
  for (const auto& [id, n] : uses) EXPECT_GT(n, 0) << "tmp" << id << " is unused";
}

}  // namespace
}  // namespace stax::kernel_test
