// The 64-bit index path end to end (issue 6 point 8): a compiled graph over a uint8 tensor of
// 2.2e9 elements, more than 2^31, whose kernels must keep int64 loop and index arithmetic.
// Checked against closed forms, not the eager interpreter (too slow at this size). Peak
// memory is the input and one output, 4.4 GB.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "driver/compiler.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace stax {
namespace {

// x[i] = i mod 251: 251 is prime, so an index wrapped modulo 2^31 or 2^32 reads a different
// value than the right one (2^31 and 2^32 are not multiples of 251).
constexpr int64_t kPeriod = 251;

void fill_pattern(uint8_t* data, int64_t n) {
  // One block of whole periods written by hand, then copied: fast enough for 2.2 GB.
  const int64_t block = std::min<int64_t>(n, kPeriod * 65536);
  for (int64_t i = 0; i < block; ++i) data[i] = static_cast<uint8_t>(i % kPeriod);
  for (int64_t at = block; at < n; at += block) {
    std::memcpy(data + at, data, static_cast<size_t>(std::min(block, n - at)));
  }
}

TEST(LargeIndices, SumAndAddOverMoreThanTwoToThe31Elements) {
  const int64_t n = 2'200'000'000;
  const ir::Graph g = ir::parse_graph(
      "def f(x: u8[2200000000]):\n    s = sum(x)\n    y = add(x, 1)\n    return s, y\n");
  CompileOptions options;
  options.num_threads = 2;
  const CompiledGraph compiled = compile(g, options);
  // The kernels index past 2^31: every loop variable is int64.
  EXPECT_EQ(compiled.source().find("int32_t"), std::string::npos) << compiled.source();

  std::vector<Tensor> outputs;
  {
    const Tensor x = Tensor::empty(DType::UInt8, {n});
    fill_pattern(static_cast<uint8_t*>(x.data()), n);
    outputs = compiled.run({x}, RunOptions{2});
  }  // the input's 2.2 GB are freed here
  ASSERT_EQ(outputs.size(), 2u);

  // sum over whole periods of 0 + 1 + ... + 250, then 0 + ... + (r - 1); an int64 result.
  const int64_t periods = n / kPeriod, rest = n % kPeriod;
  const int64_t expected_sum = periods * (kPeriod * (kPeriod - 1) / 2) + rest * (rest - 1) / 2;
  EXPECT_EQ(expected_sum, int64_t{274999994270});
  ASSERT_EQ(outputs[0].dtype(), DType::Int64);
  EXPECT_EQ(*static_cast<const int64_t*>(outputs[0].data()), expected_sum);

  // y = x + 1 (uint8; the pattern's largest value 250 does not wrap), checked at every element
  // from below 2^31 to the end and at a sample before.
  const Tensor& y = outputs[1];
  ASSERT_EQ(y.dtype(), DType::UInt8);
  ASSERT_EQ(y.sizes(), std::vector<int64_t>{n});
  const auto* out = static_cast<const uint8_t*>(y.data());
  int64_t wrong = 0, first_wrong = -1;
  auto check = [&](int64_t i) {
    if (out[i] == static_cast<uint8_t>(i % kPeriod + 1)) return;
    if (wrong++ == 0) first_wrong = i;
  };
  for (int64_t i = (int64_t{1} << 31) - 4096; i < n; ++i) check(i);
  for (int64_t i = 0; i < n; i += 9973) check(i);
  EXPECT_EQ(wrong, 0) << "first wrong element " << first_wrong;
}

}  // namespace
}  // namespace stax
