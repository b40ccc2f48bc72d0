// Issue 32, point 4: the interpreter's scatters take time linear in the updates with a small
// constant. Fuzz case 84742 (index_put of 279M accumulated updates into a [1, 2, 31, 9] int32
// tensor) took 26 s in eager against PyTorch's 0.14 s: every update built index vectors on the
// heap (the position, each index's position, the value's), read the index again and addressed
// elements through bounds-checked multi-indices. The test counts work instead of timing it:
// heap allocations made while a scatter of a million updates runs (this file replaces the
// global operator new of the test binary with a counting one), which must not grow with the
// updates, and the result, which must be what accumulating them one by one gives.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "eager_test_util.h"
#include "ir/graph.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long long> g_allocations{0};
}  // namespace

// Every non-aligned form of operator new and delete is replaced, all over malloc and free:
// a form left to the runtime would pair its allocation with this file's free (std::stable_sort's
// temporary buffer takes the nothrow new), a mismatch AddressSanitizer reports. The aligned forms
// stay the runtime's, on both sides.
namespace {
void* counted_malloc(std::size_t size) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  return std::malloc(size == 0 ? 1 : size);
}
void* counted_new(std::size_t size) {
  if (void* p = counted_malloc(size)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t size) {
  return counted_new(size);
}
void* operator new[](std::size_t size) {
  return counted_new(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return counted_malloc(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return counted_malloc(size);
}
// GCC takes free() in a replacement operator delete for a mismatch with the operator new it
// replaces; here both are this file's, over malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace stax::eager {
namespace {

// Allocations made by `fn`.
template <typename Fn>
long long allocations_of(Fn&& fn) {
  g_allocations = 0;
  g_counting = true;
  fn();
  g_counting = false;
  return g_allocations.load();
}

constexpr int64_t kUpdates = 1000000;

// A million int32 updates into 6 elements: value k goes to row k % 2, all three columns.
struct Case {
  ir::Graph graph;
  std::vector<Tensor> inputs;
  std::vector<double> expected;
};

Case accumulate_case(const std::string& op_call) {
  Case c;
  c.graph =
      ir::parse_graph("def g(x: i32[2, 3], i: i64[" + std::to_string(kUpdates) + "], v: i32[" +
                      std::to_string(kUpdates) + ", 3]):\n    y = " + op_call + "\n    return y\n");
  Tensor x = Tensor::empty(DType::Int32, {2, 3});
  Tensor i = Tensor::empty(DType::Int64, {kUpdates});
  Tensor v = Tensor::empty(DType::Int32, {kUpdates, 3});
  auto* xs = static_cast<int32_t*>(x.data());
  auto* is = static_cast<int64_t*>(i.data());
  auto* vs = static_cast<int32_t*>(v.data());
  c.expected.assign(6, 0);
  for (int64_t e = 0; e < 6; ++e)
    c.expected[static_cast<size_t>(e)] = xs[e] = static_cast<int32_t>(e);
  for (int64_t k = 0; k < kUpdates; ++k) {
    is[k] = k % 2;
    for (int64_t j = 0; j < 3; ++j) {
      vs[k * 3 + j] = static_cast<int32_t>(k % 7 + j);
      c.expected[static_cast<size_t>((k % 2) * 3 + j)] += k % 7 + j;
    }
  }
  c.inputs = {x, i, v};
  return c;
}

TEST(EagerScatterWork, AMillionAccumulatedUpdatesAllocateNothingPerUpdate) {
  for (const char* call : {"index_put(x, [i], v, accumulate=True)", "index_add(x, 0, i, v)"}) {
    SCOPED_TRACE(call);
    const Case c = accumulate_case(call);
    std::vector<Tensor> out;
    const long long allocations = allocations_of([&] { out = run(c.graph, c.inputs); });
    // The interpreter's own bookkeeping (the output, the op's arguments, a few vectors of the
    // walk) is the same for ten updates as for a million.
    EXPECT_LT(allocations, 1000);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(testing::values(out[0]), c.expected);
  }
}

}  // namespace
}  // namespace stax::eager
