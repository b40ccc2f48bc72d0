// Issue 35, point 3: the CUDA kernels of fixed programs, snapshotted beside the CPU goldens
// (tests/golden/kernels/*.cu; STAX_UPDATE_GOLDEN=1 rewrites them, scripts/update_golden.sh),
// and what the seed and the forms promise of them: Example 7.2 is one kernel computing exp once
// with both accumulators in one loop (Listing 7.2); softmax and layer norm are one kernel each,
// the row's results held by every thread; reductions of more than 1024 elements a row take a
// block; what has no CUDA form yet is named.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "driver/compiler.h"
#include "ir/graph.h"
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

struct CudaProgram {
  std::string name;
  std::string path;  // a .stax file, or empty for `text`
  std::string text;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<CudaProgram> cuda_programs() {
  const std::string ex = STAX_EXAMPLES_DIR;
  const std::string bench = STAX_BENCH_DIR;
  std::vector<CudaProgram> p;
  for (const char* e : {"example_7_1", "example_7_2"}) p.push_back({e, ex + "/" + e + ".stax", ""});
  for (const char* b :
       {"column_sum", "full_sum", "gelu_tanh_bias", "layernorm", "softmax", "transpose_add"}) {
    p.push_back({b, bench + "/" + b + ".stax", ""});
  }
  // bfloat16 in memory, float in registers; rows shorter than a warp; a symbolic row count.
  p.push_back({"softmax_bf16", "",
               "def f(x: bf16[64, 200]):\n    m = amax(x, dim=[-1], keepdim=True)\n"
               "    d = sub(x, m)\n    e = exp(d)\n    s = sum(e, dim=[-1], keepdim=True)\n"
               "    y = div(e, s)\n    return y\n"});
  p.push_back(
      {"short_rows", "", "def f(x: f32[1000, 6]):\n    s = sum(x, dim=[-1])\n    return s\n"});
  // Work once per row after the reduction, reading its stored result: a row barrier first.
  p.push_back({"once_per_row", "",
               "def f(x: f32[64, 128]):\n    s = sum(x, dim=[-1])\n    r = reciprocal(s)\n"
               "    return s, r\n"});
  p.push_back({"symbolic_rows", "",
               "def f(x: f32[s0, 256]):\n    m = amax(x, dim=[-1], keepdim=True)\n"
               "    y = sub(x, m)\n    return y\n"});
  return p;
}

std::shared_ptr<const Compilation> analyzed(const CudaProgram& p, const std::string& device) {
  CompileOptions options;
  options.device = device;
  return analyze(ir::parse_graph(p.path.empty() ? p.text : read_text(p.path)), options);
}

class CudaGoldenReplay : public ::testing::TestWithParam<CudaProgram> {};

TEST_P(CudaGoldenReplay, GeneratedCudaMatchesTheSnapshot) {
  const CudaProgram& p = GetParam();
  const auto c = analyzed(p, "cuda:sm_90");
  ASSERT_TRUE(c->cuda.has_value());
  for (const auto& k : c->cuda->kernels) EXPECT_EQ(k.refused, "") << k.fused_node;
  const std::string& source = c->cuda->source;
  const std::filesystem::path golden = std::filesystem::path(STAX_GOLDEN_DIR) / (p.name + ".cu");
  const char* update = std::getenv("STAX_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(golden) << source;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(golden))
      << golden << " is missing: run scripts/update_golden.sh (STAX_UPDATE_GOLDEN=1)";
  const std::string expected = read_text(golden.string());
  if (expected == source) return;
  std::istringstream a(expected), b(source);
  std::string la, lb;
  int line = 1;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
  FAIL() << "the generated CUDA of " << p.name << " differs from " << golden << " at line " << line
         << ":\n  snapshot:  " << la << "\n  generated: " << lb
         << "\n(an intended change: run scripts/update_golden.sh and commit the snapshots)";
}

INSTANTIATE_TEST_SUITE_P(CudaPrograms, CudaGoldenReplay, ::testing::ValuesIn(cuda_programs()),
                         [](const auto& info) { return info.param.name; });

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

CudaProgram program(const std::string& name) {
  for (const CudaProgram& p : cuda_programs()) {
    if (p.name == name) return p;
  }
  throw std::logic_error("no program " + name);
}

TEST(CudaKernels, Example72IsListing72) {
  const auto c = analyzed(program("example_7_2"), "cuda:sm_90");
  const std::string& s = c->cuda->source;
  EXPECT_EQ(count(s, "__global__"), 1u) << s;
  EXPECT_EQ(count(s, "stax::op_exp("), 1u) << s;  // computed once for both reductions
  EXPECT_EQ(count(s, "for (stax::i64 stax_r = stax_lane;"), 1u) << s;
  EXPECT_EQ(count(s, "stax::combine_sum("), 1u);
  EXPECT_EQ(count(s, "stax::combine_max("), 1u);
  EXPECT_EQ(count(s, "stax::warp_allreduce_sum(acc0, 32)"), 1u) << s;
  EXPECT_EQ(count(s, "if (stax_lane == 0)"), 2u) << s;  // each output written once per row
  ASSERT_EQ(c->cuda->kernels.size(), 1u);
  EXPECT_EQ(c->cuda->kernels[0].launch.threads_per_row, 32);
  EXPECT_EQ(c->cuda->kernels[0].launch.rows_per_block, 4);
  // No toolkit header: only Stax's.
  EXPECT_EQ(count(s, "#include"), 1u);
  EXPECT_NE(s.find("#include \"stax_cuda.cuh\""), std::string::npos);
}

TEST(CudaKernels, SoftmaxAndLayerNormAreOneKernelWithTheRowsResultsInRegisters) {
  for (const char* name : {"softmax", "layernorm", "softmax_bf16"}) {
    const auto c = analyzed(program(name), "cuda:sm_80");
    const std::string& s = c->cuda->source;
    EXPECT_EQ(count(s, "__global__"), 1u) << name << "\n" << s;
    EXPECT_GE(count(s, "[1];"), 2u) << name << "\n" << s;  // the two per-row results
    EXPECT_EQ(count(s, "__syncwarp"), 0u) << name;         // nothing is shared through memory
  }
  // A stored row result read by the row's other threads: they wait for its writer.
  const std::string once = analyzed(program("once_per_row"), "cuda:sm_90")->cuda->source;
  const size_t barrier = once.find("__syncwarp();");
  ASSERT_NE(barrier, std::string::npos) << once;
  EXPECT_LT(once.find("if (stax_lane == 0) buf0[x0] = "), barrier);
  EXPECT_GT(once.find("= buf0[x0];"), barrier);
  const std::string bf16 = analyzed(program("softmax_bf16"), "cuda:sm_90")->cuda->source;
  EXPECT_NE(bf16.find("stax::load_float(in_x + "), std::string::npos) << bf16;
  EXPECT_NE(bf16.find("stax::store_float("), std::string::npos) << bf16;
}

TEST(CudaKernels, RowShapesFollowTheRowLength) {
  const auto wide = analyzed(program("column_sum"), "cuda:sm_90");
  EXPECT_EQ(wide->cuda->kernels.at(0).launch.threads_per_row, 256);
  EXPECT_NE(wide->cuda->source.find("stax::block_allreduce_sum("), std::string::npos);
  EXPECT_NE(wide->cuda->source.find("__shared__ float stax_scratch_float[32];"), std::string::npos);
  const auto narrow = analyzed(program("short_rows"), "cuda:sm_90");
  EXPECT_EQ(narrow->cuda->kernels.at(0).launch.threads_per_row, 8);  // 6 elements: 8 lanes
  EXPECT_EQ(narrow->cuda->kernels.at(0).launch.rows_per_block, 16);
  const auto symbolic = analyzed(program("symbolic_rows"), "cuda:sm_90");
  EXPECT_NE(symbolic->cuda->source.find("stax::i64 s0"), std::string::npos);  // a parameter
  const auto pointwise = analyzed(program("gelu_tanh_bias"), "cuda:sm_90");
  EXPECT_EQ(pointwise->cuda->kernels.at(0).launch.form, "pointwise");
  EXPECT_EQ(pointwise->cuda->kernels.at(0).launch.block, 256);
}

TEST(CudaKernels, WhatHasNoFormYetIsNamed) {
  const auto c = analyzed({"gather", "",
                           "def f(t: f32[100, 8], i: i64[50]):\n    e = embedding(t, i)\n"
                           "    return e\n"},
                          "cuda:sm_90");
  ASSERT_EQ(c->cuda->kernels.size(), 1u);
  EXPECT_NE(c->cuda->kernels[0].refused.find("no CUDA form yet for an index or division check"),
            std::string::npos)
      << c->cuda->kernels[0].refused;
  EXPECT_FALSE(c->cuda->complete());
}

// The launch plan (issue 35, point 4): the buffers the caller gives and those the plan
// allocates, each kernel's arguments and its grid at the call's sizes.
TEST(CudaKernels, TheLaunchPlanHoldsEveryBufferAndLaunch) {
  using runtime::cuda::PlanBuffer;
  const auto c = analyzed(program("example_7_2"), "cuda:sm_90");
  const auto& plan = c->cuda->plan;
  ASSERT_TRUE(c->cuda->complete()) << c->cuda->plan_refused;
  ASSERT_EQ(plan.buffers.size(), 3u);  // x; the sum and the amax (e is never stored)
  EXPECT_EQ(plan.num_inputs, 1);
  EXPECT_EQ(plan.num_outputs, 2);
  EXPECT_EQ(plan.buffers[0].role, PlanBuffer::Role::Input);
  EXPECT_EQ(index::evaluate(plan.buffers[1].bytes, {}), 64 * 4);
  ASSERT_EQ(plan.launches.size(), 1u);
  const auto& l = plan.launches[0];
  EXPECT_EQ(l.function, "stax_op0_op1");
  ASSERT_EQ(l.args.size(), 3u);  // buf0, buf1, in_x: the kernel's parameters in order
  EXPECT_EQ(plan.buffers[static_cast<size_t>(l.args[2].buffer)].name, "x");
  EXPECT_EQ(runtime::cuda::grid_blocks(l, {}), 16u);  // 64 rows, 4 per block
  // A symbolic row count: the symbol is an argument and the grid follows its value; a huge
  // one is capped (the rows loop strides the grid).
  const auto s = analyzed(program("symbolic_rows"), "cuda:sm_90");
  const auto& sl = s->cuda->plan.launches.at(0);
  ASSERT_TRUE(sl.args.back().symbol);
  EXPECT_EQ(sl.args.back().symbol_name, "s0");
  EXPECT_EQ(runtime::cuda::grid_blocks(sl, {{"s0", 37}}), 10u);
  EXPECT_EQ(runtime::cuda::grid_blocks(sl, {{"s0", int64_t{1} << 40}}),
            static_cast<unsigned>(sl.max_blocks));
  // Softmax's row maxima and sums live in registers: nothing to allocate.
  const auto soft = analyzed(program("softmax"), "cuda:sm_90");
  for (const auto& b : soft->cuda->plan.buffers) {
    EXPECT_NE(b.role, PlanBuffer::Role::Intermediate) << b.name;
  }
}

}  // namespace
}  // namespace stax::kernel_test
