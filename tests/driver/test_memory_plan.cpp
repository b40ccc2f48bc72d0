// Section 7.5 end to end: the kernel order chosen by peak memory and the arena of
// intermediates kept across calls compute what eager computes, with each of them on and off,
// at sizes that reach the parallel paths, at 1 and 2 threads, called repeatedly and from
// several threads at once (each concurrent call its own arena).
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "driver/compiler.h"
#include "driver/explain.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "expect_outputs_match.h"
#include "ir/graph.h"

namespace stax {
namespace {

// Intermediates of several sizes and dtypes around library calls; exp's buffer has two
// readers, so it is stored; exp(tanh(z)) reads z for the last time where it writes, and is stored
// for its two reductions: it takes z's storage in place.
const char* kProgram =
    "def f(a: f32[256, 1024], b: f32[1024, 256], c: f32[256, 256], k: i64[256, 256]):\n"
    "    e = exp(a)\n    s = sum(e, [1])\n    m = amax(e, [1])\n"
    "    t = tanh(a)\n    p = mm(t, b)\n    q = add(p, c)\n    n = neg(q)\n"
    "    u = mul(n, q)\n    kk = mul(k, k)\n    ks = sum(kk, [0])\n"
    "    v = sum(u, [0])\n    w = mul(v, v)\n"
    "    z = mm(c, c)\n    zh = tanh(z)\n    zr = exp(zh)\n    zs = sum(zr, [1])\n"
    "    zt = amax(zr, [0])\n"
    "    return s, m, w, ks, zs, zt\n";

std::vector<Tensor> program_inputs() {
  return {eager::random_tensor(DType::Float32, {256, 1024}, 1),
          eager::random_tensor(DType::Float32, {1024, 256}, 2),
          eager::random_tensor(DType::Float32, {256, 256}, 3),
          eager::random_tensor(DType::Int64, {256, 256}, 4)};
}

void expect_identical(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                      const std::string& where) {
  ASSERT_EQ(x.size(), y.size());
  for (size_t k = 0; k < x.size(); ++k) {
    const eager::Difference d = eager::compare(x[k], y[k], 0, 0);
    EXPECT_TRUE(d.within_tolerance) << where << ", output " << k << ": max abs " << d.max_abs;
  }
}

TEST(MemoryPlan, OrderAndArenaOnAndOffComputeWhatEagerComputes) {
  const ir::Graph g = ir::parse_graph(kProgram);
  const std::vector<Tensor> inputs = program_inputs();
  const std::vector<Tensor> expected = eager::run(g, inputs);
  std::optional<std::vector<Tensor>> reference;
  for (bool reorder : {false, true}) {
    for (int placement = 0; placement < 6; ++placement) {
      // The arena; each intermediate allocated, with the free pool; without it; each with
      // in-place reuse and without it.
      const bool arena = placement % 3 == 0;
      const bool in_place = placement < 3;
      CompileOptions o;
      o.reorder_for_memory = reorder;
      o.memory_arena = arena;
      o.reuse_buffers = placement % 3 == 1;
      o.in_place_reuse = in_place;
      const CompiledGraph compiled = compile(g, o);
      const std::string where = std::string("reorder ") + (reorder ? "on" : "off") +
                                (arena                ? ", arena"
                                 : placement % 3 == 1 ? ", reuse"
                                                      : ", no reuse") +
                                (in_place ? ", in place" : "");
      bool wrote_in_place = false;
      for (const auto& p : compiled.compilation().schedule.buffers) {
        wrote_in_place |= !p.in_place_of.empty();
      }
      EXPECT_EQ(wrote_in_place, in_place) << where;
      EXPECT_EQ(compiled.source().find("stax_arena_acquire") != std::string::npos, arena) << where;
      EXPECT_EQ(compiled.source().find("stax_alloc(") != std::string::npos, !arena) << where;
      EXPECT_EQ(compiled.compilation().schedule.memory_order.candidates.empty(), !reorder);
      for (int threads : {1, 2}) {
        RunOptions r;
        r.num_threads = threads;
        // The second call runs on the arena the first one left.
        for (int call = 0; call < 2; ++call) {
          const std::vector<Tensor> out = compiled.run(inputs, r);
          const std::string at =
              where + ", " + std::to_string(threads) + " threads, call " + std::to_string(call);
          expect_outputs_match(g, out, expected, at);
          // Neither the order nor the placement changes any arithmetic.
          if (!reference) reference = out;
          expect_identical(out, *reference, at);
        }
      }
    }
  }
}

TEST(MemoryPlan, ConcurrentCallsEachGetTheirOwnArena) {
  const ir::Graph g = ir::parse_graph(kProgram);
  const CompiledGraph compiled = compile(g);
  ASSERT_NE(compiled.source().find("stax_arena_acquire"), std::string::npos);
  // Different inputs per thread: calls sharing an arena would mix their intermediates.
  std::vector<std::vector<Tensor>> inputs;
  std::vector<std::vector<Tensor>> expected;
  for (int t = 0; t < 4; ++t) {
    inputs.push_back({eager::random_tensor(DType::Float32, {256, 1024}, 10 + t),
                      eager::random_tensor(DType::Float32, {1024, 256}, 20 + t),
                      eager::random_tensor(DType::Float32, {256, 256}, 30 + t),
                      eager::random_tensor(DType::Int64, {256, 256}, 40 + t)});
    RunOptions one;
    one.num_threads = 1;
    expected.push_back(compiled.run(inputs.back(), one));
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      RunOptions one;
      one.num_threads = 1;
      for (int call = 0; call < 10; ++call) {
        const std::vector<Tensor> out = compiled.run(inputs[static_cast<size_t>(t)], one);
        for (size_t k = 0; k < out.size(); ++k) {
          if (!eager::compare(out[k], expected[static_cast<size_t>(t)][k], 0, 0).within_tolerance) {
            ++mismatches[static_cast<size_t>(t)];
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[static_cast<size_t>(t)], 0) << "thread " << t;
}

// explain shows the order's candidates and the arena's offsets beside M*.
TEST(MemoryPlan, TheProgramLogNamesTheArenaAndItsOffsets) {
  const auto c = analyze(ir::parse_graph(kProgram));
  std::string log;
  for (const auto& line : c->module.program_log) log += line + "\n";
  EXPECT_NE(log.find("intermediates at fixed offsets in"), std::string::npos) << log;
  EXPECT_NE(log.find("their M* is"), std::string::npos) << log;
  EXPECT_NE(log.find(" at offset 0 ("), std::string::npos) << log;
  EXPECT_NE(c->schedule.memory_order.reason.find("original"), std::string::npos);
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// Without the arena, the free pool's reuse lines compile and run: a chain of products whose
// third result takes the first's storage, at sizes that reach the parallel paths. Placement
// changes no arithmetic, so the results equal, bit for bit, those of the same program with
// each intermediate in memory of its own and with the arena. (Against eager, four chained
// float32 products amplify rounding beyond the one-op tolerance of driver/tolerance.h; the
// first test compares every placement with eager.)
TEST(MemoryPlan, ReusedStorageComputesWhatFreshStorageComputes) {
  const ir::Graph g = ir::parse_graph(
      "def f(a: f32[256, 256], w: f32[256, 256]):\n    x1 = mm(a, w)\n    y1 = tanh(x1)\n"
      "    x2 = mm(y1, w)\n    y2 = tanh(x2)\n    x3 = mm(y2, w)\n    y3 = tanh(x3)\n"
      "    x4 = mm(y3, w)\n    return x4\n");
  const std::vector<Tensor> inputs = {eager::random_tensor(DType::Float32, {256, 256}, 1),
                                      eager::random_tensor(DType::Float32, {256, 256}, 2)};
  CompileOptions pool;
  pool.memory_arena = false;
  CompileOptions own = pool;
  own.reuse_buffers = false;
  const CompiledGraph with_reuse = compile(g, pool);
  const CompiledGraph without_reuse = compile(g, own);
  const CompiledGraph with_arena = compile(g);
  EXPECT_NE(with_reuse.source().find("// reuse"), std::string::npos) << with_reuse.source();
  EXPECT_EQ(without_reuse.source().find("// reuse"), std::string::npos);
  for (int threads : {1, 2}) {
    RunOptions r;
    r.num_threads = threads;
    const std::vector<Tensor> reference = without_reuse.run(inputs, r);
    for (int call = 0; call < 2; ++call) {
      const std::string where = std::to_string(threads) + " threads, call " + std::to_string(call);
      expect_identical(with_reuse.run(inputs, r), reference, "reuse, " + where);
      expect_identical(with_arena.run(inputs, r), reference, "arena, " + where);
    }
  }
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// Issue 16, point 5: the wrapper tells its caller when it has read an input for the last
// time. Every input of kProgram is released once, results are unchanged, and `a`, read only
// by the first kernels, is released before later kernels and the library call run.
TEST(MemoryPlan, EachInputIsReleasedAfterItsLastRead) {
  const ir::Graph g = ir::parse_graph(kProgram);
  CompileOptions o;
  o.num_threads = 2;
  const CompiledGraph compiled = compile(g, o);
  const std::vector<Tensor> inputs = program_inputs();
  std::vector<size_t> released;
  RunOptions r;
  r.on_input_released = [&released](size_t input) { released.push_back(input); };
  const std::vector<Tensor> with_release = compiled.run(inputs, r);
  std::vector<size_t> sorted = released;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<size_t>{0, 1, 2, 3}));
  expect_identical(with_release, compiled.run(inputs), "with and without release");
  const std::string& source = compiled.compilation().module.source;
  const size_t release_a = source.find("release(release_ctx, 0);");
  ASSERT_NE(release_a, std::string::npos);
  EXPECT_NE(source.find("external(external_ctx", release_a), std::string::npos)
      << "the matrix product runs after the last read of a";
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// Point 9: explain's buffer events say where each allocation lives, and an intermediate in
// the arena ends its lifetime instead of being freed; without the arena it is freed; one that
// an output takes in place is allocated as that output.
TEST(MemoryPlan, ExplainBufferEventsNameThePlacement) {
  const ir::Graph g = ir::parse_graph(kProgram);
  for (bool arena : {true, false}) {
    CompileOptions o;
    o.memory_arena = arena;
    const nlohmann::json doc = explain_json(*analyze(g, o));
    int placed = 0, ended = 0, freed = 0, in_place = 0, as_output = 0;
    for (const auto& b : doc["buffers"]) {
      const std::string event = b["event"];
      if (event == "allocate" && !b["output"].get<bool>()) {
        const std::string where = b["placement"];
        // An output takes its storage in place: allocated as that output, never ended or freed.
        if (where.rfind("output slot ", 0) == 0) {
          ++as_output;
          continue;
        }
        // A buffer written in place of another takes that one's storage (and arena offset):
        // one storage, whose lifetime ends (or which is freed) once, after the last of them.
        if (where.rfind("in place of ", 0) == 0) {
          ++in_place;
          EXPECT_EQ(where.find("arena offset ") != std::string::npos, arena) << where;
        } else {
          EXPECT_EQ(where.rfind(arena ? "arena offset " : "", 0), 0u) << where;
        }
        ++placed;
      }
      ended += event == "lifetime ends";
      freed += event == "free";
    }
    EXPECT_GT(placed, 0);
    EXPECT_EQ(in_place, 1);   // exp(tanh(z)) in place of z
    EXPECT_EQ(as_output, 1);  // the output w = v * v in place of v
    EXPECT_EQ(ended, arena ? placed - in_place : 0);
    EXPECT_EQ(freed, arena ? 0 : placed - in_place);
  }
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// Issue 32, point 3(a), end to end: the sum and d = x / s + b share the loop over rows, and
// the amax over exp(b), defined before d, joins that kernel as a later nest. d reads b for the
// last time at the element it writes; taking b's storage there would overwrite each row of b
// before the amax reads it (tests/scheduler/test_reuse_buffers.cpp checks the plan). The
// product u·u is a large unrelated intermediate, so the amax's fusion does not raise the peak.
TEST(MemoryPlan, AnInPlaceWriteLeavesWhatALaterNestReadsIntact) {
  const ir::Graph g = ir::parse_graph(
      "def f(x: f32[64, 128], p: f32[64, 32], q: f32[32, 128], w: f32[128, 16], "
      "u: f32[256, 256]):\n"
      "    s = sum(x, dim=[1], keepdim=True)\n    b = mm(p, q)\n    e = exp(b)\n"
      "    c = amax(e, dim=[1])\n    y = div(x, s)\n    d = add(y, b)\n    o = mm(d, w)\n"
      "    z = mm(u, u)\n    t = tanh(z)\n    zs = sum(t, dim=[1])\n    return c, o, zs\n");
  // Positive rows keep x / s well conditioned, and small factors keep exp(b) near 1.
  const std::vector<Tensor> inputs = {eager::random_tensor(DType::Float32, {64, 128}, 1, 0.5, 1.5),
                                      eager::random_tensor(DType::Float32, {64, 32}, 2, -0.2, 0.2),
                                      eager::random_tensor(DType::Float32, {32, 128}, 3, -0.2, 0.2),
                                      eager::random_tensor(DType::Float32, {128, 16}, 4),
                                      eager::random_tensor(DType::Float32, {256, 256}, 5)};
  const std::vector<Tensor> expected = eager::run(g, inputs);
  CompileOptions fresh;
  fresh.in_place_reuse = false;
  const CompiledGraph without_in_place = compile(g, fresh);
  for (bool arena : {true, false}) {
    CompileOptions o;
    o.memory_arena = arena;
    const CompiledGraph compiled = compile(g, o);
    // The case arises: one kernel of three nests (the sum, d, the amax).
    const auto& kernels = compiled.compilation().schedule.kernels;
    EXPECT_TRUE(std::any_of(kernels.begin(), kernels.end(),
                            [](const scheduler::FusedNode& k) { return k.nests.size() == 3; }));
    for (int threads : {1, 2}) {
      RunOptions r;
      r.num_threads = threads;
      const std::string where =
          std::string(arena ? "arena" : "no arena") + ", " + std::to_string(threads) + " threads";
      const std::vector<Tensor> out = compiled.run(inputs, r);
      expect_outputs_match(g, out, expected, where);
      // Placement changes no arithmetic: the same bits as with no storage taken in place, at
      // the same thread count. A library product's sums may depend on the thread count:
      // without AVX-512 oneDNN's float32 matmul is its GEMM-based kernel, which splits them by
      // it (o = mm(d, w) differed by 4e-7 between 1 and 2 threads on a Zen 2).
      expect_identical(out, without_in_place.run(inputs, r), where);
    }
  }
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// Issue 32, point 4: a graph output takes the storage of an intermediate it reads for the last
// time at the element it writes (the product's result is allocated as the output, which the
// sine then overwrites in place), and computes what eager computes, at 1 and 2 threads. (An
// output never takes a buffer that continues another's storage: PeakModel's
// AnOutputTakesOnlyABufferWithStorageOfItsOwn, and the LLaMA case of
// python/tests/test_written_attention.py, which computed wrong values without that rule.)
TEST(MemoryPlan, AnOutputTakesAnIntermediatesStorage) {
  const ir::Graph g = ir::parse_graph(
      "def f(a: f32[256, 128], w: f32[128, 256]):\n    x = mm(a, w)\n    z = sin(x)\n"
      "    return z\n");
  const std::vector<Tensor> inputs = {eager::random_tensor(DType::Float32, {256, 128}, 1),
                                      eager::random_tensor(DType::Float32, {128, 256}, 2)};
  const std::vector<Tensor> reference = eager::run(g, inputs);
  for (int threads : {1, 2}) {
    CompileOptions o;
    o.num_threads = threads;
    const CompiledGraph compiled = compile(g, o);
    EXPECT_NE(compiled.compilation().module.source.find("// output 0, in place of"),
              std::string::npos);
    EXPECT_EQ(compiled.compilation().module.arena_bytes, 0);  // nothing left for the arena
    expect_outputs_match(g, compiled.run(inputs), reference, "threads " + std::to_string(threads));
  }
}

}  // namespace
}  // namespace stax
