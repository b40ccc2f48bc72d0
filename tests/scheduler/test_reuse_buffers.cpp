// Section 7.5's free pool (program/reuse_buffers.cpp) on random programs: the wrapper's
// occupancy at every call, pooled buffers held from release to reuse included, never exceeds
// the peak without reuse; reuse pairs have one dtype and size and never involve an output.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "kernel/pipeline.h"
#include "program/pipeline.h"
#include "schedule_util.h"

namespace stax {
namespace {

// Random programs over one square shape: matrix products (loop nests here) read whole
// operands, so their operands and results are stored: a program has several same-sized
// intermediates with different lifetimes.
std::string random_program(std::mt19937& rng, int ops) {
  std::string text = "def f(a: f32[64, 64], b: f32[64, 64]):\n";
  std::vector<std::string> values = {"a", "b"};
  const char* unary[] = {"exp", "tanh", "sin"};
  const char* binary[] = {"add", "mm", "mm"};
  for (int i = 0; i < ops; ++i) {
    std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
    const std::string name = "v" + std::to_string(i);
    if (rng() % 3 == 0) {
      text += "    " + name + " = " + unary[rng() % 3] + "(" + values.back() + ")\n";
    } else {
      // The latest value and any earlier one: every value reaches the result.
      text += "    " + name + " = " + binary[rng() % 3] + "(" + values.back() + ", " +
              values[pick(rng)] + ")\n";
    }
    values.push_back(name);
  }
  text += "    r = sum(" + values.back() + ", [1])\n    return r\n";
  return text;
}

// The largest bytes held at one call: each storage block from its first allocation to its
// final release (a reused block stays held between its buffers).
int64_t held_peak(const program::HostProgram& p) {
  std::map<std::string, int64_t> live;  // buffer -> bytes, the blocks held now
  int64_t held = 0;
  int64_t peak = 0;
  for (const program::Statement& st : p.body) {
    if (const auto* a = std::get_if<program::Allocate>(&st)) {
      if (!a->reuses.empty()) {
        EXPECT_FALSE(a->output);
        EXPECT_EQ(live.at(a->reuses), a->bytes) << a->buffer << " reuses " << a->reuses;
        EXPECT_EQ(p.schedule->graph->find_buffer(a->buffer)->dtype,
                  p.schedule->graph->find_buffer(a->reuses)->dtype);
        live.erase(a->reuses);
      } else {
        held += a->bytes;
      }
      live[a->buffer] = a->bytes;
      peak = std::max(peak, held);
    } else if (const auto* f = std::get_if<program::Free>(&st)) {
      held -= live.at(f->buffer);
      live.erase(f->buffer);
    }
  }
  return peak;
}

TEST(ReuseBuffers, NeverRaisesThePeakOnRandomPrograms) {
  std::mt19937 rng(5);
  int reused = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const std::string text = random_program(rng, 4 + trial % 10);
    auto s = testing::schedule_text(text);
    kernel::PipelineOptions options;
    program::MemoryOptions without;
    without.arena = false;
    without.reuse = false;
    program::MemoryOptions with = without;
    with.reuse = true;
    const program::HostProgram before = program::build_host_program(s->schedule, options, without);
    const program::HostProgram after = program::build_host_program(s->schedule, options, with);
    EXPECT_LE(held_peak(after), held_peak(before)) << text;
    for (const auto& st : after.body) {
      if (const auto* a = std::get_if<program::Allocate>(&st); a && !a->reuses.empty()) ++reused;
    }
  }
  // The random programs must exercise the pool, or this test shows nothing.
  EXPECT_GT(reused, 0);
}

// p dies before a large product and its row sum, the peak; x3 (p's size) comes after it.
// Later, four pointwise ops each write in place of the product they read (library calls'
// results). A buffer taken in place is released with the one that took it: the pool once
// counted it live to the end besides, a phantom block per in-place write, which lifted the peak
// it compared against by four blocks and let x3 take p's storage across the real peak.
TEST(ReuseBuffers, InPlaceWritesDoNotInflateThePoolsPeak) {
  const std::string text =
      "def f(a: f32[64, 64], w: f32[64, 64], c: f32[128, 128]):\n"
      "    p = mm(a, w)\n    p2 = mm(p, w)\n    big = mm(c, c)\n    s = sum(big, [0])\n"
      "    x3 = mm(p2, w)\n    t1 = tanh(x3)\n    m1 = mm(t1, w)\n    t2 = tanh(m1)\n"
      "    m2 = mm(t2, w)\n    t3 = tanh(m2)\n    m3 = mm(t3, w)\n    t4 = tanh(m3)\n"
      "    m4 = mm(t4, w)\n    t5 = tanh(m4)\n    m5 = mm(t5, w)\n    return m5, s\n";
  lowering::LoweringOptions library;
  library.library_for = [](const lowering::ExternalCall&, std::string*) {
    return std::optional<std::string>("a test library");
  };
  const lowering::LoweredGraph lowered = lowering::lower(ir::parse_graph(text), library);
  scheduler::ScheduleOptions keep_order;
  keep_order.reorder_for_memory = false;
  const scheduler::Schedule schedule = scheduler::schedule(lowered, keep_order);
  int in_place = 0;
  for (const auto& p : schedule.buffers) in_place += !p.in_place_of.empty();
  ASSERT_GE(in_place, 4) << "the program must write in place";
  kernel::PipelineOptions options;
  program::MemoryOptions without;
  without.arena = false;
  without.reuse = false;
  program::MemoryOptions with = without;
  with.reuse = true;
  const program::HostProgram before = program::build_host_program(schedule, options, without);
  const program::HostProgram after = program::build_host_program(schedule, options, with);
  EXPECT_EQ(held_peak(after), held_peak(before));
}

// A chain of products, each result dying after the next is made: the third takes the
// first's storage, and the log says so in Section 7.5's words.
TEST(ReuseBuffers, AChainTakesTheStorageOfADeadBuffer) {
  auto s = testing::schedule_text(
      "def f(a: f32[64, 64], w: f32[64, 64]):\n    x1 = mm(a, w)\n    x2 = mm(x1, w)\n"
      "    x3 = mm(x2, w)\n    x4 = mm(x3, w)\n    return x4\n");
  kernel::PipelineOptions options;
  program::MemoryOptions memory;
  memory.arena = false;
  const program::HostProgram p = program::build_host_program(s->schedule, options, memory);
  int reuses = 0;
  for (const auto& st : p.body) {
    if (const auto* a = std::get_if<program::Allocate>(&st); a && !a->reuses.empty()) ++reuses;
  }
  EXPECT_GE(reuses, 1);
  std::string log;
  for (const auto& line : p.log) log += line + "\n";
  EXPECT_NE(log.find("  # reuse ("), std::string::npos) << log;
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// x1 dies before a large product runs and the peak comes while that product's buffer is
// alive: x3 (an intermediate, like x1) taking x1's storage would hold it across the peak and
// raise it, so x3 gets fresh memory.
TEST(ReuseBuffers, ABufferIsNotHeldAcrossThePeak) {
  const std::string text =
      "def f(a: f32[64, 64], w: f32[64, 64], c: f32[256, 256]):\n"
      "    x1 = mm(a, w)\n    x2 = mm(x1, w)\n    big = mm(c, c)\n    s = sum(big, [0])\n"
      "    x3 = mm(x2, w)\n    x4 = mm(x3, w)\n    return x4, s\n";
  const lowering::LoweredGraph lowered = lowering::lower(ir::parse_graph(text));
  scheduler::ScheduleOptions keep_order;
  keep_order.reorder_for_memory = false;
  const scheduler::Schedule schedule = scheduler::schedule(lowered, keep_order);
  kernel::PipelineOptions options;
  program::MemoryOptions without;
  without.arena = false;
  without.reuse = false;
  program::MemoryOptions with = without;
  with.reuse = true;
  const program::HostProgram before = program::build_host_program(schedule, options, without);
  const program::HostProgram after = program::build_host_program(schedule, options, with);
  EXPECT_EQ(held_peak(after), held_peak(before));
  for (const auto& line : after.log) EXPECT_EQ(line.find("# reuse"), std::string::npos) << line;
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// The position of node `id` in the loop body of `f`: its nests in order, each nest's nodes in
// order (Listing 7.1).
size_t body_position(const scheduler::FusedNode& f, int id) {
  const std::vector<int> members = f.members();
  return static_cast<size_t>(std::find(members.begin(), members.end(), id) - members.begin());
}

// Every in-place pair of `s`: no member of the kernel that writes the new buffer reads the old
// one after that write in the loop body.
void expect_no_read_after_the_in_place_write(const scheduler::Schedule& s,
                                             const std::string& where) {
  for (const scheduler::BufferPlan& p : s.buffers) {
    if (p.in_place_of.empty()) continue;
    const scheduler::FusedNode& kernel = s.kernels[static_cast<size_t>(p.producer)];
    int writer = -1;
    for (int id : kernel.members()) {
      if (s.nodes[static_cast<size_t>(id)].write.buffer == p.buffer) writer = id;
    }
    ASSERT_NE(writer, -1) << where;
    for (int id : kernel.members()) {
      const auto& reads = s.nodes[static_cast<size_t>(id)].reads;
      const bool reads_old = std::any_of(reads.begin(), reads.end(),
                                         [&](const auto& r) { return r.buffer == p.in_place_of; });
      if (!reads_old || id == writer) continue;
      EXPECT_LT(body_position(kernel, id), body_position(kernel, writer))
          << where << ": " << s.nodes[static_cast<size_t>(id)].name << " reads " << p.in_place_of
          << " after " << p.buffer << " took its storage in " << kernel.name;
    }
  }
}

scheduler::Schedule schedule_with(const lowering::LoweredGraph& lowered, bool in_place) {
  scheduler::ScheduleOptions o;
  o.in_place_reuse = in_place;
  return scheduler::schedule(lowered, o);
}

// Section 7.5's in-place reuse (scheduler/in_place_reuse.h) on random programs: the simulated
// peak never rises; every pair has one dtype and size, the old buffer is an intermediate
// whose last reader is the new one's producer, it is not released, and the new buffer's
// writer reads it only at the element it writes.
TEST(InPlaceReuse, NeverRaisesThePeakAndPairsAreLegalOnRandomPrograms) {
  std::mt19937 rng(11);
  int in_place = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const std::string text = random_program(rng, 4 + trial % 10);
    const lowering::LoweredGraph lowered = lowering::lower(ir::parse_graph(text));
    const scheduler::Schedule off = schedule_with(lowered, false);
    const scheduler::Schedule on = schedule_with(lowered, true);
    EXPECT_LE(on.peak_bytes, off.peak_bytes) << text;
    for (const scheduler::BufferPlan& p : on.buffers) {
      if (p.in_place_of.empty()) continue;
      ++in_place;
      const scheduler::BufferPlan* old = on.plan_of(p.in_place_of);
      ASSERT_NE(old, nullptr);
      EXPECT_FALSE(old->is_output || p.is_output) << text;
      EXPECT_EQ(old->bytes, p.bytes);
      EXPECT_EQ(lowered.find_buffer(p.buffer)->dtype, lowered.find_buffer(old->buffer)->dtype);
      EXPECT_EQ(old->last_use, p.producer) << text;
      for (const auto& released : on.release_after) {
        EXPECT_EQ(std::count(released.begin(), released.end(), old->buffer), 0) << text;
      }
    }
    expect_no_read_after_the_in_place_write(on, text);
  }
  EXPECT_GT(in_place, 0) << "the random programs never wrote in place";
}

// tanh(x1) takes x1's storage (its last read, at the element written); sin(x2) + flip(x2)
// reads x2 at another element too, so it must not; the result the graph returns, exp(x3),
// takes x3's storage as well (x3 is then allocated as that output).
TEST(InPlaceReuse, OnlyWhereEveryReadIsAtTheElementWritten) {
  // The products are library calls (schedule_util.h's stand-in), which read stored operands.
  lowering::LoweringOptions library;
  library.library_for = [](const lowering::ExternalCall&, std::string*) {
    return std::optional<std::string>("a test library");
  };
  const lowering::LoweredGraph lowered = lowering::lower(
      ir::parse_graph(
          "def f(a: f32[64, 64], w: f32[64, 64]):\n    x1 = mm(a, w)\n    y1 = tanh(x1)\n"
          "    x2 = mm(y1, w)\n    f2 = flip(x2, [0])\n    s2 = sin(x2)\n    y2 = add(s2, f2)\n"
          "    x3 = mm(y2, w)\n    y3 = exp(x3)\n    return y3\n"),
      library);
  const scheduler::Schedule s = schedule_with(lowered, true);
  std::map<std::string, std::string> taken;  // old buffer -> new
  for (const auto& p : s.buffers) {
    if (!p.in_place_of.empty()) taken[p.in_place_of] = p.buffer;
  }
  auto buffer_of = [&](const std::string& value) {
    for (const auto& b : lowered.buffers) {
      for (const auto& op : b.source_ops) {
        if (op.value == value && op.op == "mm") return b.name;
      }
    }
    return std::string();
  };
  EXPECT_EQ(taken.count(buffer_of("x1")), 1u);
  EXPECT_EQ(taken.count(buffer_of("x2")), 0u);
  ASSERT_EQ(taken.count(buffer_of("x3")), 1u);  // by y3, the graph's output
  EXPECT_TRUE(s.plan_of(taken.at(buffer_of("x3")))->is_output);
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// Issue 32, point 3(a): s and d share the outer loop over rows (Example 7.1's form) and the
// amax over exp(b) joins it as a third nest, after d's. d reads b for the last time at the
// element it writes, but the amax, a node defined before d, reads b in the later nest: had d
// taken b's storage, each row of b would be overwritten before the amax reads it. The product
// u·u is a large unrelated intermediate, so the amax's horizontal fusion does not raise the peak.
const char* kLaterNestReadsProgram =
    "def f(x: f32[64, 128], p: f32[64, 32], q: f32[32, 128], w: f32[128, 16], "
    "u: f32[256, 256]):\n"
    "    s = sum(x, dim=[1], keepdim=True)\n    b = mm(p, q)\n    e = exp(b)\n"
    "    c = amax(e, dim=[1])\n    y = div(x, s)\n    d = add(y, b)\n    o = mm(d, w)\n"
    "    z = mm(u, u)\n    t = tanh(z)\n    zs = sum(t, dim=[1])\n    return c, o, zs\n";

TEST(InPlaceReuse, NotWhereALaterNestOfTheKernelReadsTheOldBuffer) {
  const auto scheduled = testing::schedule_text(kLaterNestReadsProgram, /*with_library=*/true);
  const scheduler::Schedule& s = scheduled->schedule;
  auto buffer_of = [&](const std::string& value, const std::string& op) {
    for (const auto& b : scheduled->lowered.buffers) {
      for (const auto& source : b.source_ops) {
        if (source.value == value && source.op == op) return b.name;
      }
    }
    return std::string();
  };
  const std::string b = buffer_of("b", "mm");
  const std::string d = buffer_of("d", "add");
  const std::string c = buffer_of("c", "amax");
  // The case arises: d's nest runs before the amax's in one kernel.
  const scheduler::BufferPlan* d_plan = s.plan_of(d);
  const scheduler::BufferPlan* c_plan = s.plan_of(c);
  ASSERT_TRUE(d_plan && c_plan);
  ASSERT_EQ(d_plan->producer, c_plan->producer);
  const scheduler::FusedNode& kernel = s.kernels[static_cast<size_t>(d_plan->producer)];
  int d_node = -1, c_node = -1;
  for (int id : kernel.members()) {
    if (s.nodes[static_cast<size_t>(id)].write.buffer == d) d_node = id;
    if (s.nodes[static_cast<size_t>(id)].write.buffer == c) c_node = id;
  }
  ASSERT_LT(c_node, d_node);  // the reader has the smaller id ...
  ASSERT_LT(body_position(kernel, d_node), body_position(kernel, c_node));  // ... and runs later
  EXPECT_NE(d_plan->in_place_of, b) << d << " took the storage of " << b;
  expect_no_read_after_the_in_place_write(s, kLaterNestReadsProgram);
}

}  // namespace
}  // namespace stax
