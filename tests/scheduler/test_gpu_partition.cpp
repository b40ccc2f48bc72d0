// Issue 35, point 2: the GPU partition. Example 7.2 on cuda:sm_90 (the seed's Listing 7.2):
// `e` is inlined by lowering's GPU cost model, sum and amax fuse horizontally into one kernel.
// Definition 7.2 by element count as properties against brute force: the split of condition 3
// and the three conditions themselves, over random iteration groups. And pairs only the GPU
// reading fuses (per-dimension ranges that differ, equal element counts), checked for access
// equality as on the CPU.
#include <gtest/gtest.h>

#include <random>

#include "driver/compiler.h"
#include "driver/explain.h"
#include "ir/builder.h"
#include "schedule_util.h"
#include "scheduler/compatibility_gpu.h"

namespace stax {
namespace {

using index::Expr;

std::unique_ptr<testing::Scheduled> schedule_gpu(const std::string& text) {
  auto s = std::make_unique<testing::Scheduled>();
  lowering::LoweringOptions lo;
  lo.device = lowering::Device::Gpu;
  s->lowered = lowering::lower(ir::parse_graph(text), lo);
  scheduler::ScheduleOptions so;
  so.device = lowering::Device::Gpu;
  s->schedule = scheduler::schedule(s->lowered, so);
  return s;
}

TEST(GpuPartition, Example72IsOneKernelWithExpInlined) {
  CompileOptions options;
  options.device = "cuda:sm_90";
  const auto c = analyze(ir::parse_graph_file(testing::example("example_7_2.stax")), options);
  const auto& s = c->schedule;
  ASSERT_EQ(c->lowered.log.size(), 1u);
  EXPECT_NE(c->lowered.log[0].find("exp 'e'"), std::string::npos) << c->lowered.log[0];
  EXPECT_NE(c->lowered.log[0].find("(not stored): 2 reads, cheap on the GPU: inlined"),
            std::string::npos)
      << c->lowered.log[0];
  ASSERT_EQ(s.nodes.size(), 2u);  // sum and amax, each reading x through exp
  ASSERT_EQ(s.fusion_log.rounds.size(), 2u);
  const auto& round1 = s.fusion_log.rounds[0];
  ASSERT_EQ(round1.candidates.size(), 1u);
  EXPECT_TRUE(round1.candidates[0].fused);
  EXPECT_EQ(round1.candidates[0].reason,
            "SAME_VARS_REDUCE (GPU: element counts (n, r) = (64, 128))");
  EXPECT_EQ(s.fusion_log.rounds[1].possible, 0);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(s.kernels[0].group_string(), "((64,), (128,))");
  const std::string text = explain_text(*c);
  EXPECT_NE(text.find("target: cuda sm_90"), std::string::npos) << text;
  EXPECT_NE(text.find("kernels (cuda:sm_90): one per final node, 1 in all"), std::string::npos)
      << text;
  // The same program on the CPU: e stored (a transcendental read twice), two kernels.
  const auto cpu = analyze(ir::parse_graph_file(testing::example("example_7_2.stax")));
  EXPECT_EQ(cpu->schedule.kernels.size(), 2u);
  EXPECT_NE(cpu->lowered.log.at(0).find("recomputing it costs more than a buffer on the CPU"),
            std::string::npos);
}

TEST(GpuPartition, DevicesAreParsedAndRefusedByName) {
  EXPECT_FALSE(target::parse_device("cpu").cuda);
  EXPECT_EQ(target::parse_device("cuda:sm_80").arch, "sm_80");
  EXPECT_EQ(target::parse_device("cuda:1").index, 1);
  EXPECT_TRUE(target::parse_device("cuda").cuda);
  for (const char* bad : {"gpu", "cuda:sm_75", "cuda:", "cudax", "cuda:-1", "cuda:sm90"}) {
    EXPECT_THROW(target::parse_device(bad), std::invalid_argument) << bad;
  }
  for (const std::string& arch : target::offline_cuda_architectures()) {
    const auto d = target::offline_cuda_device(arch);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->arch(), arch);
    EXPECT_GT(d->sm_count, 0);
    EXPECT_GT(d->shared_bytes_per_block_optin, 48 * 1024);
  }
  // CUDA kernels are generated but not run yet: compiling for a CUDA target says so; "cuda"
  // without an architecture needs the driver, which the compiler does not query yet.
  stax::Graph g("k");
  auto x = stax::ops::input(g, "x", DType::Float32, {4, 8});
  stax::ops::output(g, {stax::ops::exp(x)});
  CompileOptions options;
  options.device = "cuda:sm_90";
  try {
    (void)compile(g, options);
    FAIL() << "compiled for a CUDA target";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot run them yet: the launch plan is not built"),
              std::string::npos)
        << e.what();
  }
  options.device = "cuda";
  EXPECT_THROW((void)analyze(g, options), std::invalid_argument);
}

// Definition 7.2, condition 3: the range splits into n x r, cutting at most one range in two.
bool splits_brute_force(const std::vector<int64_t>& ranges, int64_t n, int64_t r) {
  int64_t total = 1;
  for (int64_t d : ranges) total *= d;
  if (total != n * r) return false;
  int64_t prefix = 1;
  for (size_t k = 0; k <= ranges.size(); ++k) {
    if (prefix == n) return true;
    if (k == ranges.size()) break;
    for (int64_t a = 1; a <= ranges[k]; ++a) {
      if (ranges[k] % a == 0 && prefix * a == n) return true;
    }
    prefix *= ranges[k];
  }
  return false;
}

std::vector<Expr> exprs(const std::vector<int64_t>& v) {
  return std::vector<Expr>(v.begin(), v.end());
}

std::vector<int64_t> random_ranges(std::mt19937& rng, size_t max_rank) {
  std::vector<int64_t> out(std::uniform_int_distribution<size_t>(0, max_rank)(rng));
  for (auto& d : out) d = std::uniform_int_distribution<int64_t>(1, 12)(rng);
  return out;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

TEST(GpuPartition, SplitMatchesBruteForce) {
  std::mt19937 rng(7);
  int splits = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const std::vector<int64_t> ranges = random_ranges(rng, 4);
    const int64_t total = product(ranges);
    for (int64_t n = 1; n <= total; ++n) {
      if (total % n != 0) continue;
      const bool expected = splits_brute_force(ranges, n, total / n);
      splits += expected;
      EXPECT_EQ(scheduler::splits_as(exprs(ranges), Expr(n), Expr(total / n)), expected)
          << scheduler::sizes_string(ranges) << " as " << n << " x " << total / n;
    }
  }
  EXPECT_GT(splits, 1000);
  // Not a divisor split: (6, 10) as 4 x 15 would cut across ranges.
  EXPECT_FALSE(scheduler::splits_as(exprs({6, 10}), Expr(4), Expr(15)));
  EXPECT_TRUE(scheduler::splits_as(exprs({6, 10}), Expr(12), Expr(5)));
}

TEST(GpuPartition, CompatibilityMatchesDefinition72) {
  std::mt19937 rng(11);
  int compatible = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const bool reduces_a = rng() % 2 == 0;
    const bool reduces_b = rng() % 2 == 0;
    std::vector<int64_t> pa = random_ranges(rng, 3);
    std::vector<int64_t> pb = random_ranges(rng, 3);
    std::vector<int64_t> ra = reduces_a ? random_ranges(rng, 2) : std::vector<int64_t>{};
    std::vector<int64_t> rb = reduces_b ? random_ranges(rng, 2) : std::vector<int64_t>{};
    if (reduces_a && ra.empty()) ra = {3};
    if (reduces_b && rb.empty()) rb = {3};
    // Bias toward equal element counts, where the rules have something to decide.
    if (trial % 3 == 0 && reduces_a != reduces_b) {
      pa = reduces_a ? pa : std::vector<int64_t>{product(pb), product(rb)};
      pb = reduces_b ? pb : std::vector<int64_t>{product(pa) * product(ra)};
    } else if (trial % 3 == 1) {
      pb = {product(pa)};
      if (reduces_a && reduces_b) rb = {product(ra)};
    }
    bool expected;
    std::string rule;
    if (reduces_a && reduces_b) {
      expected = product(pa) == product(pb) && product(ra) == product(rb);
      rule = "SAME_VARS_REDUCE";
    } else if (!reduces_a && !reduces_b) {
      expected = product(pa) == product(pb);
      rule = "COMPATIBLE_RANGES_NO_REDUCTION";
    } else {
      const auto& p = reduces_a ? pb : pa;
      const int64_t n = reduces_a ? product(pa) : product(pb);
      const int64_t r = reduces_a ? product(ra) : product(rb);
      expected = product(p) == n || (product(p) == n * r && splits_brute_force(p, n, r));
      rule = "COMPATIBLE_REDUCTION";
    }
    const auto c = scheduler::gpu_compatibility(exprs(pa), exprs(ra), exprs(pb), exprs(rb));
    ASSERT_EQ(c.compatible, expected)
        << scheduler::sizes_string(pa) << scheduler::sizes_string(ra) << " with "
        << scheduler::sizes_string(pb) << scheduler::sizes_string(rb) << ": " << c.reason;
    if (!expected) continue;
    ++compatible;
    EXPECT_EQ(c.reason.rfind(rule + " (GPU: ", 0), 0u) << c.reason;
    // The shared nest holds as many elements as the reduction side (or either pointwise side).
    const auto& nest_n = reduces_a ? pa : reduces_b ? pb : pa;
    EXPECT_EQ(scheduler::element_count(c.sizes), Expr(product(nest_n)));
  }
  EXPECT_GT(compatible, 2000);
}

// Example 7.2 with e returned too, so that it is stored on both devices: on the CPU the exp
// loop, simplified to (8192,), shares no outer loop with the row sums ((64,), (128,)) and stays
// apart (the seed's round 1); on the GPU its 8192 elements split as 64 x 128 (Definition 7.2,
// condition 3 with N = n r), each written where the sum reads it: one kernel.
TEST(GpuPartition, APointwiseProducerJoinsTheReductionByElementCount) {
  const std::string text = R"(
def g(x: f32[64, 128]):
    e = exp(x)
    s = sum(e, dim=[-1])
    return e, s
)";
  const auto cpu = testing::schedule_text(text);
  EXPECT_EQ(cpu->schedule.kernels.size(), 2u);
  const auto gpu = schedule_gpu(text);
  ASSERT_EQ(gpu->schedule.kernels.size(), 1u);
  const auto& round1 = gpu->schedule.fusion_log.rounds.at(0);
  ASSERT_EQ(round1.candidates.size(), 1u);
  EXPECT_EQ(round1.candidates[0].reason,
            "COMPATIBLE_REDUCTION (GPU: N = n·r, (8192,) splits as 64 × 128)");
  // Transposed, the element each iteration reads is not the one it wrote: no dependence with
  // identical indices is shared (Section 7.3's score 0), refused as on the CPU.
  const auto transposed = schedule_gpu(R"(
def g(x: f32[64, 128]):
    e = exp(x)
    t = permute(e, dims=[1, 0])
    s = sum(t, dim=[-1])
    return e, s
)");
  EXPECT_EQ(transposed->schedule.kernels.size(), 2u);
  const auto& refused = transposed->schedule.fusion_log.rounds.at(0).candidates;
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].reason, "no shared data with identical indices (score 0)");
}

// A pointwise node with one element per output of the reduction (N = n): it runs once per
// output, after the reduction loop, reading its result (the reciprocal of the row sums).
TEST(GpuPartition, AnEpilogueOncePerOutputJoinsTheReduction) {
  const auto gpu = schedule_gpu(R"(
def g(x: f32[64, 128]):
    s = sum(x, dim=[-1])
    r = reciprocal(s)
    return s, r
)");
  // Definition 7.2 holds (N = n); the reciprocal runs after the reduction loop, not in it: a
  // node of rows whose second nest is once per row.
  const auto c = scheduler::gpu_compatibility(exprs({64}), {}, exprs({64}), exprs({128}));
  EXPECT_TRUE(c.compatible);
  EXPECT_TRUE(c.once_per_output);
  EXPECT_EQ(c.reason, "COMPATIBLE_REDUCTION (GPU: N = n = 64, once per output)");
  ASSERT_EQ(gpu->schedule.kernels.size(), 1u);
  EXPECT_EQ(gpu->schedule.kernels[0].group_string(), "outer (64,): ((), (128,)) ; ((), ())");
  EXPECT_EQ(gpu->schedule.fusion_log.rounds.at(0).candidates.at(0).reason,
            "COMPATIBLE_REDUCTION (GPU: 64 rows, the work over each row after its reduction)");
  // x / x.sum(-1): the per-row value is read by every element of the row, which cannot run
  // inside the loop that computes it. It joins as the work over each row after the reduction
  // (condition 3, N = n r): one kernel whose rows are the sum's outputs, the division a second
  // nest of each row.
  const auto rows = schedule_gpu(R"(
def g(x: f32[64, 128]):
    s = sum(x, dim=[-1], keepdim=True)
    y = div(x, s)
    return s, y
)");
  ASSERT_EQ(rows->schedule.kernels.size(), 1u);
  const auto& f = rows->schedule.kernels[0];
  EXPECT_TRUE(f.outer_loop_fused);
  EXPECT_EQ(f.group_string(), "outer (64,): ((), (128,)) ; ((128,), ())");
  EXPECT_EQ(rows->schedule.fusion_log.rounds.at(0).candidates.at(0).reason,
            "COMPATIBLE_REDUCTION (GPU: 64 rows, the work over each row after its reduction)");
  // Rows that do not divide: 64 rows of x.sum(-1) and a pointwise node of 100 elements share
  // nothing to split.
  const auto apart = schedule_gpu(R"(
def g(x: f32[64, 128], z: f32[100]):
    s = sum(x, dim=[-1])
    t = sum(s)
    w = add(z, t)
    return w
)");
  EXPECT_GE(apart->schedule.kernels.size(), 2u);
}

}  // namespace
}  // namespace stax
