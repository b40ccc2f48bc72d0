// Every PointwiseOp on every operand dtype it accepts is built, verified, printed and
// compiled; the vector kernels (AVX-512, AVX2, masked tails included) give the results of the
// scalar kernel: bit for bit for every op but the transcendental ones that SLEEF computes
// within 1 ulp (u10) at each level, so two levels may differ by 2 ulp. The float32 exp, expm1,
// log, log2, log10, tanh, erf, erfc, erfinv and sigmoid are the kernel headers' own code with
// the same steps (and fused multiply-adds) at every level: bit for bit too.
#include <cmath>
#include <cstring>

#include "driver/compiler.h"
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using index::Expr;
using lowering::OpsHandler;
using lowering::OpsValue;
using lowering::PointwiseOp;

// One buffer per op that accepts `d`, over 37 elements (vectors and a tail).
lowering::LoweredGraph every_op_graph(DType d, int64_t n, std::vector<PointwiseOp>* ops) {
  std::vector<lowering::ComputedBuffer> buffers;
  for (int o = 0; o < lowering::kPointwiseOpCount; ++o) {
    const auto op = static_cast<PointwiseOp>(o);
    const auto& info = lowering::op_info(op);
    if (op != PointwiseOp::Where && !lowering::op_accepts(op, d)) continue;
    auto body = [op, d](OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
      const OpsValue a = h.load("a", idx[0], d);
      const OpsValue b = h.load("b", idx[0], d);
      if (op == PointwiseOp::Where) {
        return lowering::apply(h, op, {h.load("c", idx[0], DType::Bool), a, b});
      }
      if (lowering::op_info(op).arity == 1) return lowering::apply(h, op, {a});
      return lowering::apply(h, op, {a, b});
    };
    const DType result = info.produces_bool ? DType::Bool : d;
    buffers.push_back(make_buffer("out_" + std::string(info.name), result, {n}, body));
    ops->push_back(op);
  }
  return make_graph({{"a", d, {n}}, {"b", d, {n}}, {"c", DType::Bool, {n}}}, std::move(buffers));
}

// Transcendental float32 ops computed by the kernel headers' own code, not SLEEF.
bool own_float32_math(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::Exp:
    case PointwiseOp::Expm1:
    case PointwiseOp::Log:
    case PointwiseOp::Log2:
    case PointwiseOp::Log10:
    case PointwiseOp::Tanh:
    case PointwiseOp::Erf:
    case PointwiseOp::Erfc:
    case PointwiseOp::Erfinv:
    case PointwiseOp::Sigmoid:
      return true;
    default:
      return false;
  }
}

bool same(double x, double y) {
  return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof x) == 0;
}

// Within `ulps` units in the last place of `d` (float32 or float64) of each other.
bool close_ulps(double x, double y, DType d, double ulps) {
  if (same(x, y)) return true;
  if (!std::isfinite(x) || !std::isfinite(y)) return false;
  const int digits = d == DType::Float32 ? 24 : 53;
  const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(x), std::fabs(y))) - digits + 1);
  return std::fabs(x - y) <= ulps * ulp;
}

TEST(KernelEveryOp, VectorKernelsEqualTheScalarKernelForEveryOpAndDtype) {
  const int64_t n = 37;
  for (DType d : {DType::Float32, DType::Float64, DType::Int8, DType::UInt8, DType::Int16,
                  DType::Int32, DType::Int64, DType::Bool}) {
    Tensor a = Tensor::empty(d, {n});
    Tensor b = Tensor::empty(d, {n});
    Tensor c = Tensor::empty(DType::Bool, {n});
    for (int64_t i = 0; i < n; ++i) {
      const bool floating = is_floating(d);
      double x = floating ? std::sin(static_cast<double>(i)) * 3 : static_cast<double>(i % 13 - 6);
      double y = floating ? std::cos(static_cast<double>(i) * 0.7) * 2
                          : static_cast<double>(i % 5 + 1);  // nonzero divisors, small shifts
      if (d == DType::UInt8 && x < 0) x += 200;
      if (d == DType::Bool) x = i % 2, y = i % 3 == 0;
      if (floating && i == 3) x = NAN;
      if (floating && i == 4) x = -INFINITY;
      a.set_flat(i, x);
      b.set_flat(i, y);
      c.set_flat(i, i % 4 == 1);
    }
    std::vector<PointwiseOp> ops;
    auto graph = every_op_graph(d, n, &ops);
    std::vector<std::vector<Tensor>> results;
    std::vector<std::string> level_names;
    for (auto simd :
         {runtime::SimdLevel::Scalar, runtime::SimdLevel::Avx2, runtime::SimdLevel::Avx512}) {
      if (!runtime::cpu_supports(simd)) continue;
      CompileOptions o;
      o.simd = simd;
      o.num_threads = 1;
      const CompiledGraph compiled = compile_lowered(graph, o);
      if (simd != runtime::SimdLevel::Scalar) {
        // Every nest of the vector levels is vectorized: no op lacks a vector form.
        for (const auto& k : compiled.compilation().module.kernels) {
          for (const auto& l : k.loops) {
            for (const auto& f : l.nest_forms) EXPECT_EQ(f.rfind("vectorized", 0), 0u) << f;
          }
        }
      }
      results.push_back(compiled.run({a, b, c}));
      level_names.push_back(std::string(runtime::simd_level_name(simd)));
    }
    for (size_t lv = 1; lv < results.size(); ++lv) {
      for (size_t k = 0; k < ops.size(); ++k) {
        const auto& info = lowering::op_info(ops[k]);
        const bool sleef = info.cost == lowering::CostClass::Transcendental && is_floating(d) &&
                           !(d == DType::Float32 && own_float32_math(ops[k]));
        for (int64_t i = 0; i < n; ++i) {
          const double x = results[lv][k].get_flat(i);
          const double y = results[0][k].get_flat(i);
          EXPECT_TRUE(sleef ? close_ulps(x, y, d, 2) : same(x, y))
              << info.name << " on " << dtype_name(d) << " at " << level_names[lv] << ", element "
              << i << " (a=" << a.get_flat(i) << ", b=" << b.get_flat(i)
              << "): " << results[lv][k].get_flat(i) << " vs scalar " << results[0][k].get_flat(i);
        }
      }
    }
  }
}

}  // namespace
}  // namespace stax::kernel_test
