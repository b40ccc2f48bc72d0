// The eager interpreter on the factory ops (issue 7, point 3). Expected values come from
// torch 2.13.0 (the Python expression is in a comment beside each; torch.arange(s, e, st) is
// torch.ops.aten.arange.start_step), compared exactly: a factory rounds once, so there is no
// tolerance to grant.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "eager_test_util.h"

namespace stax::eager {
namespace {

using testing::int64_values;
using testing::run1;
using testing::run_text;
using testing::values;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The single output of `def f(INPUTS): r = EXPR; return r` on `inputs`.
Tensor eval(const std::string& expr, const std::string& inputs = "",
            const std::vector<Tensor>& args = {}) {
  return run1("def f(" + inputs + "):\n    r = " + expr + "\n    return r\n", args);
}

void expect_values(const Tensor& t, DType dtype, const std::vector<int64_t>& sizes,
                   const std::vector<double>& expected, const std::string& what) {
  EXPECT_EQ(t.dtype(), dtype) << what;
  EXPECT_EQ(t.sizes(), sizes) << what;
  const std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    // Bitwise equality, NaN and the sign of zero included.
    EXPECT_TRUE(got[k] == expected[k] || (std::isnan(got[k]) && std::isnan(expected[k])))
        << what << " [" << k << "]: " << got[k] << " vs " << expected[k];
    EXPECT_EQ(std::signbit(got[k]), std::signbit(expected[k])) << what << " [" << k << "]";
  }
}

TEST(EagerFactoryTest, Fills) {
  // torch.full([2, 3], 1.5)
  expect_values(eval("full([2, 3], 1.5)"), DType::Float32, {2, 3}, std::vector<double>(6, 1.5),
                "full");
  // torch.full([2], 0.1, dtype=torch.bfloat16) and float16: rounded once each.
  expect_values(eval("full([2], 0.1, dtype='bf16')"), DType::BFloat16, {2},
                {0.10009765625, 0.10009765625}, "full bf16");
  expect_values(eval("full([2], 0.1, dtype='f16')"), DType::Float16, {2},
                {0.0999755859375, 0.0999755859375}, "full f16");
  // torch.full([2], 0.1).item() == 0.10000000149011612
  expect_values(eval("full([1], 0.1)"), DType::Float32, {1}, {0.10000000149011612}, "full f32");
  // torch.full([2], 3.38e38, dtype=torch.bfloat16)
  expect_values(eval("full([2], 3.38e38, dtype='bf16')"), DType::BFloat16, {2},
                {3.3762391092936863e38, 3.3762391092936863e38}, "full bf16 large");
  // Integers: uint8 -1 -> 255, -255 -> 1, -128 -> 128; floats truncate: 254.5 -> 254,
  // int32 -2.7 -> -2.
  expect_values(eval("full([1], -1, dtype='u8')"), DType::UInt8, {1}, {255}, "u8 -1");
  expect_values(eval("full([1], -255, dtype='u8')"), DType::UInt8, {1}, {1}, "u8 -255");
  expect_values(eval("full([1], -128, dtype='u8')"), DType::UInt8, {1}, {128}, "u8 -128");
  expect_values(eval("full([1], 254.5, dtype='u8')"), DType::UInt8, {1}, {254}, "u8 254.5");
  expect_values(eval("full([2], -2.7, dtype='i32')"), DType::Int32, {2}, {-2, -2}, "i32 -2.7");
  // torch.full([2], 2.0**63, dtype=torch.int64) is INT64_MIN (x86's conversion).
  EXPECT_EQ(int64_values(eval("full([2], 9.223372036854775807e18, dtype='i64')")),
            (std::vector<int64_t>(2, std::numeric_limits<int64_t>::min())));
  // torch.full([1], 2**53 + 2): exact (Stax keeps literals as doubles, so integers beyond 2^53
  // are exact only where a double is).
  EXPECT_EQ(int64_values(eval("full([1], 9007199254740994)")),
            (std::vector<int64_t>{9007199254740994}));
  // Bool: nonzero (NaN included) is true; True fills 1 as an integer.
  expect_values(eval("full([2], nan, dtype='bool')"), DType::Bool, {2}, {1, 1}, "bool nan");
  expect_values(eval("full([2], 0.5, dtype='bool')"), DType::Bool, {2}, {1, 1}, "bool 0.5");
  expect_values(eval("full([2], True, dtype='i32')"), DType::Int32, {2}, {1, 1}, "i32 True");
  expect_values(eval("full([2], True)"), DType::Bool, {2}, {1, 1}, "bool default");
  expect_values(eval("full([2], -inf)"), DType::Float32, {2}, {-kInf, -kInf}, "-inf");
  expect_values(eval("full([2], -0.0)"), DType::Float32, {2}, {-0.0, -0.0}, "-0.0");
  // torch.full([1], 70000., dtype=torch.float16) is inf (one element: rounded, not checked);
  // torch.scalar_tensor(65519., dtype=torch.float16) is 65504.
  expect_values(eval("full([1], 70000.0, dtype='f16')"), DType::Float16, {1}, {kInf}, "f16 1");
  expect_values(eval("scalar_tensor(65519.0, dtype='f16')"), DType::Float16, {}, {65504},
                "scalar_tensor f16");
  expect_values(eval("full([0, 2], 1.0)"), DType::Float32, {0, 2}, {}, "empty");
}

TEST(EagerFactoryTest, ZerosOnesScalarTensor) {
  expect_values(eval("zeros([2, 2])"), DType::Float32, {2, 2}, {0, 0, 0, 0}, "zeros");
  expect_values(eval("ones([3], dtype='bool')"), DType::Bool, {3}, {1, 1, 1}, "ones bool");
  expect_values(eval("ones([], dtype='bf16')"), DType::BFloat16, {}, {1}, "ones bf16");
  // torch.scalar_tensor(3) == tensor(3.), torch.scalar_tensor(True) == tensor(1.)
  expect_values(eval("scalar_tensor(3)"), DType::Float32, {}, {3}, "scalar_tensor 3");
  expect_values(eval("scalar_tensor(True)"), DType::Float32, {}, {1}, "scalar_tensor True");
  // torch.scalar_tensor(2.5, dtype=torch.int32) == tensor(2, dtype=torch.int32)
  expect_values(eval("scalar_tensor(2.5, dtype='i32')"), DType::Int32, {}, {2}, "truncated");
}

TEST(EagerFactoryTest, LikeOpsAndFillIgnoreTheValuesAndLayoutOfSelf) {
  // A transposed input: the result is contiguous with self's sizes.
  Tensor x = Tensor::empty_strided(DType::Int32, {2, 3}, {1, 2});
  for (int64_t p = 0; p < 6; ++p) x.set(unravel_index(p, {2, 3}), static_cast<double>(p));
  const std::string in = "x: i32[2, 3] strides=[1, 2]";
  // torch.full_like(torch.zeros(2, 3, dtype=torch.int32), 2.5) is all 2.
  Tensor a = eval("full_like(x, 2.5)", in, {x});
  expect_values(a, DType::Int32, {2, 3}, std::vector<double>(6, 2), "full_like");
  EXPECT_TRUE(a.is_contiguous());
  expect_values(eval("full_like(x, 2.5, dtype='f64')", in, {x}), DType::Float64, {2, 3},
                std::vector<double>(6, 2.5), "full_like dtype");
  expect_values(eval("zeros_like(x)", in, {x}), DType::Int32, {2, 3}, std::vector<double>(6, 0),
                "zeros_like");
  expect_values(eval("ones_like(x, dtype='f16')", in, {x}), DType::Float16, {2, 3},
                std::vector<double>(6, 1), "ones_like");
  // torch.ops.aten.fill.Scalar(torch.zeros(2, dtype=torch.bool), 3) is all True.
  expect_values(eval("fill(x, -7)", in, {x}), DType::Int32, {2, 3}, std::vector<double>(6, -7),
                "fill");
  Tensor b = Tensor::empty(DType::Bool, {2});
  expect_values(eval("fill(x, 3)", "x: bool[2]", {b}), DType::Bool, {2}, {1, 1}, "fill bool");
  // x itself is untouched (fill is the functional form).
  EXPECT_EQ(values(x), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(EagerFactoryTest, IntegerRanges) {
  // torch.arange(0, 10, 3), torch.arange(10, 0, -3)
  EXPECT_EQ(int64_values(eval("arange(0, 10, 3)")), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(int64_values(eval("arange(10, 0, -3)")), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(int64_values(eval("arange(0, 5.5, dtype='i64')")),
            (std::vector<int64_t>{0, 1, 2, 3, 4}));
  // torch.arange(-3, 5, 1, dtype=torch.uint8): wraps.
  expect_values(eval("arange(-3, 5, dtype='u8')"), DType::UInt8, {8},
                {253, 254, 255, 0, 1, 2, 3, 4}, "u8");
  // torch.arange(0, 1e10, 1e9, dtype=torch.int32): int64 arithmetic, wrapped when stored.
  expect_values(eval("arange(0, 1e10, 1e9, dtype='i32')"), DType::Int32, {10},
                {0, 1000000000, 2000000000, -1294967296, -294967296, 705032704, 1705032704,
                 -1589934592, -589934592, 410065408},
                "i32 wraps");
  // torch.arange(0, 5, 0.5, dtype=torch.int32): ten zeros (the step truncates to 0);
  // torch.arange(-2.7, 1.2, 0.6, dtype=torch.uint8): seven 254.
  expect_values(eval("arange(0, 5, 0.5, dtype='i32')"), DType::Int32, {10},
                std::vector<double>(10, 0), "step truncated");
  expect_values(eval("arange(-2.7, 1.2, 0.6, dtype='u8')"), DType::UInt8, {7},
                std::vector<double>(7, 254), "start truncated");
  // torch.arange(1.9, 5.2, 1, dtype=torch.int16)
  expect_values(eval("arange(1.9, 5.2, 1, dtype='i16')"), DType::Int16, {4}, {1, 2, 3, 4}, "i16");
  // prims.iota(5, start=2, step=3, dtype=torch.int64) and the wrapping cases.
  EXPECT_EQ(int64_values(eval("iota(5, start=2, step=3, dtype='i64')")),
            (std::vector<int64_t>{2, 5, 8, 11, 14}));
  expect_values(eval("iota(5, start=254, step=1, dtype='u8')"), DType::UInt8, {5},
                {254, 255, 0, 1, 2}, "iota u8");
  expect_values(eval("iota(5, start=126, step=1, dtype='i8')"), DType::Int8, {5},
                {126, 127, -128, -127, -126}, "iota i8");
  expect_values(eval("iota(3, start=2147483646, step=1, dtype='i32')"), DType::Int32, {3},
                {2147483646, 2147483647, -2147483648.0}, "iota i32");
}

TEST(EagerFactoryTest, FloatRangesAsTorchComputesThem) {
  // torch.arange(0, 1, 0.1) in each float dtype.
  expect_values(
      eval("arange(0, 1, 0.1)"), DType::Float32, {10},
      {0.0, 0.10000000149011612, 0.20000000298023224, 0.30000001192092896, 0.4000000059604645, 0.5,
       0.6000000238418579, 0.699999988079071, 0.800000011920929, 0.8999999761581421},
      "f32");
  expect_values(eval("arange(0, 1, 0.1, dtype='f64')"), DType::Float64, {10},
                {0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001,
                 0.7000000000000001, 0.8, 0.9},
                "f64");
  expect_values(eval("arange(0, 1, 0.1, dtype='f16')"), DType::Float16, {10},
                {0.0, 0.0999755859375, 0.199951171875, 0.300048828125, 0.39990234375, 0.5,
                 0.60009765625, 0.7001953125, 0.7998046875, 0.89990234375},
                "f16");
  expect_values(eval("arange(0, 1, 0.1, dtype='bf16')"), DType::BFloat16, {10},
                {0.0, 0.10009765625, 0.2001953125, 0.30078125, 0.400390625, 0.5, 0.6015625,
                 0.69921875, 0.80078125, 0.8984375},
                "bf16");
  // torch.arange(-0.3, 2.0, 0.37)
  expect_values(eval("arange(-0.3, 2.0, 0.37)"), DType::Float32, {7},
                {-0.30000001192092896, 0.07000000029802322, 0.4399999976158142, 0.8100000023841858,
                 1.1799999475479126, 1.5499999523162842, 1.9199999570846558},
                "f32 offset");
  // torch.arange(1/3, 3.0, 1/3, dtype=...): the 16-bit dtypes compute in float.
  expect_values(eval("arange(0.3333333333333333, 3.0, 0.3333333333333333, dtype='bf16')"),
                DType::BFloat16, {8},
                {0.333984375, 0.66796875, 1.0, 1.3359375, 1.6640625, 2.0, 2.328125, 2.671875},
                "bf16 thirds");
  expect_values(eval("arange(0.3333333333333333, 3.0, 0.3333333333333333, dtype='f16')"),
                DType::Float16, {8},
                {0.333251953125, 0.66650390625, 1.0, 1.3330078125, 1.6669921875, 2.0, 2.333984375,
                 2.666015625},
                "f16 thirds");
  // torch.arange(5, -2.5, -0.75)
  expect_values(eval("arange(5, -2.5, -0.75)"), DType::Float32, {10},
                {5.0, 4.25, 3.5, 2.75, 2.0, 1.25, 0.5, -0.25, -1.0, -1.75}, "descending");
  // torch.arange(0, 70000, 10000, dtype=torch.float16): 50000 rounds to 49984.
  expect_values(eval("arange(0, 70000, 10000, dtype='f16')"), DType::Float16, {7},
                {0, 10000, 20000, 30000, 40000, 49984, 60000}, "f16 large");
  // torch.arange(0, 1e39, 1e38): finite start and end in double, inf once past float's range.
  expect_values(eval("arange(0, 1e39, 1e38)"), DType::Float32, {10},
                {0.0, 9.999999680285692e37, 1.9999999360571385e38, 3.0000000054977558e38, kInf,
                 kInf, kInf, kInf, kInf, kInf},
                "f32 overflow");
}

TEST(EagerFactoryTest, FloatRangesRoundTheProductAndTheSumSeparately) {
  // torch's CPU kernel fuses start + step * i into one multiply-add, which Stax's kernels have
  // no primitive for, so both Stax paths round the product and then the sum (documented in
  // src/eager/factory.cpp). torch.arange(0.3, 1.0, 0.1, dtype=torch.float64) is
  // [0.3, 0.4, 0.5, 0.6, 0.7, 0.7999999999999999, 0.8999999999999999]: three elements differ
  // by an ulp from the values below.
  expect_values(eval("arange(0.3, 1.0, 0.1, dtype='f64')"), DType::Float64, {7},
                {0.3, 0.4, 0.5, 0.6000000000000001, 0.7, 0.8, 0.9000000000000001}, "f64");
}

TEST(EagerFactoryTest, GraphWithoutInputs) {
  const std::vector<Tensor> out = run_text(
      "def constants():\n"
      "    i = arange(0, 3)\n"
      "    m = full([3], 2)\n"
      "    s = mul(i, m)\n"
      "    return s, i\n",
      {});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(int64_values(out[0]), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(int64_values(out[1]), (std::vector<int64_t>{0, 1, 2}));
}

}  // namespace
}  // namespace stax::eager
