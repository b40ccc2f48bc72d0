// The process's pool as the compiled programs use it (issue 32, point 4; runtime/block_pool.h):
// output slots taken when the program first writes them (CompiledGraph::run_into_pooled), given
// back when a run fails, and arenas that programs which never run at the same time share.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "driver/compiler.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"
#include "runtime/block_pool.h"

namespace stax {
namespace {

runtime::BlockPoolStats pool_stats() {
  return runtime::process_block_pool().stats();
}

std::vector<const void*> data_of(const std::vector<Tensor>& tensors) {
  std::vector<const void*> data;
  for (const Tensor& t : tensors) data.push_back(t.data());
  return data;
}

// x is read for the last time by the first kernel (a = exp(x)); the library call after it
// writes p. When x is released, p's slot must not be taken yet: a backward graph's gradients
// then take memory as its activations go, not all of them up front.
TEST(ProcessPool, PooledSlotsAreTakenWhenTheProgramFirstWritesThem) {
  const ir::Graph g = ir::parse_graph(
      "def f(x: f32[1024, 1024], w: f32[1024, 1024]):\n"
      "    a = exp(x)\n    p = mm(a, w)\n    return a, p\n");
  CompileOptions o;
  o.num_threads = 2;
  const CompiledGraph compiled = compile(g, o);
  const std::vector<Tensor> inputs = {eager::random_tensor(DType::Float32, {1024, 1024}, 1),
                                      eager::random_tensor(DType::Float32, {1024, 1024}, 2)};
  ASSERT_EQ(compiled.output_slot_bytes().size(), 2u);
  const auto slot_bucket = [&](size_t k) {
    return static_cast<int64_t>(
        runtime::BlockPool::bucket_bytes(static_cast<size_t>(compiled.output_slot_bytes()[k])));
  };
  const int64_t before = pool_stats().live_bytes;
  int64_t live_when_x_released = -1;
  RunOptions r;
  r.on_input_released = [&](size_t input) {
    if (input == 0) live_when_x_released = pool_stats().live_bytes;
  };
  std::vector<void*> slots(2, nullptr);
  compiled.run_into_pooled(data_of(inputs), slots, r);
  ASSERT_NE(slots[0], nullptr);
  ASSERT_NE(slots[1], nullptr);
  ASSERT_GE(live_when_x_released, 0) << "x was never released";
  EXPECT_LT(live_when_x_released - before, slot_bucket(0) + slot_bucket(1))
      << "p's slot was taken before the program wrote it";
  EXPECT_GE(live_when_x_released - before, slot_bucket(0));
  // After the run the two slots are the caller's, and nothing else is held (the library call's
  // workspace is back).
  EXPECT_EQ(pool_stats().live_bytes - before, slot_bucket(0) + slot_bucket(1));
  // The same results as slots the caller allocated.
  const std::vector<Tensor> expected = compiled.run(inputs);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(std::memcmp(slots[k], expected[k].data(),
                          static_cast<size_t>(expected[k].numel()) * sizeof(float)),
              0)
        << k;
    EXPECT_TRUE(runtime::process_block_pool().give(slots[k]));
  }
  EXPECT_EQ(pool_stats().live_bytes, before);
}

// A run that fails after taking a slot gives it back: nothing leaks, the caller's slots are
// cleared, and the caller's own slot is left alone.
TEST(ProcessPool, AFailedRunGivesItsSlotsBack) {
  const ir::Graph g = ir::parse_graph(
      "def f(x: f32[512, 1024], t: f32[3, 4], i: i64[2]):\n"
      "    a = mul(x, 2.0)\n    s = sum(a)\n    c = index_select(t, 0, i)\n"
      "    d = mul(c, s)\n    return a, d\n");
  const CompiledGraph compiled = compile(g, CompileOptions{});
  std::vector<Tensor> inputs = {eager::random_tensor(DType::Float32, {512, 1024}, 1),
                                eager::random_tensor(DType::Float32, {3, 4}, 2),
                                Tensor::empty(DType::Int64, {2})};
  static_cast<int64_t*>(inputs[2].data())[0] = 1;
  static_cast<int64_t*>(inputs[2].data())[1] = 7;  // out of range for 3 rows
  const int64_t before = pool_stats().live_bytes;
  std::vector<void*> slots(2, nullptr);
  EXPECT_THROW(compiled.run_into_pooled(data_of(inputs), slots), ir::IndexError);
  EXPECT_EQ(slots[0], nullptr);
  EXPECT_EQ(slots[1], nullptr);
  EXPECT_EQ(pool_stats().live_bytes, before);
  // With the index valid the same call succeeds.
  static_cast<int64_t*>(inputs[2].data())[1] = 2;
  compiled.run_into_pooled(data_of(inputs), slots);
  for (void* slot : slots) EXPECT_TRUE(runtime::process_block_pool().give(slot));
  EXPECT_EQ(pool_stats().live_bytes, before);
}

// Two programs that never run at the same time (a forward and its backward) share one arena
// block: the second takes the first's from the pool, within twice its size, instead of
// mapping its own.
TEST(ProcessPool, ProgramsThatRunInTurnShareOneArenaBlock) {
  // exp(x) is read along both dims: an intermediate of 4 or 3.5 MiB in each program's arena.
  const auto program = [](int64_t rows) {
    return ir::parse_graph("def f(x: f32[" + std::to_string(rows) +
                           ", 1024]):\n    e = exp(x)\n    r = sum(e, [1])\n"
                           "    c = sum(e, [0])\n    return r, c\n");
  };
  const CompiledGraph first = compile(program(1024), CompileOptions{});
  const CompiledGraph second = compile(program(896), CompileOptions{});
  ASSERT_GT(first.compilation().module.arena_bytes, int64_t{3} << 20);
  ASSERT_GT(second.compilation().module.arena_bytes, int64_t{3} << 20);
  const std::vector<Tensor> x1 = {eager::random_tensor(DType::Float32, {1024, 1024}, 1)};
  const std::vector<Tensor> x2 = {eager::random_tensor(DType::Float32, {896, 1024}, 2)};
  runtime::process_block_pool().trim();
  first.run(x1);
  const runtime::BlockPoolStats after_first = pool_stats();
  second.run(x2);
  const runtime::BlockPoolStats after_second = pool_stats();
  EXPECT_EQ(after_second.misses, after_first.misses) << "the second program mapped its own arena";
  EXPECT_GT(after_second.hits, after_first.hits);
  EXPECT_EQ(after_second.cached_bytes, after_first.cached_bytes);
}

}  // namespace
}  // namespace stax
