// One peak-memory model (scheduler/peak_model.h, issue 32): greedy fusion's peak check, step
// 5's choice of order and Schedule::peak_bytes simulate the same buffers, those step 6
// allocates (elided and localized ones take nothing, one written in place continues the
// storage of the one it takes), so the three agree on every program.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "fuzz/program_generator.h"
#include "ir/graph.h"
#include "lowering/lowering.h"
#include "schedule_util.h"
#include "scheduler/fusion_peak.h"
#include "scheduler/peak_model.h"

namespace stax::scheduler {
namespace {

std::set<std::string> computed_outputs(const lowering::LoweredGraph& graph) {
  std::set<std::string> outputs;
  for (const auto& out : graph.outputs) {
    if (!out.is_input) outputs.insert(out.buffer);
  }
  return outputs;
}

StorageOptions storage_of(const ScheduleOptions& o) {
  return {o.localize, o.max_local_bytes, o.in_place_reuse};
}

// The peak the fusion check would simulate for the final kernels (MergePeak over the model of
// its rounds), step 5's chosen candidate and the schedule's M*.
void expect_one_model(const lowering::LoweredGraph& lowered, const Schedule& s,
                      const ScheduleOptions& options, const std::string& what) {
  const MemoryDag dag =
      predicted_storage_dag(s.nodes, s.kernels, computed_outputs(lowered), storage_of(options));
  const MergePeak fusion(dag);
  // The kernels run in a topological order, which MergePeak keeps (smallest ready first).
  std::vector<int> identity(s.kernels.size());
  for (size_t g = 0; g < identity.size(); ++g) identity[g] = static_cast<int>(g);
  ASSERT_EQ(fusion.order(), identity) << what;
  EXPECT_EQ(fusion.peak(), s.peak_bytes) << what;
  if (!s.memory_order.candidates.empty()) {
    EXPECT_EQ(s.memory_order.candidates[s.memory_order.chosen].peak, s.peak_bytes)
        << what << "\n"
        << s.memory_order.reason;
  }
  // Every merge the check could ask about is Definition 7.5 over the merged graph.
  for (int x = 0; x < dag.num_nodes; ++x) {
    for (int y = x + 1; y < dag.num_nodes && y < x + 4; ++y) {
      const auto merged = fusion.merged_peak(x, y);
      const auto order = fusion.merged_order(x, y);
      ASSERT_EQ(merged.has_value(), order.has_value()) << what;
      if (merged) {
        EXPECT_EQ(*merged, simulate_peak(merge_nodes(dag, x, y), *order)) << what << x << y;
      }
    }
  }
}

// exp(x) is written and read inside one row loop with its row sum and the division: step 6
// elides or localizes it, so the schedule allocates only the result. The old fusion check and
// step 5 counted exp's 32 KiB too, and reported a peak the schedule never had.
TEST(PeakModel, ABufferStep6NeverStoresIsNotCounted) {
  const std::string text =
      "def f(x: f32[64, 128]):\n    e = exp(x)\n    s = sum(e, [1], keepdim=True)\n"
      "    y = div(e, s)\n    return y\n";
  const lowering::LoweredGraph lowered = lowering::lower(ir::parse_graph(text));
  const ScheduleOptions options;
  const Schedule s = schedule(lowered, options);
  ASSERT_FALSE(s.memory_order.candidates.empty());
  int never_stored = 0;
  for (const BufferPlan& p : s.buffers) never_stored += p.elided || p.localized;
  ASSERT_GT(never_stored, 0) << "the program must have a buffer step 6 does not store";
  EXPECT_EQ(s.memory_order.candidates[s.memory_order.chosen].peak, s.peak_bytes)
      << s.memory_order.reason;
  expect_one_model(lowered, s, options, text);
}

// tanh(x1) writes in place of x1 (its last read, at the element written): M* counts one
// 16 KiB block for the two, and so must step 5 and the fusion check.
TEST(PeakModel, InPlaceWritesAreOneBlockInEveryModel) {
  lowering::LoweringOptions library;
  library.library_for = [](const lowering::ExternalCall&, std::string*) {
    return std::optional<std::string>("a test library");
  };
  const std::string text =
      "def f(a: f32[64, 64], w: f32[64, 64]):\n    x1 = mm(a, w)\n    y1 = tanh(x1)\n"
      "    x2 = mm(y1, w)\n    return x2\n";
  const lowering::LoweredGraph lowered = lowering::lower(ir::parse_graph(text), library);
  const ScheduleOptions options;
  const Schedule s = schedule(lowered, options);
  int in_place = 0;
  for (const BufferPlan& p : s.buffers) in_place += !p.in_place_of.empty();
  ASSERT_EQ(in_place, 1);
  EXPECT_EQ(s.peak_bytes, 2 * 64 * 64 * 4);  // x1 (then y1) and x2
  expect_one_model(lowered, s, options, text);
}

// The random programs of the property tests (fuzz/program_generator.h), scheduled with the
// options each case draws, with contractions as library calls (whose results pointwise ops
// write in place), and with localization and in-place reuse off.
TEST(PeakModel, FusionStep5AndTheScheduleAgreeOnRandomPrograms) {
  lowering::LoweringOptions library;
  library.library_for = [](const lowering::ExternalCall&, std::string*) {
    return std::optional<std::string>("a test library");
  };
  int checked = 0;
  int never_stored = 0;
  int in_place = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const fuzz::GeneratedCase c = fuzz::generate_case(seed);
    for (int variant = 0; variant < 3; ++variant) {
      const lowering::LoweredGraph lowered = lowering::lower(
          ir::parse_graph(c.text), variant == 1 ? library : lowering::LoweringOptions{});
      ScheduleOptions options;
      options.fuse = c.options.fuse;
      options.localize = c.options.localize && variant < 2;
      options.in_place_reuse = c.options.in_place_reuse && variant < 2;
      const Schedule s = schedule(lowered, options);
      for (const BufferPlan& p : s.buffers) {
        never_stored += p.elided || p.localized;
        in_place += !p.in_place_of.empty();
      }
      expect_one_model(lowered, s, options, c.text);
      ++checked;
    }
  }
  // The generator's programs seldom write in place: products (library calls) and the
  // pointwise ops after them, which do.
  std::mt19937 rng(32);
  for (int trial = 0; trial < 60; ++trial) {
    std::string text = "def f(a: f32[32, 32], b: f32[32, 32]):\n";
    std::vector<std::string> values = {"a", "b"};
    const char* unary[] = {"exp", "tanh", "neg"};
    for (int i = 0; i < 4 + trial % 10; ++i) {
      const std::string name = "v" + std::to_string(i);
      const std::string& other = values[rng() % values.size()];
      text += "    " + name + " = " +
              (rng() % 2 ? std::string(unary[rng() % 3]) + "(" + values.back() + ")"
                         : std::string(rng() % 3 ? "mm" : "add") + "(" + values.back() + ", " +
                               other + ")") +
              "\n";
      values.push_back(name);
    }
    text += "    r = sum(" + values.back() + ", [1])\n    return r\n";
    const lowering::LoweredGraph lowered = lowering::lower(ir::parse_graph(text), library);
    const ScheduleOptions options;
    const Schedule s = schedule(lowered, options);
    for (const BufferPlan& p : s.buffers) in_place += !p.in_place_of.empty();
    expect_one_model(lowered, s, options, text);
    ++checked;
  }
  EXPECT_EQ(checked, 660);
  // Both kinds of storage decision occur, or the test shows little.
  EXPECT_GT(never_stored, 50);
  EXPECT_GT(in_place, 10);
}

// A random DAG whose buffers may take the storage of buffers they read (Section 7.5).
MemoryDag random_in_place_dag(std::mt19937& rng, int nodes) {
  MemoryDag dag;
  dag.num_nodes = nodes;
  std::uniform_int_distribution<int> size(1, 2);
  std::uniform_real_distribution<double> coin(0, 1);
  for (int v = 0; v < nodes; ++v) {
    const int count = coin(rng) < 0.2 ? 2 : 1;
    for (int k = 0; k < count; ++k) {
      MemoryDag::Buffer b;
      b.bytes = 10 * size(rng);
      b.producer = v;
      for (int r = v + 1; r < nodes; ++r) {
        if (coin(rng) < 0.3) b.readers.push_back(r);
      }
      b.is_output = b.readers.empty() || coin(rng) < 0.1;
      dag.buffers.push_back(b);
    }
  }
  for (size_t k = 0; k < dag.buffers.size(); ++k) {
    // Outputs take in place too (an intermediate allocated as the output).
    for (size_t old = 0; old < dag.buffers.size(); ++old) {
      const auto& o = dag.buffers[old];
      const bool reads = std::count(o.readers.begin(), o.readers.end(), dag.buffers[k].producer);
      if (reads && !o.is_output && o.bytes == dag.buffers[k].bytes && coin(rng) < 0.7) {
        dag.may_take.emplace_back(static_cast<int>(k), static_cast<int>(old));
      }
    }
  }
  return dag;
}

// Definition 7.5 with in-place chains, literally: at every step, the storage blocks live then,
// a block from its first buffer's producer to the last reader of any buffer in it.
int64_t literal_peak(const MemoryDag& dag, const std::vector<int>& order) {
  const auto n = order.size();
  std::vector<int> position(n);
  for (size_t t = 0; t < n; ++t) position[static_cast<size_t>(order[t])] = static_cast<int>(t);
  const std::vector<int> taken_from = in_place_choices(dag, order);
  auto last_of = [&](const MemoryDag::Buffer& b) {
    int last = b.is_output ? static_cast<int>(n) - 1 : position[static_cast<size_t>(b.producer)];
    for (int r : b.readers) last = std::max(last, position[static_cast<size_t>(r)]);
    return last;
  };
  int64_t peak = 0;
  for (size_t tau = 0; tau < n; ++tau) {
    int64_t live = 0;
    for (size_t k = 0; k < dag.buffers.size(); ++k) {
      if (taken_from[k] >= 0) continue;  // counted in the block it continues
      int last = last_of(dag.buffers[k]);
      // Follow the buffers that took this block, each taking the previous one.
      for (size_t cur = k;;) {
        const auto next = std::find(taken_from.begin(), taken_from.end(), static_cast<int>(cur));
        if (next == taken_from.end()) break;
        cur = static_cast<size_t>(next - taken_from.begin());
        last = std::max(last, last_of(dag.buffers[cur]));
      }
      const int def = position[static_cast<size_t>(dag.buffers[k].producer)];
      if (def <= static_cast<int>(tau) && static_cast<int>(tau) <= last) {
        live += dag.buffers[k].bytes;
      }
    }
    peak = std::max(peak, live);
  }
  return peak;
}

TEST(PeakModel, InPlaceChoicesAndMergesOnRandomGraphs) {
  std::mt19937 rng(32);
  int taken = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const MemoryDag dag = random_in_place_dag(rng, 2 + trial % 10);
    const MergePeak peak(dag);
    const std::vector<int> choices = in_place_choices(dag, peak.order());
    std::set<int> olds;
    for (size_t k = 0; k < choices.size(); ++k) {
      if (choices[k] < 0) continue;
      ++taken;
      EXPECT_TRUE(olds.insert(choices[k]).second) << "a storage taken twice";
    }
    ASSERT_EQ(peak.peak(), literal_peak(dag, peak.order())) << trial;
    for (int x = 0; x < dag.num_nodes; ++x) {
      for (int y = x + 1; y < dag.num_nodes; ++y) {
        const auto merged = peak.merged_peak(x, y);
        if (!merged) continue;
        const MemoryDag joined = merge_nodes(dag, x, y);
        const auto order = peak.merged_order(x, y);
        ASSERT_EQ(*merged, literal_peak(joined, *order)) << trial << ": " << x << ", " << y;
        ASSERT_EQ(peak.raised_peak(x, y).has_value(), *merged > peak.peak()) << trial;
      }
    }
  }
  EXPECT_GT(taken, 40);
}

// An output takes only a buffer with storage of its own (issue 32, point 4): the buffer it takes
// is allocated as the output. In the chain b0 -> b1 (b1 in place of b0), the output b2 may not
// take b1, which continues b0's storage; when b1 has its own, it may.
TEST(PeakModel, AnOutputTakesOnlyABufferWithStorageOfItsOwn) {
  MemoryDag dag;
  dag.num_nodes = 3;
  dag.buffers = {{64, 0, {1}, false}, {64, 1, {2}, false}, {64, 2, {}, true}};
  const std::vector<int> order = {0, 1, 2};
  dag.may_take = {{1, 0}, {2, 1}};
  EXPECT_EQ(in_place_choices(dag, order), (std::vector<int>{-1, 0, -1}));
  dag.may_take = {{2, 1}};
  EXPECT_EQ(in_place_choices(dag, order), (std::vector<int>{-1, -1, 1}));
}

}  // namespace
}  // namespace stax::scheduler
