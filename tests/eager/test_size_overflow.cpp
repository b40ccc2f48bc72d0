// Tests of size arithmetic in the host tensors and the eager interpreter: layouts whose
// extent or bytes overflow int64 are refused instead of being allocated too small, views
// cannot wrap past their storage, strides computed by views never overflow, and memory that
// cannot be allocated is reported as an AllocationError naming the tensor and the bytes.
// This suite runs under UBSan with -fno-sanitize-recover (scripts/test.sh), so any signed
// overflow left in these paths fails it.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "eager_test_util.h"
#include "ir/checked_arith.h"
#include "runtime/tensor.h"

// Under AddressSanitizer an allocation larger than it can serve must return null, as malloc
// does, rather than abort: that failure is what the allocation tests below check. (Unused
// without the sanitizer.)
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1";
}

namespace stax {
namespace {

using eager::testing::make;
using eager::testing::run1;
using eager::testing::values;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2p61 = int64_t{1} << 61;
constexpr int64_t k2p62 = int64_t{1} << 62;
// 10^15 bytes: more than the 2^47-byte user address space of x86-64 and AArch64 Linux, so no
// overcommit setting can grant it.
constexpr int64_t kAbsurdFloats = 250'000'000'000'000;

// Calls `f`, expecting exception E whose message contains every one of `parts`.
template <typename E, typename F>
void expect_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "message \"" << message << "\" lacks \"" << part << "\"";
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// Storage claiming `nbytes` over a small real buffer: only layouts are checked against it,
// no element past the first 64 bytes is touched.
std::shared_ptr<Storage> claimed_storage(size_t nbytes) {
  return std::make_shared<Storage>(new char[64](), nbytes,
                                   [](void* p) { delete[] static_cast<char*>(p); });
}

TEST(TensorOverflow, EmptyStridedRefusesAnExtentThatOverflows) {
  // The old code computed 3 * 2^62 + 4 elements with wrapping and allocated 16 bytes.
  expect_error<std::invalid_argument>(
      [] {
        Tensor::empty_strided(DType::Float32, {4, 4}, {k2p62, 1});
      },
      {"sizes [4, 4] strides [4611686018427387904, 1]", "strided extent overflows int64"});
  expect_error<std::invalid_argument>(
      [] {
        Tensor::empty_strided(DType::Float32, {4, 4}, {k2p61, 1});
      },
      {"sizes [4, 4] strides [2305843009213693952, 1]", "strided extent in bytes overflows"});
  expect_error<std::invalid_argument>([] { Tensor::empty_strided(DType::Float32, {4}, {-1}); },
                                      {"strides [-1]", "negative strides are not supported"});
}

TEST(TensorOverflow, EmptyRefusesBytesThatOverflow) {
  // 2^61 elements fit int64, 2^63 bytes do not (the old code threw a bare std::bad_alloc).
  expect_error<std::invalid_argument>(
      [] { Tensor::empty(DType::Float32, {k2p61}); },
      {"sizes [2305843009213693952] strides [1]", "byte size overflows int64"});
  expect_error<std::invalid_argument>(
      [] {
        Tensor::empty(DType::Float32, {k2p62, 4});
      },
      {"element count overflows int64"});
}

TEST(TensorOverflow, ViewsCannotWrapPastTheirStorage) {
  const Tensor base = Tensor::empty(DType::Float32, {16});
  // Both layouts wrapped to at most 16 bytes in the old code and were accepted over these 64.
  expect_error<std::invalid_argument>(
      [&] {
        Tensor(base.storage(), DType::Float32, {4, 4}, {k2p62, 1}, 0);
      },
      {"sizes [4, 4] strides [4611686018427387904, 1]", "strided extent overflows int64"});
  expect_error<std::invalid_argument>(
      [&] { base.as_strided({2}, {1}, kMax - 1); },
      {"offset 9223372036854775806", "strided extent overflows int64"});
  // Strides far beyond the data are fine when the extent fits: a size-1 dim is never stepped
  // along.
  const Tensor t = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor v = t.as_strided({1, 2, 3}, {kMax, 3, 1}, 0);
  EXPECT_EQ(values(v.contiguous_copy()), values(t));
  // A valid layout past the end is still out of range.
  expect_error<std::out_of_range>(
      [&] {
        base.as_strided({2, 2}, {k2p61 / 8, 1}, 0);
      },
      {"past its storage of 64 bytes"});
}

TEST(TensorOverflow, AllocationFailureNamesTheBytes) {
  // A valid layout whose 10^15 bytes no system grants: an AllocationError (a
  // std::runtime_error), not a bare std::bad_alloc.
  expect_error<AllocationError>([] { Tensor::empty(DType::Float32, {kAbsurdFloats}); },
                                {"cannot allocate 1000000000000000 bytes", "f32[250000000000000]"});
  try {
    Storage storage(1'000'000'000'000'000);
    ADD_FAILURE() << "expected AllocationError";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot allocate 1000000000000000 bytes: out of memory");
  }
  expect_error<AllocationError>(
      [] { Storage storage(std::numeric_limits<size_t>::max()); },
      {"cannot allocate 18446744073709551615 bytes", "more than the address space holds"});
}

TEST(EagerOverflow, AllocationFailureNamesTheValue) {
  const Tensor x = make(DType::Float32, {1}, {2.0});
  const std::string program =
      "def g(x: f32[1]):\n"
      "    y = expand(x, [250000000000000])\n"
      "    z = neg(y)\n"
      "    return z\n";
  expect_error<AllocationError>(
      [&] { run1(program, {x}); },
      {"eager: cannot allocate 1000000000000000 bytes for 'z'", "f32[250000000000000]", "neg"});
  const std::string reduction =
      "def g(x: f32[1]):\n"
      "    y = expand(x, [250000000000000, 2])\n"
      "    s = sum(y, dim=[1])\n"
      "    return s\n";
  expect_error<AllocationError>([&] { run1(reduction, {x}); },
                                {"eager: cannot allocate 1000000000000000 bytes for 's'", "sum"});
  // The expanded view itself costs nothing.
  const std::string view =
      "def g(x: f32[1]):\n    y = expand(x, [250000000000000])\n    return y\n";
  const Tensor y = run1(view, {x});
  EXPECT_EQ(y.strides(), std::vector<int64_t>{0});
  EXPECT_EQ(y.get({kAbsurdFloats - 1}), 2.0);
}

TEST(EagerOverflow, UnsqueezeStrideDoesNotOverflow) {
  // A valid 1-byte layout whose PyTorch stride for a new outer dim, 2 * 2^62, overflows: the
  // old code wrapped it to a negative stride and refused the view.
  const Tensor x(claimed_storage(static_cast<size_t>(k2p62 + 4)), DType::Bool, {2, 4}, {k2p62, 1},
                 0);
  const Tensor u = run1(
      "def g(x: bool[2, 4] strides=[4611686018427387904, 1]):\n"
      "    u = unsqueeze(x, 0)\n"
      "    return u\n",
      {x});
  EXPECT_EQ(u.sizes(), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(u.strides()[1], k2p62);
  EXPECT_EQ(u.strides()[2], 1);
  EXPECT_EQ(u.get({0, 0, 0}), 0.0);
}

TEST(EagerOverflow, ViewStridesDoNotOverflow) {
  // Merging the dims would need stride 2 * 2^62 (UB in the old code).
  EXPECT_EQ(eager::view_strides({2, 2}, {1, k2p62}, {4}), std::nullopt);
  // The new size-1 dim's contiguous stride, 2 * 2^62, does not fit; any stride serves it.
  EXPECT_EQ(eager::view_strides({2, 2}, {k2p62, 1}, {1, 2, 2}),
            (std::vector<int64_t>{1, k2p62, 1}));
  EXPECT_EQ(eager::view_strides({k2p62, 4}, {4, 1}, {4}), std::nullopt);  // numel overflows
}

}  // namespace
}  // namespace stax
