// Compile-time growth (issue 5.5), measured by what Stax builds rather than by the clock: the
// generated C++, the loads in a kernel body, the fusion candidates Algorithm 7.1 examines.
// Each of these grew super-linearly (or exponentially) with the graph before: a value read
// twice by its user was inlined twice at every level, view chains doubled their index
// arithmetic per reshape, one input shared by thousands of outputs gave a quadratic number of
// candidate pairs, and the wrapper's cleanup code was quadratic in live buffers.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <sstream>
#include <string>

#include "driver/compiler.h"
#include "fuzz/scaling_programs.h"
#include "ir/graph.h"
#include "scheduler/cycle_check.h"

namespace stax {
namespace {

std::shared_ptr<const Compilation> analyze_text(const std::string& text) {
  CompileOptions options;
  options.simd = runtime::SimdLevel::Avx2;
  options.num_threads = 2;
  return analyze(ir::parse_graph(text, "scaling"), options);
}

TEST(CompileScaling, ValueReadTwiceIsMaterializedNotInlinedTwice) {
  // 40 levels once took 42 s and 5.5 GB (2^40 loads); now a bounded body per buffer.
  auto c = analyze_text(fuzz::self_read_program(40));
  const size_t bytes = c->module.source.size();
  EXPECT_LT(bytes, 40u * 400u) << "generated C++ must grow linearly with the chain";
  bool logged = false;
  for (const auto& line : c->lowered.log) {
    // Stored by the traffic rule (its operands reloaded in each reader) or the size rule.
    if (line.find("2 reads of a body loading") != std::string::npos ||
        line.find("2 reads and") != std::string::npos) {
      logged = true;
    }
  }
  EXPECT_TRUE(logged) << "explain must state the materialization rule";
}

TEST(CompileScaling, SourceGrowsLinearlyForEveryShape) {
  auto wide_sums = [](int n) {
    // n row sums all live until one final add tree: the wrapper's cleanup on a failed
    // allocation once listed every live buffer at every allocation.
    std::ostringstream s;
    s << "def wide(x: f32[16, 32]):\n";
    for (int i = 0; i < n; ++i) {
      s << "    p" << i << " = mul(x, " << i + 1 << ".0)\n";
      s << "    s" << i << " = sum(p" << i << ", dim=[-1], keepdim=True)\n";
    }
    s << "    t0 = add(s0, x)\n";
    for (int i = 1; i < n; ++i) s << "    t" << i << " = add(t" << i - 1 << ", s" << i << ")\n";
    s << "    return t" << n - 1 << "\n";
    return s.str();
  };
  struct Shape {
    const char* name;
    std::function<std::string(int)> gen;
  };
  for (const Shape& shape :
       {Shape{"self_read", fuzz::self_read_program}, Shape{"view_chain", fuzz::view_chain_program},
        Shape{"wide_dag", fuzz::wide_dag_program}, Shape{"wide_sums", wide_sums}}) {
    const size_t small = analyze_text(shape.gen(40))->module.source.size();
    const size_t large = analyze_text(shape.gen(160))->module.source.size();
    // Four times the nodes: at most a little over four times the code (fixed parts shrink
    // in proportion, so linear growth stays under 4.5x).
    EXPECT_LT(static_cast<double>(large), 4.5 * static_cast<double>(small)) << shape.name;
  }
}

TEST(CompileScaling, SharedInputGivesLinearlyManyFusionCandidates) {
  const int n = 600;
  auto c = analyze_text(fuzz::many_outputs_program(n));
  const auto& rounds = c->schedule.fusion_log.rounds;
  ASSERT_FALSE(rounds.empty());
  // Readers of one buffer pair up only within FusionLimits::horizontal_pair_distance (64), a
  // bound on the candidates for compile time. All 600 * 599 / 2 pairs were examined before.
  EXPECT_LE(rounds[0].candidates.size(), static_cast<size_t>(n) * 64);
  EXPECT_GT(rounds[0].possible, 0);
  // Every output is still computed, in kernels of at most 128 nodes.
  EXPECT_GE(c->schedule.kernels.size(), static_cast<size_t>(n) / 128);
  EXPECT_LT(c->schedule.kernels.size(), static_cast<size_t>(n) / 4);
}

TEST(CompileScaling, CycleCheckOnLongChainIsLinear) {
  // A chain of 100,000 nodes: ancestor sets would hold 5e9 entries. The maintained
  // topological order answers from the neighbourhood of the two groups.
  const int n = 100000;
  std::vector<std::set<int>> preds(static_cast<size_t>(n));
  for (int v = 1; v < n; ++v) preds[static_cast<size_t>(v)] = {v - 1};
  scheduler::CycleChecker checker(preds);
  for (int v = 0; v + 1 < n; v += 2) {
    ASSERT_FALSE(checker.would_create_cycle(v, v + 1));
    checker.merge(v, v + 1);
  }
  // Pairs of pairs two apart: the pair between them would sit on a cycle.
  for (int v = 0; v + 4 < n; v += 4) {
    ASSERT_TRUE(checker.would_create_cycle(v, v + 4)) << v;
    ASSERT_FALSE(checker.would_create_cycle(v, v + 2)) << v;
  }
  EXPECT_EQ(checker.group_of(1), checker.group_of(0));
  EXPECT_NE(checker.group_of(2), checker.group_of(0));
}

}  // namespace
}  // namespace stax
