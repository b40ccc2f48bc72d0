// Issue 33, step 4 (docs/symbolic_sizes.md): kernels over symbolic extents. A symbolic
// schedule's kernels are built and pass every kernel pass, with the verifier after each one;
// loops run to the symbols (printed as variables, a later step passes them as kernel
// arguments); Algorithm 8.1 reads the hints; int32 indices follow from the symbols' facts; a
// vectorized loop over a symbolic extent ends in a masked tail of run-time length. The host
// program still refuses symbolic schedules (test_scheduler).
#include <gtest/gtest.h>

#include <string>

#include "ir/graph.h"
#include "kernel/pipeline.h"
#include "kernel/printer.h"
#include "lowering/lowering.h"
#include "scheduler/schedule.h"

namespace stax::kernel {
namespace {

// examples/symbolic_rows.stax: a layernorm with a tanh and a residual over s0 rows of 64, and a
// softmax along s0 for 4 queries.
ir::Graph block() {
  return ir::parse_graph_file(std::string(STAX_EXAMPLES_DIR) + "/symbolic_rows.stax");
}

TEST(SymbolicKernels, RowsVectorizeAndRunInParallelOverASymbolicOuterLoop) {
  const lowering::LoweredGraph lowered = lowering::lower(block());
  const scheduler::Schedule s = scheduler::schedule(lowered);
  PipelineOptions options;
  options.verify = true;
  options.target.simd = runtime::SimdLevel::Avx512;  // built, not run: any level will do
  options.target.num_threads = 2;
  int codes = 0;
  bool rows = false, softmax = false;
  for (const scheduler::FusedNode& f : s.kernels) {
    const Kernel k = lower_fused_node(s, f, options, codes);
    const std::string text = print_kernel(k);
    if (!f.outer.empty() && f.outer[0] == index::Expr::var("s0")) {
      rows = true;
      // Algorithm 8.1 at the hint (128 rows, 2 threads) shares the rows among the threads.
      EXPECT_EQ(k.decisions.parallel_depth, 1);
      EXPECT_NE(text.find("x0 < s0"), std::string::npos) << text;
      for (const NestDecision& d : k.decisions.nests) {
        EXPECT_EQ(d.form, KernelForm::Vectorized) << d.reason;
        EXPECT_EQ(d.vector_width, 16);
      }
      // s0 <= 4096: every index of the rows fits int32.
      EXPECT_NE(text.find("int32_t x0"), std::string::npos) << text;
    } else {
      // The softmax along s0: whole vectors up to 16 * (s0 // 16), then a masked tail of
      // s0 % 16 lanes (none where 16 divides s0), read, written and reduced with that count.
      softmax = true;
      for (const NestDecision& d : k.decisions.nests) {
        EXPECT_EQ(d.form, KernelForm::Vectorized) << d.reason;
      }
      EXPECT_NE(text.find("< 16*(s0 / 16); r0 += 16"), std::string::npos) << text;
      EXPECT_NE(text.find(", (s0 % 16));"), std::string::npos) << text;
      EXPECT_NE(text.find("::set("), std::string::npos) << text;
    }
  }
  EXPECT_TRUE(rows);
  EXPECT_TRUE(softmax);
}

TEST(SymbolicKernels, IndicesStayInt64WhereTheFactsAllowLargeSizes) {
  // s0 may reach 2^31 - 1 (undeclared): s0 * 64 does not fit int32.
  const lowering::LoweredGraph lowered = lowering::lower(
      ir::parse_graph("def f(x: f32[s0, 64]):\n    y = exp(x)\n    return y\n", "f.stax"));
  const scheduler::Schedule s = scheduler::schedule(lowered);
  PipelineOptions options;
  options.verify = true;
  options.target.simd = runtime::SimdLevel::Avx512;
  int codes = 0;
  const Kernel k = lower_fused_node(s, s.kernels.at(0), options, codes);
  const std::string text = print_kernel(k);
  EXPECT_EQ(text.find("int32_t"), std::string::npos) << text;
}

}  // namespace
}  // namespace stax::kernel
