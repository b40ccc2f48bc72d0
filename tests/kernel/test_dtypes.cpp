// Every dtype through loads, stores, conversions and the min/max/argmin/sum reductions of
// masked tails (lanes past the end never reach the result), compiled at every SIMD level
// and checked against values computed here.
#include <cmath>

#include "driver/compiler.h"
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using index::Expr;
using lowering::OpsHandler;
using lowering::OpsValue;
using lowering::PointwiseOp;
using lowering::ReductionType;

const DType kDtypes[] = {DType::Bool,    DType::Int8,    DType::UInt8,   DType::Int16,
                         DType::Int32,   DType::Int64,   DType::Float32, DType::Float64,
                         DType::Float16, DType::BFloat16};

// Values every dtype holds exactly, with the extremes of the narrow integers, in an order
// whose minimum and maximum sit in the masked tail of a 16- or 32-lane vector.
double value_at(DType d, int64_t i, int64_t n) {
  if (d == DType::Bool) return (i % 3 == 0) ? 1.0 : 0.0;
  double v = static_cast<double>((i * 7) % 11) - 5.0;  // -5 .. 5
  if (i == n - 1) v = d == DType::UInt8 ? 200.0 : (d == DType::Int8 ? -128.0 : -100.0);
  if (i == n - 2) v = d == DType::Int8 ? 127.0 : 99.0;
  if (d == DType::UInt8 && v < 0) v = -v;
  return v;
}

CompileOptions at(runtime::SimdLevel simd) {
  CompileOptions o;
  o.simd = simd;
  o.num_threads = 2;
  return o;
}

TEST(KernelDtypes, LoadStoreAndConvertEveryDtype) {
  // y = to_int64(x) and z = x (copied) for x of each dtype, 23 elements (a tail on any width).
  const int64_t n = 23;
  for (DType d : kDtypes) {
    auto convert = [d](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      return h.to_dtype(h.load("x", idx[0], d), DType::Int64);
    };
    auto copy = [d](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      return h.load("x", idx[0], d);
    };
    Tensor x = Tensor::empty(d, {n});
    for (int64_t i = 0; i < n; ++i) x.set_flat(i, value_at(d, i, n));
    for (auto simd : runtime::runnable_simd_levels()) {
      const CompiledGraph c =
          compile_lowered(make_graph({{"x", d, {n}}}, {make_buffer("y", DType::Int64, {n}, convert),
                                                       make_buffer("z", d, {n}, copy)}),
                          at(simd));
      const auto out = c.run({x});
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(out[0].get_flat(i), x.get_flat(i))
            << dtype_name(d) << " at " << runtime::simd_level_name(simd) << ", " << i;
        EXPECT_EQ(out[1].get_flat(i), x.get_flat(i))
            << dtype_name(d) << " at " << runtime::simd_level_name(simd) << ", " << i;
      }
    }
  }
}

TEST(KernelDtypes, MaskedTailsNeverReachIntegerReductions) {
  // Max, min, argmin and sum over rows of 15 and 40 elements: the rows end inside a masked
  // tail whose dead lanes (zeros) would change the result if they leaked.
  const ReductionType types[] = {ReductionType::Max, ReductionType::Min, ReductionType::ArgMin,
                                 ReductionType::Sum};
  for (int64_t len : {15, 40}) {
    for (DType d : {DType::Int8, DType::UInt8, DType::Int16, DType::Int32, DType::Int64,
                    DType::Bool, DType::Float64}) {
      const int64_t rows = 3;
      std::vector<lowering::ComputedBuffer> buffers;
      for (ReductionType t : types) {
        // Integer and bool sums accumulate in int64, as PyTorch's.
        const DType value_dtype = t == ReductionType::Sum && d != DType::Float64 ? DType::Int64 : d;
        auto body = [d, value_dtype, len](OpsHandler& h, const std::vector<Expr>& idx,
                                          const std::vector<Expr>& r) {
          OpsValue v = h.load("x", idx[0] * Expr(len) + r[0], d);
          return value_dtype == d ? v : h.to_dtype(v, value_dtype);
        };
        buffers.push_back(make_buffer("out_" + std::string(lowering::reduction_name(t)),
                                      lowering::reduction_result_dtype(t, value_dtype), {rows},
                                      body, {len}, t, {rows}));
      }
      Tensor x = Tensor::empty(d, {rows, len});
      for (int64_t i = 0; i < rows * len; ++i) {
        // Nonzero everywhere, so that a leaked zero lane would be a new maximum or minimum.
        double v = value_at(d, i % len, len) + static_cast<double>(i / len);
        if (v == 0) v = 3;
        if (d == DType::Bool) v = (i % len) != 4 ? 1.0 : 0.0;  // all true but one
        x.set_flat(i, v);
      }
      for (auto simd : runtime::runnable_simd_levels()) {
        const CompiledGraph c =
            compile_lowered(make_graph({{"x", d, {rows, len}}}, buffers), at(simd));
        const auto out = c.run({x});
        for (int64_t row = 0; row < rows; ++row) {
          double mx = -HUGE_VAL, mn = HUGE_VAL, sum = 0;
          int64_t amin = 0;
          for (int64_t j = 0; j < len; ++j) {
            const double v = x.get_flat(row * len + j);
            mx = std::max(mx, v);
            if (v < mn) mn = v, amin = j;
            sum += v;
          }
          const double expected[] = {mx, mn, static_cast<double>(amin), sum};
          for (size_t k = 0; k < 4; ++k) {
            EXPECT_EQ(out[k].get_flat(row), expected[k])
                << lowering::reduction_name(types[k]) << " of " << dtype_name(d) << "[" << len
                << "] at " << runtime::simd_level_name(simd) << ", row " << row;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace stax::kernel_test
