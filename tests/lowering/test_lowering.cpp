// Lowering: composition of pointwise ops, views as index maps, the per-device
// materialization rule, and outputs that are views.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "lowering/lowering.h"
#include "scheduler/recording_handler.h"

namespace stax::lowering {
namespace {

LoweredGraph lower_text(const std::string& text, Device device = Device::Cpu) {
  LoweringOptions options;
  options.device = device;
  return lower(ir::parse_graph(text), options);
}

const char* kExp2Users = R"(
def f(x: f32[64, 128]):
    e = exp(x)
    s = sum(e, dim=[-1])
    m = amax(e, dim=[-1])
    return s, m
)";

TEST(Lowering, PointwiseComposesIntoReduction) {
  auto g = lower_text(R"(
def f(x: f32[64, 128], y: f32[64, 128]):
    p = mul(x, y)
    q = relu(p)
    s = sum(q, dim=[-1])
    return s
)");
  ASSERT_EQ(g.buffers.size(), 1u);
  EXPECT_EQ(g.buffers[0].origin, "mul+relu+sum");
  EXPECT_EQ(index::static_values(g.buffers[0].ranges, "test"), (std::vector<int64_t>{64}));
  EXPECT_EQ(index::static_values(g.buffers[0].reduction_ranges, "test"),
            (std::vector<int64_t>{128}));
}

TEST(Lowering, ExpensiveMultiUserValueMaterializedOnCpuOnly) {
  auto cpu = lower_text(kExp2Users, Device::Cpu);
  EXPECT_EQ(cpu.buffers.size(), 3u);
  auto gpu = lower_text(kExp2Users, Device::Gpu);
  EXPECT_EQ(gpu.buffers.size(), 2u);  // exp inlined into both reductions
}

TEST(Lowering, CheapMultiUserValueIsInlined) {
  auto g = lower_text(R"(
def f(x: f32[64, 128]):
    a = add(x, 1.0)
    s = sum(a, dim=[-1])
    m = amax(a, dim=[-1])
    return s, m
)");
  EXPECT_EQ(g.buffers.size(), 2u);
}

TEST(Lowering, ViewsAreIndexMapsNotCopies) {
  auto g = lower_text(R"(
def f(x: f32[4, 6]):
    t = transpose(x, 0, 1)
    r = reshape(t, [24])
    u = unsqueeze(r, 0)
    e = expand(u, [3, 24])
    y = mul(e, 2.0)
    return y
)");
  ASSERT_EQ(g.buffers.size(), 1u);  // only the output
  scheduler::RecordingHandler rec;
  g.buffers[0].run_body(rec, {index::Expr(1), index::Expr(7)}, {});
  ASSERT_EQ(rec.loads.size(), 1u);
  // Element 7 of the flattened transpose is t[1][3] = x[3][1] = offset 3*6 + 1.
  EXPECT_EQ(index::evaluate(rec.loads[0].index, {}), 19);
  ASSERT_EQ(rec.stores.size(), 1u);
  EXPECT_EQ(index::evaluate(rec.stores[0].index, {}), 24 + 7);
}

TEST(Lowering, OutputThatIsAViewOfAnInputAliasesIt) {
  auto g = lower_text(R"(
def f(x: f32[4, 6]):
    t = transpose(x, 0, 1)
    return t
)");
  EXPECT_TRUE(g.buffers.empty());
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_TRUE(g.outputs[0].is_input);
  EXPECT_EQ(index::static_values(g.outputs[0].strides, "test"), (std::vector<int64_t>{1, 6}));
}

TEST(Lowering, OutputViewOfReductionNeedsNoCopy) {
  auto g = lower_text(R"(
def f(x: f32[4, 6]):
    s = sum(x, dim=[1])
    u = unsqueeze(s, 1)
    return u
)");
  ASSERT_EQ(g.buffers.size(), 1u);
  EXPECT_FALSE(g.outputs[0].is_input);
  EXPECT_EQ(g.outputs[0].buffer, g.buffers[0].name);
  EXPECT_EQ(index::static_values(g.outputs[0].sizes, "test"), (std::vector<int64_t>{4, 1}));
}

TEST(Lowering, ComparisonsFeedWhere) {
  auto g = lower_text(R"(
def f(x: f32[8], y: f32[8]):
    c = gt(x, y)
    w = where(c, x, -inf)
    return c, w
)");
  ASSERT_EQ(g.buffers.size(), 2u);
  EXPECT_EQ(g.buffers[0].dtype, DType::Bool);
  EXPECT_EQ(g.buffers[1].dtype, DType::Float32);
}

TEST(Lowering, ViewOfZeroDimValue) {
  // view(x, [1]), [-1] and [1, 1] of a 0-dim value are views, as in PyTorch and the eager
  // interpreter; lowering once refused them as incompatible with the strides.
  auto g = lower_text(R"(
def f(a: f32[5]):
    s = sum(a)
    v = view(s, [1])
    w = view(s, [-1])
    u = view(s, [1, 1])
    return v, w, u
)");
  ASSERT_EQ(g.outputs.size(), 3u);
  for (const auto& out : g.outputs) EXPECT_EQ(out.buffer, g.outputs[0].buffer);
  EXPECT_EQ(index::static_values(g.outputs[2].sizes, "test"), (std::vector<int64_t>{1, 1}));
}

TEST(Materialization, ReadTwiceCountsTwice) {
  // add(v, v) runs v's loader twice per element: its reads, not its users, decide.
  auto g = lower_text(R"(
def f(x: f32[8]):
    a = exp(x)
    b = add(a, a)
    return b
)");
  ASSERT_EQ(g.buffers.size(), 2u) << "exp read twice is materialized on the CPU";
}

TEST(Materialization, ViewChainIndexIsBounded) {
  // transpose + reshape to another factorization, 12 times: the index of the final load
  // doubled its divisions with every pair; past the bound a copy resets it.
  std::string text = "def f(x: f32[12, 35]):\n    v0 = add(x, 1.0)\n";
  int k = 0;
  for (int i = 0; i < 12; ++i) {
    text += "    v" + std::to_string(k + 1) + " = transpose(v" + std::to_string(k) + ", 0, 1)\n";
    ++k;
    text += "    v" + std::to_string(k + 1) + " = reshape(v" + std::to_string(k) +
            (i % 2 == 0 ? ", [20, 21])\n" : ", [12, 35])\n");
    ++k;
  }
  text += "    return v" + std::to_string(k) + "\n";
  auto g = lower_text(text);
  EXPECT_GT(g.buffers.size(), 2u);
  for (const auto& buf : g.buffers) {
    scheduler::RecordingHandler rec;
    std::vector<index::Expr> idx;
    for (size_t d = 0; d < buf.ranges.size(); ++d)
      idx.push_back(index::Expr::var("i" + std::to_string(d)));
    buf.run_body(rec, idx, {});
    for (const auto& read : rec.loads) {
      EXPECT_LE(index::count_divisions(read.index, 1000), 16) << buf.name;
    }
  }
}

TEST(Lowering, ErrorsNameTheOpAndItsLine) {
  // Refusals after parsing point at the statement: the op, its value and FILE:LINE.
  const auto graph = ir::parse_graph(R"(def f(x: f32[3, 4] strides=[1, 3]):
    t = add(x, 1.0)
    v = view(x, [12])
    return v
)",
                                     "prog.stax");
  try {
    lower(graph);
    FAIL() << "view of a transposed input must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("lowering view 'v' at prog.stax:3: "), std::string::npos)
        << e.what();
  }
}

TEST(Materialization, CostModelRules) {
  BodyStats transcendental{1, 0, 0, 1};
  EXPECT_TRUE(decide_materialization(Device::Cpu, transcendental, 2).materialize);
  EXPECT_FALSE(decide_materialization(Device::Cpu, transcendental, 1).materialize);
  EXPECT_FALSE(decide_materialization(Device::Gpu, transcendental, 2).materialize);
  BodyStats cheap{2, 3, 0, 0};
  EXPECT_FALSE(decide_materialization(Device::Cpu, cheap, 3).materialize);
  BodyStats big{10, 60, 0, 0};
  EXPECT_TRUE(decide_materialization(Device::Cpu, big, 2).materialize);
}

TEST(Materialization, CheapValuesAreStoredWhenThatMovesFewerElements) {
  // Against the traffic count itself: recomputed in each of `reads` readers, the body's
  // `loads` operands are loaded reads * loads times; stored, loads + 1 (the write) + reads.
  for (int reads = 2; reads <= 6; ++reads) {
    for (int64_t loads = 1; loads <= 10; ++loads) {
      const BodyStats body{loads, loads - 1, 0, 0};  // a chain of adds over the operands
      const bool fewer = loads + 1 + reads < reads * loads;
      EXPECT_EQ(decide_materialization(Device::Cpu, body, reads).materialize, fewer)
          << reads << " reads, " << loads << " loads";
    }
  }
}

TEST(Materialization, AResidualStreamIsStoredNotRecomputedInEveryLayer) {
  // r2 = x + a + b + c, read by the next add and twice by a normalization: recomputing it
  // in each reader would reload its four operands three times.
  const auto g =
      lower(ir::parse_graph(R"(def f(x: f32[8, 64], a: f32[8, 64], b: f32[8, 64], c: f32[8, 64]):
    r0 = add(x, a)
    r1 = add(r0, b)
    r2 = add(r1, c)
    m = mean(r2, dim=[1], keepdim=True)
    d = sub(r2, m)
    y = add(r2, d)
    return y
)"));
  bool stored = false;
  for (const auto& line : g.log) {
    stored = stored || line.find("reads of a body loading 4 operands") != std::string::npos;
  }
  EXPECT_TRUE(stored);
}

// T5's position bias: computed once per head and position pair ([1, 12, 8, 8] here, from a
// gathered table), added to the scores of every batch in two layers. Each add reads it once
// but evaluates it 4 times per element (the batch broadcast), so it is stored; without the
// broadcast (batch 1) the same two reads leave it cheap enough to recompute.
std::vector<std::string> bias_log(int batch) {
  const std::string b = std::to_string(batch);
  return lower(ir::parse_graph("def f(s0: f32[" + b + ", 12, 8, 8], s1: f32[" + b +
                               ", 12, 8, 8], t: f32[32, 12], i: i64[8, 8]):\n"
                               "    e = embedding(t, i)\n"
                               "    p = permute(e, [2, 0, 1])\n"
                               "    u = unsqueeze(p, 0)\n"
                               "    bias = mul(u, 0.5)\n"
                               "    a0 = add(s0, bias)\n"
                               "    a1 = add(s1, bias)\n"
                               "    return a0, a1\n"))
      .log;
}

TEST(Materialization, AValueBroadcastByItsReadersCountsEveryEvaluation) {
  auto stored = [](const std::vector<std::string>& log) {
    for (const auto& line : log) {
      if (line.find("(2 reads, broadcast to 8 evaluations per element)") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(stored(bias_log(4)));
  // Batch 1: both adds recompute the bias (only the two outputs are stored), and the log says
  // why it was not stored.
  const std::vector<std::string> unbroadcast = bias_log(1);
  ASSERT_EQ(unbroadcast.size(), 3u);
  int recomputed = 0;
  for (const auto& line : unbroadcast) {
    recomputed +=
        line.find("mul 'bias'") != std::string::npos &&
        line.find("(not stored): 2 reads, cheap to recompute: inlined") != std::string::npos;
  }
  EXPECT_EQ(recomputed, 1) << unbroadcast[0] << "\n" << unbroadcast[1] << "\n" << unbroadcast[2];
  // The rule itself: 8 evaluations of a body loading 2 operands move more than storing it.
  EXPECT_TRUE(decide_materialization(Device::Cpu, BodyStats{2, 1, 0, 0}, 8).materialize);
  EXPECT_FALSE(decide_materialization(Device::Cpu, BodyStats{2, 1, 0, 0}, 2).materialize);
}

TEST(Materialization, ConcatenationIsNotABroadcast) {
  // cat's result is twice each half, but it reads every element of each once.
  const auto g = lower(ir::parse_graph(R"(def f(x: f32[8, 64], y: f32[8, 64]):
    h = add(x, y)
    c = cat([h, h], dim=0)
    return c
)"));
  for (const auto& line : g.log) EXPECT_EQ(line.find("broadcast"), std::string::npos) << line;
}

}  // namespace
}  // namespace stax::lowering
