// CompiledGraph::run_into: running on memory the caller owns (how the torch.compile bridge
// hands PyTorch tensors to Stax without copies), against run() on the same graph.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "driver/compiler.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/builder.h"

namespace stax {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Example 7.2 plus an output that is a view of the input: two slots, one input view.
Graph two_slots_and_a_view() {
  Graph g("k");
  auto x = ops::input(g, "x", DType::Float32, {16, 40});
  auto e = ops::exp(x);
  ops::output(g, {ops::sum(e, {-1}), ops::amax(e, {-1}), ops::transpose(x, 0, 1)});
  return g;
}

TEST(RunInto, WritesEachSlotIntoTheCallersBuffer) {
  const Graph g = two_slots_and_a_view();
  const CompiledGraph compiled = compile(g);
  ASSERT_EQ(compiled.output_slot_bytes().size(), 2u);
  ASSERT_EQ(compiled.outputs().size(), 3u);
  EXPECT_TRUE(compiled.outputs()[2].from_input);
  const Tensor x = eager::random_tensor(DType::Float32, {16, 40}, 5);
  const auto expected = compiled.run({x});
  std::vector<std::unique_ptr<void, FreeDeleter>> owned;
  std::vector<void*> slots;
  for (int64_t bytes : compiled.output_slot_bytes()) {
    owned.emplace_back(std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64)));
    slots.push_back(owned.back().get());
  }
  compiled.run_into({x.data()}, slots, {.num_threads = 2});
  for (size_t o = 0; o < 2; ++o) {
    const auto& b = compiled.outputs()[o];
    ASSERT_FALSE(b.from_input);
    const float* got = static_cast<const float*>(slots[static_cast<size_t>(b.index)]) + b.offset;
    for (int64_t i = 0; i < 16; ++i) {
      EXPECT_EQ(got[i], expected[o].get({i})) << "output " << o << " row " << i;
    }
  }
}

TEST(RunInto, RejectsWrongCountsNullAndMisalignedBuffers) {
  const CompiledGraph compiled = compile(two_slots_and_a_view());
  const Tensor x = eager::random_tensor(DType::Float32, {16, 40}, 5);
  std::unique_ptr<void, FreeDeleter> a(std::aligned_alloc(64, 128));
  std::unique_ptr<void, FreeDeleter> b(std::aligned_alloc(64, 128));
  EXPECT_THROW(compiled.run_into({}, {a.get(), b.get()}), InputError);
  EXPECT_THROW(compiled.run_into({x.data()}, {a.get()}), InputError);
  try {
    compiled.run_into({x.data()}, {a.get(), nullptr});
    FAIL() << "a null output buffer was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("output buffer 1 is null"), std::string::npos);
  }
  try {
    compiled.run_into({x.data()}, {static_cast<char*>(a.get()) + 4, b.get()});
    FAIL() << "a misaligned output buffer was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not 64-byte aligned"), std::string::npos);
  }
  EXPECT_THROW(compiled.run_into({x.data()}, {a.get(), b.get()}, {.num_threads = -1}), InputError);
  // A null input pointer is caught by the generated wrapper's checks.
  EXPECT_THROW(compiled.run_into({nullptr}, {a.get(), b.get()}), InputError);
}

}  // namespace
}  // namespace stax
