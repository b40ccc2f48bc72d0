// Compiled reductions of issue 6 against the eager oracle, at every SIMD level
// the CPU runs and 1 and 3 threads: integer and bool extrema over lengths whose
// masked tails would win if their lanes leaked (15-40 elements), NaN in
// arg-reductions, reductions over transposed views, var/std accumulation, empty
// reductions, result dtypes, and a float32 sum over 10^8 elements against a
// float64 reference (at least as accurate as PyTorch's).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"

namespace stax {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

CompiledGraph compile_for(const ir::Graph& g, runtime::SimdLevel simd, int threads) {
  CompileOptions o;
  o.simd = simd;
  o.num_threads = threads;
  return compile(g, o);
}

// The tolerance of each output: exact for integers and bool, else the driver's
// (dtype and sums), unless the test gives its own.
using Tolerances = std::vector<Tolerance>;

// Compiles `text` at every level with 1 and 3 threads and compares every output
// with eager's, dtype and sizes included.
void expect_matches_eager(const std::string& text, const std::vector<Tensor>& inputs,
                          Tolerances tolerances = {}) {
  const ir::Graph g = ir::parse_graph(text);
  const std::vector<Tensor> expected = eager::run(g, inputs);
  if (tolerances.empty()) tolerances = output_tolerances(g);
  ASSERT_EQ(tolerances.size(), expected.size());
  for (auto simd : runtime::runnable_simd_levels()) {
    for (int threads : {1, 3}) {
      const std::vector<Tensor> actual = compile_for(g, simd, threads).run(inputs);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t k = 0; k < actual.size(); ++k) {
        EXPECT_EQ(actual[k].dtype(), expected[k].dtype()) << "output " << k;
        const eager::Difference d =
            eager::compare(actual[k], expected[k], tolerances[k].rtol, tolerances[k].atol);
        EXPECT_TRUE(d.within_tolerance)
            << "output " << k << " (" << g.value(g.outputs()[k]).name << ") at "
            << runtime::simd_level_name(simd) << ", " << threads << " threads: max abs "
            << d.max_abs << ", max rel " << d.max_rel << "\n"
            << text;
      }
    }
  }
}

Tensor filled(DType dtype, std::vector<int64_t> sizes, const std::vector<double>& values) {
  Tensor t = Tensor::empty(dtype, std::move(sizes));
  for (int64_t i = 0; i < t.numel(); ++i) t.set_flat(i, values.at(static_cast<size_t>(i)));
  return t;
}

// n values of `f(i)`.
template <typename F>
std::vector<double> series(int64_t n, F f) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(f(i));
  return v;
}

// amin, amax, argmin and argmax of three inputs of 15, 33 and 40 elements (a
// masked tail at every vector width: 16, 32 and 64 bytes of int8/uint8 hold 16,
// 32, 64 lanes) whose values all lie on one side of zero, so a masked lane read
// as 0 would win any of them.
std::string extrema_program(const std::string& dtype, bool arg) {
  std::string text = "def f(a: " + dtype + "[15], b: " + dtype + "[33], c: " + dtype + "[40]):\n";
  std::string outputs;
  for (const char* x : {"a", "b", "c"}) {
    for (const char* op : {"amin", "amax", "argmin", "argmax"}) {
      const std::string name = std::string(op) + "_" + x;
      if (!arg && std::string(op).rfind("arg", 0) == 0) continue;
      text += "    " + name + " = " + op + "(" + x + ")\n";
      outputs += (outputs.empty() ? "" : ", ") + name;
    }
  }
  return text + "    return " + outputs + "\n";
}

TEST(CompiledReductions, NarrowIntegerExtremaIgnoreMaskedTails) {
  for (int sign : {1, -1}) {
    // int8 values in [1, 100] or [-100, -1]: 0 beats every element of one of
    // amin/amax.
    auto i8 = [sign](int64_t n, int64_t salt) {
      return series(
          n, [=](int64_t i) { return sign * static_cast<double>(1 + (i * 37 + salt * 11) % 100); });
    };
    expect_matches_eager(extrema_program("i8", true), {filled(DType::Int8, {15}, i8(15, 1)),
                                                       filled(DType::Int8, {33}, i8(33, 2)),
                                                       filled(DType::Int8, {40}, i8(40, 3))});
  }
  // uint8 in [100, 255]: a masked 0 would be the minimum; 255 at the last
  // element (a tail lane).
  auto u8 = [](int64_t n) {
    return series(n, [n](int64_t i) {
      return i == n - 1 ? 255.0 : static_cast<double>(100 + (i * 53) % 150);
    });
  };
  expect_matches_eager(extrema_program("u8", true),
                       {filled(DType::UInt8, {15}, u8(15)), filled(DType::UInt8, {33}, u8(33)),
                        filled(DType::UInt8, {40}, u8(40))});
  // int8 extremes -128 and 127 in the tail, repeated (the first index wins).
  auto ends = [](int64_t n) {
    return series(n, [n](int64_t i) {
      return i >= n - 2 ? (i % 2 ? 127.0 : -128.0) : static_cast<double>(i % 7);
    });
  };
  expect_matches_eager(extrema_program("i8", true),
                       {filled(DType::Int8, {15}, ends(15)), filled(DType::Int8, {33}, ends(33)),
                        filled(DType::Int8, {40}, ends(40))});
}

TEST(CompiledReductions, BoolReductionsIgnoreMaskedTails) {
  // All true: a masked false lane would make amin / all false; all false for
  // amax / any.
  const std::string text =
      "def f(t: bool[33], u: bool[15], z: bool[40]):\n"
      "    a = amin(t)\n    b = all(t)\n    c = all(u)\n    d = amax(z)\n    e "
      "= any(z)\n"
      "    g = sum(t)\n    h = prod(u)\n    return a, b, c, d, e, g, h\n";
  expect_matches_eager(text, {filled(DType::Bool, {33}, series(33, [](int64_t) { return 1.0; })),
                              filled(DType::Bool, {15}, series(15, [](int64_t) { return 1.0; })),
                              filled(DType::Bool, {40}, series(40, [](int64_t) { return 0.0; }))});
}

TEST(CompiledReductions, NaNWinsArgReductionsAndExtrema) {
  // The first NaN wins; NaN at the start, in the middle, in the tail (positions
  // past the last full vector at every width), and rows without NaN.
  const int64_t rows = 5, len = 37;
  std::vector<double> v =
      series(rows * len, [](int64_t i) { return std::sin(static_cast<double>(i)); });
  v[0 * len + 0] = kNaN;
  v[1 * len + 20] = kNaN;
  v[1 * len + 30] = kNaN;
  v[2 * len + 36] = kNaN;
  v[3 * len + 33] = kInf;
  const std::string text =
      "def f(x: f32[5, 37], h: f16[5, 37]):\n"
      "    a = argmax(x, 1)\n    b = argmin(x, 1)\n    c "
      "= amax(x, [1])\n    d = amin(x, [1])\n"
      "    e = argmax(x)\n    g = argmin(h, 1, "
      "keepdim=True)\n    k = amax(h, [1])\n"
      "    return a, b, c, d, e, g, k\n";
  expect_matches_eager(
      text, {filled(DType::Float32, {rows, len}, v), filled(DType::Float16, {rows, len}, v)});
}

TEST(CompiledReductions, ReductionsOverTransposedViews) {
  // x is stored column-major; y is permuted in the graph. Reductions follow
  // logical order.
  const std::string text =
      "def f(x: f32[37, 45] strides=[1, 37], y: f32[3, 40, 21]):\n"
      "    a = sum(x, [0])\n    b = sum(x, [1])\n    c = argmax(x)\n    d = "
      "argmin(x, 0)\n"
      "    p = permute(y, [2, 0, 1])\n    e = amax(p, [0, 2])\n    g = var(p, "
      "[0], correction=0)\n"
      "    k = logsumexp(x, [1])\n    m = mean(p, [1, 2], keepdim=True)\n"
      "    return a, b, c, d, e, g, k, m\n";
  const ir::Graph g = ir::parse_graph(text);
  Tolerances tolerances = output_tolerances(g);
  // var over 21 elements in float32 (Welford): its mean and M2 each err like a
  // 21-term sum.
  tolerances[5] = value_tolerance(DType::Float32, {21, 21});
  tolerances[6] = value_tolerance(DType::Float32, {45});  // its sum of exp
  expect_matches_eager(text,
                       {eager::random_tensor_strided(DType::Float32, {37, 45}, {1, 37}, 7),
                        eager::random_tensor(DType::Float32, {3, 40, 21}, 8)},
                       tolerances);
}

TEST(CompiledReductions, VarianceAccumulatesStably) {
  // 10^5 values uniform in [10 - sqrt(3), 10 + sqrt(3)): mean 10, standard
  // deviation 1, so kappa = |mean| / std = 10. A float32 Welford accumulation
  // would err like u * sqrt(N) * kappa (u = 2^-24, random rounding): 1.9e-4
  // relative at 4 standard deviations; PyTorch's (and Stax's) is in double, so
  // var and std here are rounding-exact.
  const int64_t n = 100000;
  std::vector<double> v = series(n, [](int64_t i) {
    const double unit =
        static_cast<double>((static_cast<uint64_t>(i) * 2654435761u) & 0xFFFFFFFFu) / 4294967296.0;
    return 10.0 + std::sqrt(3.0) * (2 * unit - 1);
  });
  const double u = std::ldexp(1.0, -24);
  const double rtol = 4 * u;
  expect_matches_eager(
      "def f(x: f32[100000]):\n    v = var(x)\n    s = std(x, correction=0)\n"
      "    return v, s\n",
      {filled(DType::Float32, {n}, v)}, {{rtol, 0}, {rtol, 0}});
  // bf16 input: accumulated in double and rounded once, so within bfloat16's
  // own tolerance.
  expect_matches_eager(
      "def f(x: bf16[100000]):\n    v, m = var_mean(x)\n    s = std(x)\n"
      "    return v, m, s\n",
      {filled(DType::BFloat16, {n}, v)},
      {value_tolerance(DType::BFloat16, {}), value_tolerance(DType::BFloat16, {}),
       value_tolerance(DType::BFloat16, {})});
}

// Values of magnitude `scale` around `center`: a deterministic spread in [-1, 1) * scale.
std::vector<double> spread(int64_t n, double center, double scale) {
  return series(n, [center, scale](int64_t i) {
    const double unit =
        static_cast<double>((static_cast<uint64_t>(i) * 2654435761u) & 0xFFFFFFFFu) / 4294967296.0;
    return center + scale * (2 * unit - 1);
  });
}

TEST(CompiledReductions, VarianceAccumulatesInDoubleLikePyTorch) {
  // PyTorch's CPU var/std/var_mean accumulate float32 in double and round once, so values
  // near the float32 range limits keep their std (their squares leave float32's range:
  // 1e30^2 overflows, 1e-30^2 underflows; at 1e19 the variance fits but M2 over 40000
  // elements does not), and a mean of 1e4 with a spread of 1e-3 keeps its variance.
  // Both sides compute in double, so they agree to float32's rounding. Long rows reach the
  // split and parallel reduction paths; dim 0 the reduction across vector lanes; a whole
  // tensor's var/std PyTorch's two passes (mean in float32, then (x - mean)^2 in double).
  // A whole tensor's var/std depend on the float32 mean's rounding (eager's own answer
  // changes by the variance's size when its sum rounds differently), so they are checked
  // at zero centers only.
  const Tolerance rounding{4.0 * std::ldexp(1.0, -24), 0};
  for (const auto& [center, scale] : std::vector<std::pair<double, double>>{
           {0, 1e30}, {0, 1e-30}, {0, 1e19}, {1e4, 1e-3}, {-3e3, 1e-3}}) {
    SCOPED_TRACE("center " + std::to_string(center) + ", scale " + std::to_string(scale));
    std::string text =
        "def f(x: f32[3, 40000], t: f32[40000, 3], w: f32[100000]):\n"
        "    a = std(x, 1)\n    b = var(x, [1], correction=0, keepdim=True)\n"
        "    c, d = var_mean(x, 1)\n    e = std(t, 0)\n    g = var(t, [0], correction=2)\n"
        "    k, m = var_mean(w, correction=0)\n";
    text += center == 0
                ? "    h = std(w)\n    n = var(w)\n    return a, b, c, d, e, g, k, m, h, n\n"
                : "    return a, b, c, d, e, g, k, m\n";
    const ir::Graph g = ir::parse_graph(text);
    Tolerances tolerances(g.outputs().size(), rounding);
    expect_matches_eager(text,
                         {filled(DType::Float32, {3, 40000}, spread(120000, center, scale)),
                          filled(DType::Float32, {40000, 3}, spread(120000, center, scale)),
                          filled(DType::Float32, {100000}, spread(100000, center, scale))},
                         tolerances);
  }
}

TEST(CompiledReductions, WholeTensorVarianceIsPyTorchsTwoPasses) {
  // torch.var of a whole float32 tensor takes mean() in float32 first: 3e38 * 4 overflows
  // the sum, so var and std are inf where var_mean's Welford gives 0 (torch 2.13.0).
  const std::string text =
      "def f(x: f32[4]):\n    v = var(x)\n    s = std(x)\n    a, m = var_mean(x)\n"
      "    return v, s, a, m\n";
  const std::vector<Tensor> inputs = {filled(DType::Float32, {4}, {3e38, 3e38, 3e38, 3e38})};
  const std::vector<Tensor> expected = eager::run(ir::parse_graph(text), inputs);
  EXPECT_EQ(expected[0].get({}), kInf);
  EXPECT_EQ(expected[1].get({}), kInf);
  EXPECT_EQ(expected[2].get({}), 0.0);
  EXPECT_EQ(expected[3].get({}), 3.0000000054977558e+38);
  expect_matches_eager(text, inputs);
}

TEST(CompiledReductions, EmptyReductionsGiveTheIdentity) {
  const std::string text =
      "def f(x: f32[4, 0], i: i32[3, 0]):\n"
      "    a = sum(x, [1])\n    b = prod(x, 1)\n    c = any(x, [1])\n    d = "
      "all(x, [1])\n"
      "    e = mean(x, [1])\n    g = var(x, [1])\n    k = logsumexp(x, [1])\n"
      "    m = sum(i, [1])\n    p = prod(i, 1, keepdim=True)\n    return a, b, "
      "c, d, e, g, k, m, p\n";
  expect_matches_eager(
      text, {Tensor::empty(DType::Float32, {4, 0}), Tensor::empty(DType::Int32, {3, 0})});
}

TEST(CompiledReductions, ResultDtypesAreEagers) {
  const std::string text =
      "def f(a: i8[3, 17], u: u8[3, 17], h: f16[3, 17], "
      "b: bool[3, 17], i: i32[3, 17]):\n"
      "    s = sum(a, [1])\n    p = prod(b, 1)\n    q = "
      "prod(a, 1, dtype='i8')\n"
      "    y = any(u, [1])\n    z = all(u, [1])\n    k = "
      "argmax(h, 1)\n    l = logsumexp(i, [1])\n"
      "    m = mean(h, [1])\n    n = sum(h, [1])\n    r = "
      "sum(i, dtype='f64')\n    v = amax(b, [1])\n"
      "    return s, p, q, y, z, k, l, m, n, r, v\n";
  const ir::Graph g = ir::parse_graph(text);
  std::vector<Tensor> inputs;
  uint64_t seed = 11;
  for (ir::ValueRef in : g.inputs()) {
    inputs.push_back(eager::random_tensor(g.value(in).type.dtype, g.value(in).type.sizes, seed++));
  }
  // The dtypes torch 2.13.0 gives these calls.
  const std::vector<DType> torch_dtypes = {
      DType::Int64,   DType::Int64,   DType::Int8,    DType::UInt8,   DType::UInt8, DType::Int64,
      DType::Float32, DType::Float16, DType::Float16, DType::Float64, DType::Bool};
  const std::vector<Tensor> expected = eager::run(g, inputs);
  for (size_t k = 0; k < expected.size(); ++k) EXPECT_EQ(expected[k].dtype(), torch_dtypes[k]) << k;
  expect_matches_eager(text, inputs);
}

TEST(CompiledReductions, LogSumExpOfInfiniteMaxima) {
  // PyTorch's shift is 0 where the maximum is +-inf: rows [inf, ...] give inf,
  // all -inf gives -inf, a NaN gives NaN; 19 elements per row (a masked tail at
  // every width).
  const int64_t len = 19;
  std::vector<double> v =
      series(4 * len, [](int64_t i) { return std::cos(static_cast<double>(i)); });
  v[0 * len + 18] = kInf;
  for (int64_t j = 0; j < len; ++j) v[1 * len + j] = -kInf;
  v[2 * len + 5] = kNaN;
  v[3 * len + 2] = -kInf;
  const std::string text = "def f(x: f32[4, 19]):\n    l = logsumexp(x, [1])\n    return l\n";
  expect_matches_eager(text, {filled(DType::Float32, {4, len}, v)},
                       {value_tolerance(DType::Float32, {len})});
}

TEST(CompiledReductions, IntegerSumsWidenToInt64) {
  // 37 times INT32_MAX and 37 times 255 overflow their dtypes, not int64.
  const std::string text =
      "def f(i: i32[37], u: u8[37], b: bool[37]):\n    s = sum(i)\n    t = "
      "sum(u)\n"
      "    c = sum(b)\n    p = prod(u, dtype='u8')\n    return s, t, c, p\n";
  expect_matches_eager(
      text,
      {filled(DType::Int32, {37}, series(37, [](int64_t) { return 2147483647.0; })),
       filled(DType::UInt8, {37}, series(37, [](int64_t) { return 255.0; })),
       filled(DType::Bool, {37}, series(37, [](int64_t i) { return i % 3 == 0 ? 1.0 : 0.0; }))});
}

// x_i = ((i * 2654435761) mod 2^32) / 2^32 as float32: 10^8 values spread over
// [0, 1).
TEST(CompiledReductions, HundredMillionFloatSumIsAsAccurateAsPyTorch) {
  const int64_t n = 100'000'000;
  Tensor x = Tensor::empty(DType::Float32, {n});
  float* data = static_cast<float*>(x.data());
  long double exact = 0;  // 64-bit significand: at most 1e8 * 2^-64 * 5e7 = 3e-4 off
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = (static_cast<uint64_t>(i) * 2654435761u) & 0xFFFFFFFFu;
    data[i] = static_cast<float>(static_cast<double>(bits) / 4294967296.0);
    exact += data[i];
  }
  // numpy's float64 sum of the same values is 49999999.90642876; torch 2.13.0's
  // float32 sum is 50000000.0, off by 0.0936 (the float32 nearest the exact
  // sum; its neighbours are 4 away). The first check proves these are the
  // values torch summed.
  EXPECT_NEAR(static_cast<double>(exact), 49999999.90642876, 1e-3);
  const double torch_error = std::abs(50000000.0 - 49999999.90642876);
  const ir::Graph g = ir::parse_graph("def f(x: f32[100000000]):\n    s = sum(x)\n    return s\n");
  for (auto simd : runtime::runnable_simd_levels()) {
    for (int threads : {1, 3}) {
      const double got = compile_for(g, simd, threads).run({x}).at(0).get({});
      EXPECT_LE(std::abs(got - 49999999.90642876), torch_error)
          << got << " at " << runtime::simd_level_name(simd) << ", " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace stax
