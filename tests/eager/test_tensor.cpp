// Tests of the host tensors (src/runtime/tensor.cpp): storage, strided views, element access
// and the exactness of the f16/bf16 conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "eager_test_util.h"
#include "runtime/tensor.h"

namespace stax {
namespace {

using eager::testing::make;
using eager::testing::values;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

uint16_t bits16(DType dtype, double value) {
  Tensor t = Tensor::empty(dtype, {});
  t.set({}, value);
  uint16_t b;
  std::memcpy(&b, t.data(), 2);
  return b;
}

double from_bits16(DType dtype, uint16_t bits) {
  Tensor t = Tensor::empty(dtype, {});
  std::memcpy(t.data(), &bits, 2);
  return t.get({});
}

TEST(Storage, AlignedAndZeroed) {
  Storage s(100);
  EXPECT_EQ(s.nbytes(), 100u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data()) % 64, 0u);
  const auto* p = static_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(p[i], 0);
  Storage empty(0);
  EXPECT_NE(empty.data(), nullptr);
}

int g_deleted = 0;
void count_delete(void* p) {
  ++g_deleted;
  delete[] static_cast<char*>(p);
}

TEST(Storage, AdoptsWithDeleter) {
  g_deleted = 0;
  {
    Storage s(new char[16], 16, count_delete);
    EXPECT_EQ(s.nbytes(), 16u);
    EXPECT_EQ(g_deleted, 0);
  }
  EXPECT_EQ(g_deleted, 1);
}

TEST(Tensor, EmptyIsContiguousAndZero) {
  Tensor t = Tensor::empty(DType::Float32, {2, 3, 4});
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dim(), 3u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_GE(t.storage()->nbytes(), 24 * 4u);
  for (double v : values(t)) EXPECT_EQ(v, 0.0);
  EXPECT_FALSE(Tensor().defined());
  EXPECT_THROW(Tensor::empty(DType::Float32, {2, -1}), std::invalid_argument);
}

TEST(Tensor, EmptyStridedCoversMaxOffset) {
  Tensor t = Tensor::empty_strided(DType::Float64, {2, 3}, {1, 4});
  EXPECT_EQ(t.storage()->nbytes(), (1 + 1 * 1 + 2 * 4) * 8u);
  EXPECT_FALSE(t.is_contiguous());
  t.set({1, 2}, 5.0);
  EXPECT_EQ(static_cast<double*>(t.data())[9], 5.0);
  Tensor zero = Tensor::empty_strided(DType::Float32, {0, 3}, {3, 1});
  EXPECT_EQ(zero.numel(), 0);
  EXPECT_TRUE(zero.is_contiguous());
  EXPECT_THROW(Tensor::empty_strided(DType::Float32, {2}, {1, 1}), std::invalid_argument);
}

TEST(Tensor, ViewSharesStorageAndChecksBounds) {
  Tensor base = make(DType::Int32, {6}, {0, 1, 2, 3, 4, 5});
  Tensor v(base.storage(), DType::Int32, {2, 2}, {1, 2}, 1);  // [[1, 3], [2, 4]]
  EXPECT_EQ(values(v), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_EQ(static_cast<int32_t*>(v.data()), static_cast<int32_t*>(base.data()) + 1);
  v.set({1, 1}, 40);
  EXPECT_EQ(base.get({4}), 40);
  EXPECT_THROW(Tensor(base.storage(), DType::Int32, {2, 2}, {1, 2}, 3), std::out_of_range);
  EXPECT_THROW(Tensor(base.storage(), DType::Int32, {2}, {1, 1}, 0), std::invalid_argument);
  Tensor a = base.as_strided({3}, {2}, 0);
  EXPECT_EQ(values(a), (std::vector<double>{0, 2, 40}));
  EXPECT_EQ(a.storage(), base.storage());
}

TEST(Tensor, IsContiguousIgnoresSizeOneDims) {
  Tensor base = Tensor::empty(DType::Float32, {12});
  EXPECT_TRUE(base.as_strided({3, 1, 4}, {4, 99, 1}, 0).is_contiguous());
  EXPECT_FALSE(base.as_strided({4, 3}, {1, 4}, 0).is_contiguous());
  EXPECT_FALSE(base.as_strided({3, 4}, {0, 1}, 0).is_contiguous());
  EXPECT_TRUE(base.as_strided({}, {}, 5).is_contiguous());
}

TEST(Tensor, GetSetAndFlatAccess) {
  Tensor t = Tensor::empty(DType::Float32, {2, 3});
  t.set({1, 2}, 1.5);
  EXPECT_EQ(t.get({1, 2}), 1.5);
  EXPECT_EQ(t.get_flat(5), 1.5);
  t.set_flat(1, 0.1);
  EXPECT_EQ(t.get({0, 1}), static_cast<double>(0.1f));
  EXPECT_THROW(t.get({2, 0}), std::out_of_range);
  EXPECT_THROW(t.get({0}), std::out_of_range);
  EXPECT_THROW(t.get_flat(6), std::out_of_range);
}

TEST(Tensor, IntegerAndBoolConversions) {
  Tensor b = Tensor::empty(DType::Bool, {3});
  b.set({0}, 2.5);
  b.set({1}, 0.0);
  b.set({2}, -1.0);
  const auto* bytes = static_cast<const uint8_t*>(b.data());
  EXPECT_EQ(bytes[0], 1);
  EXPECT_EQ(bytes[1], 0);
  EXPECT_EQ(bytes[2], 1);
  EXPECT_EQ(b.get({0}), 1.0);

  Tensor i = Tensor::empty(DType::Int32, {3});
  i.set({0}, 3.7);
  i.set({1}, -3.7);
  i.set({2}, kNaN);
  EXPECT_EQ(values(i), (std::vector<double>{3, -3, 0}));

  Tensor u = Tensor::empty(DType::UInt8, {2});
  u.set({0}, -1);
  u.set({1}, 256 + 7);
  EXPECT_EQ(values(u), (std::vector<double>{255, 7}));

  Tensor l = Tensor::empty(DType::Int64, {1});
  l.set({0}, 9007199254740992.0);  // 2^53
  EXPECT_EQ(static_cast<int64_t*>(l.data())[0], int64_t{1} << 53);
  l.set({0}, 1e300);
  EXPECT_EQ(static_cast<int64_t*>(l.data())[0], std::numeric_limits<int64_t>::max());
}

TEST(Tensor, Float16Conversion) {
  const DType h = DType::Float16;
  EXPECT_EQ(bits16(h, 1.0), 0x3C00);
  EXPECT_EQ(bits16(h, -2.0), 0xC000);
  EXPECT_EQ(bits16(h, 0.1), 0x2E66);
  EXPECT_EQ(bits16(h, 1.0 / 3.0), 0x3555);
  EXPECT_EQ(bits16(h, 65504.0), 0x7BFF);   // largest finite
  EXPECT_EQ(bits16(h, 65519.99), 0x7BFF);  // below the midpoint to 65536
  EXPECT_EQ(bits16(h, 65520.0), 0x7C00);   // midpoint rounds to even: inf
  EXPECT_EQ(bits16(h, 1e10), 0x7C00);
  EXPECT_EQ(bits16(h, -kInf), 0xFC00);
  EXPECT_EQ(bits16(h, -0.0), 0x8000);
  EXPECT_EQ(bits16(h, std::ldexp(1.0, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(bits16(h, std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(bits16(h, std::ldexp(1.0, -25)), 0x0000);  // tie with 0: even
  EXPECT_EQ(bits16(h, std::ldexp(1.5, -25)), 0x0001);
  EXPECT_EQ(bits16(h, std::ldexp(3.0, -25)), 0x0002);            // tie 1.5 ulp: to even 2
  EXPECT_EQ(bits16(h, std::ldexp(1023.75, -24)), 0x0400);        // subnormal rounds up to normal
  EXPECT_EQ(bits16(h, 1.0 + std::ldexp(1.0, -11)), 0x3C00);      // tie: to even
  EXPECT_EQ(bits16(h, 1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02);  // tie: to even (up)
  EXPECT_EQ(bits16(h, 2047.0 + 0.5), 0x6800);                    // carry into the exponent
  const uint16_t nan = bits16(h, kNaN);
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);

  EXPECT_EQ(from_bits16(h, 0x3C00), 1.0);
  EXPECT_EQ(from_bits16(h, 0x7BFF), 65504.0);
  EXPECT_EQ(from_bits16(h, 0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(from_bits16(h, 0x03FF), std::ldexp(1023.0, -24));
  EXPECT_EQ(from_bits16(h, 0xFC00), -kInf);
  EXPECT_TRUE(std::isnan(from_bits16(h, 0x7E00)));
  EXPECT_TRUE(std::signbit(from_bits16(h, 0x8000)));
  // Every finite half round-trips.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7C00) == 0x7C00) continue;
    EXPECT_EQ(bits16(h, from_bits16(h, static_cast<uint16_t>(b))), b);
  }
}

TEST(Tensor, BFloat16Conversion) {
  const DType bf = DType::BFloat16;
  EXPECT_EQ(bits16(bf, 1.0), 0x3F80);
  EXPECT_EQ(bits16(bf, 0.1), 0x3DCD);
  EXPECT_EQ(bits16(bf, -3.0), 0xC040);
  EXPECT_EQ(bits16(bf, 1.0 + std::ldexp(1.0, -8)), 0x3F80);      // tie: to even
  EXPECT_EQ(bits16(bf, 1.0 + 3 * std::ldexp(1.0, -8)), 0x3F82);  // tie: to even (up)
  // Just above a tie: one correct rounding from double goes up (rounding through float
  // first would lose the 2^-40 and round down to even).
  EXPECT_EQ(bits16(bf, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)), 0x3F81);
  EXPECT_EQ(bits16(bf, 3.3895313892515355e38), 0x7F7F);  // largest finite
  EXPECT_EQ(bits16(bf, 3.4e38), 0x7F80);                 // overflows to inf
  EXPECT_EQ(bits16(bf, std::ldexp(1.0, -133)), 0x0001);  // smallest subnormal
  EXPECT_EQ(bits16(bf, std::ldexp(1.0, -126)), 0x0080);  // smallest normal
  EXPECT_EQ(from_bits16(bf, 0x3F80), 1.0);
  EXPECT_EQ(from_bits16(bf, 0x4049), 3.140625);
  EXPECT_EQ(from_bits16(bf, 0x0001), std::ldexp(1.0, -133));
  EXPECT_TRUE(std::isnan(from_bits16(bf, 0x7FC0)));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7F80) == 0x7F80) continue;
    EXPECT_EQ(bits16(bf, from_bits16(bf, static_cast<uint16_t>(b))), b);
  }
}

TEST(Tensor, Float32RoundsToNearestEven) {
  Tensor t = Tensor::empty(DType::Float32, {1});
  t.set({0}, 1.0 + std::ldexp(1.0, -24));  // tie between 1 and 1 + 2^-23
  EXPECT_EQ(t.get({0}), 1.0);
  t.set({0}, 1e39);
  EXPECT_EQ(t.get({0}), kInf);
}

TEST(Tensor, ContiguousCopy) {
  Tensor base = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor t = base.as_strided({3, 2}, {1, 3}, 0);  // transpose
  Tensor c = t.contiguous_copy();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.storage(), base.storage());
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(c), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  // Bits are copied exactly (int64 beyond 2^53).
  Tensor big = Tensor::empty(DType::Int64, {2});
  static_cast<int64_t*>(big.data())[1] = (int64_t{1} << 62) + 1;
  EXPECT_EQ(static_cast<int64_t*>(big.contiguous_copy().data())[1], (int64_t{1} << 62) + 1);
}

TEST(Tensor, UnravelAndShapeString) {
  EXPECT_EQ(unravel_index(5, {2, 3}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(unravel_index(0, {}), (std::vector<int64_t>{}));
  EXPECT_EQ(unravel_index(7, {2, 2, 2}), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_THROW(unravel_index(6, {2, 3}), std::out_of_range);
  EXPECT_EQ(shape_to_string({64, 128}), "[64, 128]");
  EXPECT_EQ(shape_to_string({}), "[]");
  EXPECT_EQ(shape_to_string({7}), "[7]");
}

}  // namespace
}  // namespace stax
