// External scheduler nodes (issue 14): a library call reads its operands whole (WholeDep,
// Definition 7.1), writes its whole output, never shares a loop with another node (the fusion
// log says why), and orders, keeps alive and releases buffers like any node. Plus the host
// program built over it: kernel functions split around the call, with their reasons.
#include <gtest/gtest.h>

#include <algorithm>

#include "kernel/pipeline.h"
#include "program/pipeline.h"
#include "schedule_util.h"

namespace stax::scheduler {
namespace {

using stax::testing::schedule_text;

constexpr const char* kLinearGelu = R"(
def f(x: f32[64, 96], w: f32[48, 96], b: f32[48]):
    n = neg(x)
    wt = permute(w, [1, 0])
    y = addmm(b, n, wt)
    g = gelu(y)
    return g
)";

const SchedulerNode& external_node(const Schedule& s) {
  for (const SchedulerNode& n : s.nodes) {
    if (n.is_external()) return n;
  }
  throw std::logic_error("no external node");
}

TEST(ExternalNodes, ReadTheirOperandsWholeAndWriteTheirWholeOutput) {
  auto s = schedule_text(kLinearGelu, true);
  const SchedulerNode& mm = external_node(s->schedule);
  ASSERT_EQ(mm.whole_read_deps.size(), 3u);
  EXPECT_EQ(mm.whole_read_deps[0].to_string(), "WholeDep('buf0')");  // the stored neg
  EXPECT_EQ(mm.whole_read_deps[1].buffer, "w");
  EXPECT_EQ(mm.whole_read_deps[1].numel, 96 * 48);
  EXPECT_EQ(mm.whole_read_deps[2].buffer, "b");
  EXPECT_EQ(mm.whole_read_deps[2].bytes(), 64 * 48 * 4);  // the bias seen at the output's size
  EXPECT_TRUE(mm.read_deps.empty());                      // no index to compare: nothing to fuse on
  EXPECT_EQ(mm.write_dep.to_string(), "MemoryDep('buf1', c0, {c0: 3072})");
  EXPECT_TRUE(mm.weak_deps.empty());
  EXPECT_EQ(WeakDep({"buf1", 3}).to_string(), "WeakDep('buf1', before op3)");
}

TEST(ExternalNodes, NeverFuseAndTheLogSaysWhy) {
  auto s = schedule_text(kLinearGelu, true);
  const Schedule& sched = s->schedule;
  EXPECT_EQ(sched.kernels.size(), 3u);  // neg, the call, gelu: nothing fused across the call
  bool refused = false;
  for (const auto& round : sched.fusion_log.rounds) {
    for (const auto& c : round.candidates) {
      if (c.reason.find("is an external call (a test library)") != std::string::npos &&
          c.reason.find("WholeDep") != std::string::npos) {
        refused = true;
        EXPECT_FALSE(c.fused);
      }
    }
  }
  EXPECT_TRUE(refused);
  // Dependences order the call after the producer of its operand and before its consumer.
  const auto position = [&](const std::string& buffer) {
    for (size_t k = 0; k < sched.kernels.size(); ++k) {
      for (int id : sched.kernels[k].members()) {
        if (sched.nodes[static_cast<size_t>(id)].write.buffer == buffer) return k;
      }
    }
    return sched.kernels.size();
  };
  EXPECT_LT(position("buf0"), position("buf1"));
  EXPECT_LT(position("buf1"), position("buf2"));
  // The stored operand lives until the call's end, the call's output until gelu's.
  EXPECT_EQ(sched.plan_of("buf0")->last_use, static_cast<int>(position("buf1")));
  EXPECT_EQ(sched.plan_of("buf1")->last_use, static_cast<int>(position("buf2")));
  EXPECT_FALSE(sched.plan_of("buf1")->elided);
}

TEST(ExternalNodes, AnUnusedCallIsDead) {
  auto s = schedule_text(R"(
def f(a: f32[8, 8], b: f32[8, 8]):
    c = mm(a, b)
    d = add(a, b)
    return d
)",
                         true);
  EXPECT_TRUE(s->schedule.dead.at(0));
  EXPECT_EQ(s->schedule.kernels.size(), 1u);
}

TEST(HostProgram, KernelFunctionsSplitAroundAnExternalCallWithReasons) {
  auto s = schedule_text(kLinearGelu, true);
  kernel::PipelineOptions options;
  program::MemoryOptions own_allocations;
  own_allocations.arena = false;
  const program::HostProgram p = program::build_host_program(s->schedule, options, own_allocations);
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_TRUE(p.steps[1].external);
  ASSERT_EQ(p.functions.size(), 2u);  // neg before the call, gelu after: never one function
  EXPECT_NE(p.functions[1].reason.find("the first loop after an external call"), std::string::npos);
  ASSERT_EQ(p.externals.size(), 1u);
  EXPECT_EQ(p.externals[0].call->library, "a test library");
  // allocate buf0, call kernel0, allocate buf1, call external 0, free buf0, release w and b,
  // allocate the output, call kernel1. The output gelu(buf1) takes buf1's storage in place
  // (its last read, at the element written): buf1 is allocated as the output, never freed.
  std::vector<std::string> kinds;
  for (const program::Statement& st : p.body) {
    kinds.push_back(std::visit(
        [](const auto& x) -> std::string {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, program::Allocate>) {
            return "alloc " + x.buffer;
          } else if constexpr (std::is_same_v<T, program::Free>) {
            return "free " + x.buffer;
          } else if constexpr (std::is_same_v<T, program::ReleaseInput>) {
            return "release " + x.input;
          } else if constexpr (std::is_same_v<T, program::CallKernel>) {
            return "kernel" + std::to_string(x.function);
          } else {
            return "external" + std::to_string(x.site);
          }
        },
        st));
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"alloc buf0", "kernel0", "release x", "alloc buf1",
                                             "external0", "free buf0", "release b", "release w",
                                             "alloc buf2", "kernel1"}));
  for (const program::Statement& st : p.body) {
    if (const auto* a = std::get_if<program::Allocate>(&st); a && a->buffer != "buf0") {
      EXPECT_TRUE(a->output) << a->buffer << " is the output's storage";
      EXPECT_EQ(a->in_place, a->buffer == "buf2") << a->buffer;
    }
  }
  // With the arena (the default), the intermediate buf0 gets an offset; buf1, the output's
  // storage, none; no frees.
  const program::HostProgram arena = program::build_host_program(s->schedule, options);
  std::vector<int64_t> offsets;
  for (const program::Statement& st : arena.body) {
    EXPECT_FALSE(std::holds_alternative<program::Free>(st));
    if (const auto* a = std::get_if<program::Allocate>(&st); a && !a->output) {
      offsets.push_back(a->arena_offset);
    }
  }
  ASSERT_EQ(offsets.size(), 1u);
  EXPECT_GE(offsets[0], 0);
  EXPECT_GT(arena.arena_bytes, 0);
  EXPECT_EQ(arena.num_intermediates, 0);
}

TEST(HostProgram, AdjacentLoopsShareAFunctionUntilAnIntermediateDies) {
  auto s = schedule_text(R"(
def f(x: f32[64, 64]):
    m = amax(x, dim=[1], keepdim=True)
    e = exp(x)
    s = sum(e, dim=[1], keepdim=True)
    y = div(e, s)
    z = sub(y, m)
    return z
)");
  kernel::PipelineOptions options;
  const program::HostProgram p = program::build_host_program(s->schedule, options);
  for (const program::KernelFunction& f : p.functions) EXPECT_FALSE(f.reason.empty());
  std::string log;
  for (const auto& line : p.log) log += line + "\n";
  EXPECT_NE(log.find("kernel0: "), std::string::npos) << log;
}

// Bodies of the stored buffers that compute `op` (each recomputation is one more).
int buffers_computing(const lowering::LoweredGraph& g, const std::string& op) {
  int n = 0;
  for (const auto& b : g.buffers) {
    for (const auto& source : b.source_ops) n += source.op == op ? 1 : 0;
  }
  return n;
}

TEST(ExternalOperands, AValueTheCallAndOthersReadIsStoredOnceAndLoadedByAll) {
  // n feeds the product through a view and the mul beside it: one store of n, which the call
  // reads as a layout and the mul loads (no private copy for the call, no recomputed neg).
  const std::string text =
      "def f(x: f32[2, 32, 96], w: f32[96, 48]):\n    n = neg(x)\n"
      "    v = view(n, [64, 96])\n    y = mm(v, w)\n    m = mul(n, n)\n    return y, m\n";
  auto shared = schedule_text(text, true);
  EXPECT_EQ(buffers_computing(shared->lowered, "neg"), 1);
  bool logged = false;
  for (const auto& line : shared->lowered.log) {
    logged = logged || line.find("read whole by") != std::string::npos;
  }
  EXPECT_TRUE(logged);
  const SchedulerNode& mm = external_node(shared->schedule);
  EXPECT_EQ(mm.whole_read_deps[0].to_string(), "WholeDep('buf0')");  // n itself, viewed

  // Without a library the loop nest composes n into its products and the mul recomputes it.
  auto loops = schedule_text(text, false);
  EXPECT_EQ(buffers_computing(loops->lowered, "neg"), 2);

  // Read by the call alone: the call stores what it reads, as before.
  auto alone = schedule_text(
      "def f(x: f32[2, 32, 96], w: f32[96, 48]):\n    n = neg(x)\n"
      "    v = view(n, [64, 96])\n    y = mm(v, w)\n    return y\n",
      true);
  EXPECT_EQ(buffers_computing(alone->lowered, "neg"), 1);
  for (const auto& line : alone->lowered.log) {
    EXPECT_EQ(line.find("read whole by"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace stax::scheduler

namespace stax::scheduler {
namespace {

TEST(EpilogueMatch, RecognizesTheChainsALibraryApplies) {
  auto s = stax::testing::schedule_text(R"(
def f(a: f32[8, 16], b: f32[16, 4], c: f32[8, 4]):
    y = mm(a, b)
    t = tanh(y)
    u = mul(t, 0.5)
    v = sub(u, 2.0)
    w = pow(v, 2)
    z = abs(w)
    r = sqrt(z)
    return r
)");
  const SchedulerNode& chain = s->schedule.nodes.back();
  const EpilogueMatch m = match_epilogue(chain, "buf0");
  ASSERT_TRUE(m.matches) << m.reason;
  std::string text;
  for (const auto& op : m.chain) text += op.to_string() + "; ";
  EXPECT_EQ(text, "tanh; x * 0.5; x + -2; x * x; abs; sqrt; ") << chain.buffer->origin;
}

TEST(EpilogueMatch, RefusesWhatIsNotAChainOverTheResult) {
  const char* cases[][2] = {
      {"    t = mul(y, c)\n", "it reads c too"},
      {"    s = tanh(y)\n    t = mul(y, s)\n", "it reads buf0 twice"},
      {"    t = gelu(y)\n", "is not an op the library applies"},
      {"    s = div(y, 3.0)\n    t = tanh(s)\n", "its div is not an op"},
      {"    t = _to_copy(y, dtype=\"f64\")\n", "it converts to f64"},
  };
  for (const auto& [body, why] : cases) {
    auto s = stax::testing::schedule_text(
        std::string("def f(a: f32[8, 16], b: f32[16, 4], c: f32[8, 4]):\n    y = mm(a, b)\n") +
        body + "    return t\n");
    const SchedulerNode& consumer = s->schedule.nodes.back();
    const EpilogueMatch m = match_epilogue(consumer, "buf0");
    EXPECT_FALSE(m.matches) << body;
    EXPECT_NE(m.reason.find(why), std::string::npos) << body << ": " << m.reason;
  }
}

std::unique_ptr<stax::testing::Scheduled> schedule_with_epilogues(const std::string& text,
                                                                  bool library_accepts) {
  auto s = std::make_unique<stax::testing::Scheduled>();
  lowering::LoweringOptions lo;
  lo.library_for = [](const lowering::ExternalCall&, std::string*) {
    return std::optional<std::string>("a test library");
  };
  s->lowered = lowering::lower(ir::parse_graph(text), lo);
  ScheduleOptions so;
  so.epilogue_check = [library_accepts](const lowering::ExternalCall&,
                                        const std::vector<EpilogueOp>&, std::string* why) {
    if (!library_accepts && why != nullptr) *why = "the test library refuses";
    return library_accepts;
  };
  s->schedule = schedule(s->lowered, so);
  return s;
}

TEST(EpilogueFusion, TheCallAbsorbsItsChainAndItsOutputIsNeverStored) {
  const std::string text =
      "def f(a: f32[8, 16], b: f32[16, 4]):\n    y = mm(a, b)\n    t = tanh(y)\n    return t\n";
  auto s = schedule_with_epilogues(text, true);
  const Schedule& sched = s->schedule;
  ASSERT_EQ(sched.kernels.size(), 1u);
  EXPECT_EQ(sched.kernels[0].epilogue.size(), 1u);
  EXPECT_EQ(sched.kernels[0].members().size(), 2u);
  EXPECT_TRUE(sched.plan_of("buf0")->elided);  // the call writes the tanh's buffer directly
  ASSERT_EQ(sched.epilogue_log.lines.size(), 1u);
  EXPECT_NE(sched.epilogue_log.lines[0].find("saves a pass over buf0"), std::string::npos);
  kernel::PipelineOptions options;
  const program::HostProgram p = program::build_host_program(sched, options);
  ASSERT_EQ(p.externals.size(), 1u);
  EXPECT_EQ(p.externals[0].output, "buf1");
  EXPECT_TRUE(p.functions.empty());

  // Refused by the library: two steps, with the library's reason in the log.
  auto refused = schedule_with_epilogues(text, false);
  EXPECT_EQ(refused->schedule.kernels.size(), 2u);
  EXPECT_NE(refused->schedule.epilogue_log.lines.at(0).find("the test library refuses"),
            std::string::npos);
}

TEST(EpilogueFusion, NotWhenTheResultIsAnOutputOrHasSeveralReaders) {
  auto output = schedule_with_epilogues(
      "def f(a: f32[8, 16], b: f32[16, 4]):\n    y = mm(a, b)\n    t = tanh(y)\n"
      "    return y, t\n",
      true);
  EXPECT_EQ(output->schedule.kernels.size(), 2u);
  EXPECT_NE(output->schedule.epilogue_log.lines.at(0).find("is a graph output"), std::string::npos);
  auto readers = schedule_with_epilogues(
      "def f(a: f32[8, 16], b: f32[16, 4]):\n    y = mm(a, b)\n    t = tanh(y)\n"
      "    s = sum(y, dim=[1])\n    return t, s\n",
      true);
  EXPECT_NE(readers->schedule.epilogue_log.lines.at(0).find("has 2 readers"), std::string::npos);
}

TEST(ExternalOperands, AClonePassesItsStorageWhereEagerLaysItOutAsStored) {
  // clone of contiguous data: the call reads x itself, nothing is copied.
  auto same = schedule_text(
      "def f(x: f32[2, 32, 96], w: f32[96, 48]):\n    c = clone(x)\n"
      "    v = view(c, [64, 96])\n    y = mm(v, w)\n    return y\n",
      true);
  EXPECT_EQ(same->lowered.buffers.size(), 1u);
  EXPECT_EQ(external_node(same->schedule).whole_read_deps[0].buffer, "x");
  // clone of a permute: eager's clone is contiguous, the data is not, and the view merges two
  // dims that no stride expresses in the data: the call reads a contiguous copy.
  auto transposed = schedule_text(
      "def f(x: f32[32, 2, 96], w: f32[96, 48]):\n    t = permute(x, [1, 0, 2])\n"
      "    c = clone(t, memory_format=\"contiguous_format\")\n    v = view(c, [64, 96])\n"
      "    y = mm(v, w)\n    return y\n",
      true);
  EXPECT_EQ(transposed->lowered.buffers.size(), 2u);
  EXPECT_EQ(external_node(transposed->schedule).whole_read_deps[0].buffer, "buf0");
}

}  // namespace
}  // namespace stax::scheduler
