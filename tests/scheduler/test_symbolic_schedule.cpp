// Issue 33, step 3 (docs/symbolic_sizes.md): the scheduler takes size symbols. Definition
// 7.2's comparisons of iteration groups and normalized indices are equalities of canonical
// forms, so a symbolic program fuses as the static program of its hints wherever the two
// agree at every size, and never where they agree only at the hints (rows of s0 and of s1);
// scores and peak estimates read the hints. The host program takes the symbols too.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "graph_passes/bind_sizes.h"
#include "index/shape_exprs.h"
#include "ir/graph.h"
#include "lowering/lowering.h"
#include "program/host_printer.h"
#include "program/pipeline.h"
#include "scheduler/schedule.h"

namespace stax::scheduler {
namespace {

// examples/symbolic_rows.stax: a layernorm with a tanh and a residual over s0 rows of 64, and a
// softmax along s0 for 4 queries.
ir::Graph block() {
  return ir::parse_graph_file(std::string(STAX_EXAMPLES_DIR) + "/symbolic_rows.stax");
}

// Each kernel: its members' buffers and its loops, sizes evaluated at `values`.
std::vector<std::string> kernels_of(const Schedule& s,
                                    const std::map<std::string, int64_t>& values) {
  auto at = [&](const std::vector<index::Expr>& sizes) {
    std::string out;
    for (const index::Expr& e : sizes) out += std::to_string(index::evaluate(e, values)) + " ";
    return out;
  };
  std::vector<std::string> out;
  for (const FusedNode& f : s.kernels) {
    std::string line = "outer " + at(f.outer);
    for (const LoopNest& nest : f.nests) {
      line += "| " + at(nest.sizes) + "/ " + at(nest.reduction_sizes) + ":";
      for (int id : nest.nodes) line += " " + s.nodes[static_cast<size_t>(id)].buffer->name;
    }
    out.push_back(line);
  }
  return out;
}

TEST(SymbolicSchedule, FusesAsTheStaticProgramOfItsHints) {
  const ir::Graph g = block();
  const lowering::LoweredGraph symbolic = lowering::lower(g);
  ASSERT_TRUE(symbolic.is_symbolic());
  const Schedule s = schedule(symbolic);
  const lowering::LoweredGraph bound = lowering::lower(graph_passes::bind_sizes(g, {{"s0", 128}}));
  const Schedule t = schedule(bound);
  // The same kernels; their order may differ, as the next check shows.
  std::vector<std::string> got = kernels_of(s, {{"s0", 128}}), want = kernels_of(t, {});
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  // The softmax's exponentials (a row of s0 per query) stay in a per-row slice of the static
  // program; a slice of symbolic size has no constant size to hold, so the symbolic program
  // stores them (and its memory order, simulating that, may differ).
  const std::string exps = "buf4";
  ASSERT_NE(symbolic.find_buffer(exps)->origin.find("exp"), std::string::npos);
  EXPECT_TRUE(t.is_localized(exps));
  EXPECT_FALSE(s.is_localized(exps));
  // The layernorm's reductions and the pointwise tail share one kernel over the s0 rows.
  bool rows_fused = false;
  for (const FusedNode& f : s.kernels) {
    if (f.members().size() >= 3 && !f.outer.empty() && f.outer[0] == index::Expr::var("s0")) {
      rows_fused = true;
    }
  }
  EXPECT_TRUE(rows_fused) << ::testing::PrintToString(kernels_of(s, {{"s0", 128}}));
}

TEST(SymbolicSchedule, SizesEqualOnlyAtTheHintsDoNotFuse) {
  // Both sums read w; at the hints (64 rows each) their iteration groups are the same, so the
  // static program fuses them. s0 and s1 may differ at run time: the symbolic one may not.
  const char* text =
      "def f(x: f32[s0, 64], y: f32[s1, 64], w: f32[64]) where s0: [1, 512] hint=64, "
      "s1: [1, 512] hint=64:\n"
      "    a = add(x, w)\n"
      "    b = add(y, w)\n"
      "    return a, b\n";
  const ir::Graph g = ir::parse_graph(text, "f.stax");
  const lowering::LoweredGraph bound =
      lowering::lower(graph_passes::bind_sizes(g, {{"s0", 64}, {"s1", 64}}));
  EXPECT_EQ(schedule(bound).kernels.size(), 1u);
  const lowering::LoweredGraph symbolic = lowering::lower(g);
  const Schedule s = schedule(symbolic);
  EXPECT_EQ(s.kernels.size(), 2u);
}

// Relative positions j - i over an [s0, s0] grid (a T5 encoder's position buckets): the
// static program merges the two loops into one of s0*s0 and computes i and j with divisions by
// a constant, which its vector forms split. Over a symbolic s0 the merged loop would compute
// them as c // s0 and c % s0, which no vector form takes: the loops stay apart, and the inner
// one is vectorized with a contiguous load.
TEST(SymbolicSchedule, LoopsAValueWouldDivideByASymbolStayApart) {
  const char* text =
      "def f(x: f32[s0, s0]) where s0: [1, 512] hint=64:\n"
      "    i = arange(0, s0)\n"
      "    r = unsqueeze(i, 1)\n"
      "    d = sub(i, r)\n"
      "    e = add(x, d)\n"
      "    return e\n";
  const ir::Graph g = ir::parse_graph(text, "f.stax");
  const lowering::LoweredGraph at_64 = lowering::lower(graph_passes::bind_sizes(g, {{"s0", 64}}));
  const Schedule bound = schedule(at_64);
  ASSERT_EQ(bound.kernels.size(), 1u);
  EXPECT_EQ(kernels_of(bound, {}).at(0), "outer | 4096 / : buf0");
  const lowering::LoweredGraph symbolic = lowering::lower(g);
  const Schedule s = schedule(symbolic);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(kernels_of(s, {{"s0", 64}}).at(0), "outer | 64 64 / : buf0");
}

// The host program of a symbolic schedule takes the symbols: the wrapper reads s0 from x's
// rows and checks its facts, every kernel function takes it, the buffers over s0 are
// allocated with bytes over s0 (the arena's tree evaluated per call), none at the hints.
TEST(SymbolicSchedule, TheHostProgramTakesTheSymbols) {
  const lowering::LoweredGraph lowered = lowering::lower(block());
  const Schedule s = schedule(lowered);
  const program::HostProgram host = program::build_host_program(s, kernel::PipelineOptions{});
  ASSERT_EQ(host.symbols.count("s0"), 1u);
  int over_s0 = 0;
  for (const program::Statement& st : host.body) {
    const auto* a = std::get_if<program::Allocate>(&st);
    if (a == nullptr) continue;
    if (!a->size.is_constant()) ++over_s0;
    EXPECT_EQ(index::value_at_hints(a->size, host.symbols), a->bytes) << a->buffer;
  }
  EXPECT_GT(over_s0, 0);
  ASSERT_EQ(host.arena_sizes.size(), host.arena.offset_terms.size());
  const std::string source = program::print_host_program(host, runtime::SimdLevel::Scalar, 2);
  EXPECT_NE(source.find("const int64_t s0 = inputs[0].sizes[0];"), std::string::npos) << source;
  EXPECT_NE(source.find("s0 < 1 || s0 > 4096"), std::string::npos) << source;
  EXPECT_NE(source.find("int64_t s0, int num_threads"), std::string::npos) << source;
  EXPECT_NE(source.find("stax_arena_acquire(stax_arena_bytes)"), std::string::npos) << source;
}

}  // namespace
}  // namespace stax::scheduler
