// Provenance (issue 7, point 6): the graph ops each buffer's body computes are recorded by
// lowering, united over the members of each fused node, carried by the kernel IR, printed as
// a comment before every kernel function of the generated C++, and listed by explain.
#include <nlohmann/json.hpp>

#include "driver/compiler.h"
#include "driver/explain.h"
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using lowering::SourceOp;

// "exp (e), sum (s)" with the node positions checked too: graph order is the contract.
std::string listed(const std::vector<SourceOp>& ops) {
  for (size_t k = 1; k < ops.size(); ++k) {
    EXPECT_LT(ops[k - 1].node, ops[k].node) << "not in graph order";
  }
  return lowering::format_source_ops(ops);
}

// The ops of every fused node's kernel IR, by fused-node name.
std::map<std::string, std::string> kernel_ops(const Scheduled& s) {
  std::map<std::string, std::string> out;
  for (const kernel::Kernel& k : lower_all(s, avx512(4))) out[k.name] = listed(k.source_ops);
  return out;
}

CompileOptions avx512_options() {
  CompileOptions o;
  o.simd = runtime::SimdLevel::Avx512;
  o.num_threads = 4;
  return o;
}

constexpr const char* kExample72 =
    "def example_7_2(x: f32[64, 128]):\n"
    "    e = exp(x)\n"
    "    s = sum(e, dim=[-1])\n"
    "    m = amax(e, dim=[-1])\n"
    "    return s, m\n";

constexpr const char* kSoftmax =
    "def softmax(x: f32[32, 1000]):\n"
    "    m = amax(x, dim=[1], keepdim=True)\n"
    "    d = sub(x, m)\n"
    "    e = exp(d)\n"
    "    s = sum(e, dim=[1], keepdim=True)\n"
    "    y = div(e, s)\n"
    "    return y\n";

// d is cheap and read twice, so it is recomputed in the row sum and in the column sum, two
// kernels that cannot fuse (their iteration groups differ).
constexpr const char* kRecomputed =
    "def f(x: f32[64, 128]):\n"
    "    d = mul(x, x)\n"
    "    s = sum(d, dim=[1])\n"
    "    t = sum(d, dim=[0])\n"
    "    return s, t\n";

TEST(Provenance, LoweringRecordsEveryNodeInlinedIntoABuffer) {
  auto s = schedule_text(
      "def f(x: f32[8, 16]):\n"
      "    a = mul(x, 2.0)\n"
      "    t = transpose(a, 0, 1)\n"
      "    r = relu(t)\n"
      "    q = sum(r, dim=[0])\n"
      "    return q\n");
  ASSERT_EQ(s->lowered.buffers.size(), 1u);
  const auto& ops = s->lowered.buffers[0].source_ops;
  EXPECT_EQ(listed(ops), "mul (a), transpose (t), relu (r), sum (q)");
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].node, 0);
  EXPECT_EQ(ops[3].node, 3);
}

TEST(Provenance, AReductionEpilogueBelongsToItsNodeInEveryBuffer) {
  // mean is a stored sum and a division composed into its users: the sum's buffer and the
  // user's buffer both came from it; the users of the stored sum do not inherit x's ops.
  auto s = schedule_text(
      "def f(x: f32[8, 16]):\n"
      "    a = neg(x)\n"
      "    m = mean(a, dim=[1])\n"
      "    z = mul(m, 2.0)\n"
      "    return z\n");
  ASSERT_EQ(s->lowered.buffers.size(), 2u);
  EXPECT_EQ(listed(s->lowered.buffers[0].source_ops), "neg (a), mean (m)");
  EXPECT_EQ(listed(s->lowered.buffers[1].source_ops), "mean (m), mul (z)");
}

TEST(Provenance, MaterializedValuesEndTheChainOfTheirReaders) {
  // Example 7.2: exp is stored (costly, read twice); the reductions read buf0 only.
  auto s = schedule_text(kExample72);
  ASSERT_EQ(s->lowered.buffers.size(), 3u);
  EXPECT_EQ(listed(s->lowered.buffers[0].source_ops), "exp (e)");
  EXPECT_EQ(listed(s->lowered.buffers[1].source_ops), "sum (s)");
  EXPECT_EQ(listed(s->lowered.buffers[2].source_ops), "amax (m)");
}

TEST(Provenance, KernelsOfExample72NameTheirOps) {
  auto s = schedule_text(kExample72);
  const auto ops = kernel_ops(*s);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops.at("op0"), "exp (e)");
  EXPECT_EQ(ops.at("op1_op2"), "sum (s), amax (m)");
}

TEST(Provenance, AFusedSoftmaxKernelNamesEveryOpInGraphOrder) {
  auto s = schedule_text(kSoftmax);
  const auto ops = kernel_ops(*s);
  ASSERT_EQ(ops.size(), 1u) << "softmax is expected to fuse into one kernel";
  EXPECT_EQ(ops.begin()->second, "amax (m), sub (d), exp (e), sum (s), div (y)");
}

TEST(Provenance, AValueRecomputedInTwoKernelsIsNamedByBoth) {
  auto s = schedule_text(kRecomputed);
  ASSERT_EQ(s->lowered.buffers.size(), 2u) << "d was expected to be inlined, not stored";
  const auto ops = kernel_ops(*s);
  ASSERT_EQ(ops.size(), 2u);
  std::vector<std::string> lists;
  for (const auto& [name, list] : ops) lists.push_back(list);
  std::sort(lists.begin(), lists.end());
  EXPECT_EQ(lists, (std::vector<std::string>{"mul (d), sum (s)", "mul (d), sum (t)"}));
}

TEST(Provenance, TheGeneratedCppNamesTheOpsBeforeEachKernelFunction) {
  // Example 7.2's two loops share one function (Section 8.5): one line per loop, in order.
  const auto c = analyze(ir::parse_graph(kExample72), avx512_options());
  const std::string& source = c->module.source;
  EXPECT_TRUE(contains(source,
                       "// ops of op0: exp (e)\n"
                       "// ops of op1_op2: sum (s), amax (m)\n"
                       "static void kernel0("))
      << source;
  // Recomputation: both loops name d (they share one function: no buffer dies between them).
  const auto r = analyze(ir::parse_graph(kRecomputed), avx512_options());
  EXPECT_TRUE(contains(r->module.source,
                       "// ops of op0: mul (d), sum (s)\n"
                       "// ops of op1: mul (d), sum (t)\n"
                       "static void kernel0("))
      << r->module.source;
}

TEST(Provenance, ExplainListsEachLoopsOps) {
  const auto c = analyze(ir::parse_graph(kExample72), avx512_options());
  const std::string text = explain_text(*c);
  EXPECT_TRUE(contains(text, "      ops: exp (e)\n")) << text;
  EXPECT_TRUE(contains(text, "      ops: sum (s), amax (m)\n")) << text;
  const nlohmann::json doc = explain_json(*c);
  ASSERT_EQ(doc["kernels"].size(), 1u);
  const auto& loops = doc["kernels"][0]["loops"];
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[1]["fused_node"], "op1_op2");
  EXPECT_EQ(loops[1]["ops"], nlohmann::json::parse(R"([{"op": "sum", "value": "s"},
                                                       {"op": "amax", "value": "m"}])"));
}

TEST(Provenance, ExplainIrHeadsEveryPassWithTheOps) {
  CompileOptions o = avx512_options();
  o.record_ir = true;
  const auto c = analyze(ir::parse_graph(kSoftmax), o);
  ASSERT_FALSE(c->module.ir_log.empty());
  for (const std::string& step : c->module.ir_log) {
    EXPECT_TRUE(contains(step, ": amax (m), sub (d), exp (e), sum (s), div (y)\n")) << step;
  }
}

TEST(Provenance, TheCommentCannotBreakOutOfItsLine) {
  // A lowered graph built by hand may name anything; the comment stays one line of C++.
  kernel::Kernel k;
  k.name = "op0";
  k.source_ops = {{0, "exp", "a\nb"}, {1, "sum", "c\\"}};
  EXPECT_EQ(kernel::print_source_ops(k), "// ops of op0: exp (a?b), sum (c?)\n");
  k.source_ops.clear();
  EXPECT_EQ(kernel::print_source_ops(k), "// ops of op0: (none)\n");
}

}  // namespace
}  // namespace stax::kernel_test
