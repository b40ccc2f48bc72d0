// Compiled against eager for the factory ops (issue 7, point 3), at every SIMD level the CPU
// supports and with 1 and 3 threads: every op over every dtype it takes, at sizes with vector
// tails and at sizes that run vectorized and in parallel; a causal mask
// where(ge(arange[:, None], arange[None, :]), x, full(-inf)) that must fuse into one kernel;
// graphs without inputs; empty and 0-dim results. A factory element is one rounding of a value
// both sides compute with the same operations (src/eager/factory.cpp, src/lowering/
// lower_factory.cpp), and where/ge select exactly, so every output must equal eager's bit for
// bit: the comparisons use zero tolerance.
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/text_format.h"

namespace stax {
namespace {

// Compiles `g` at every level and runs it with 1 and 3 threads, comparing every output with
// eager's: dtype, sizes and every bit of the values (NaN equal to NaN).
void expect_equals_eager(const ir::Graph& g, const std::vector<Tensor>& inputs) {
  const std::vector<Tensor> expected = eager::run(g, inputs);
  for (auto simd : runtime::runnable_simd_levels()) {
    CompileOptions options;
    options.simd = simd;
    options.num_threads = 3;
    std::optional<CompiledGraph> compiled;
    try {
      compiled = compile(g, options);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << "\n" << ir::print_graph(g);
      return;
    }
    for (int threads : {1, 3}) {
      const std::vector<Tensor> actual = compiled->run(inputs, RunOptions{threads});
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t k = 0; k < actual.size(); ++k) {
        const std::string where = "output " + g.value(g.outputs()[k]).name + " at " +
                                  std::string(runtime::simd_level_name(simd)) + ", " +
                                  std::to_string(threads) + " threads";
        EXPECT_EQ(actual[k].dtype(), expected[k].dtype()) << where;
        EXPECT_EQ(actual[k].sizes(), expected[k].sizes()) << where;
        const eager::Difference d = eager::compare(actual[k], expected[k], 0.0, 0.0);
        EXPECT_TRUE(d.within_tolerance) << where << ": max abs " << d.max_abs << "\n"
                                        << ir::print_graph(g);
      }
    }
  }
}

void expect_equals_eager(const std::string& text, const std::vector<Tensor>& inputs) {
  expect_equals_eager(ir::parse_graph(text, "factory.stax"), inputs);
}

std::string name(DType d) {
  return std::string(dtype_name(d));
}

// Every factory op with `dtype` results, at `sizes` (rank >= 1) and over an input of `sizes`
// stored transposed, so the *_like ops see a non-contiguous self.
std::string every_factory(DType dtype, const std::vector<int64_t>& sizes) {
  const std::string d = "dtype='" + name(dtype) + "'";
  const std::string s = ir::format_sizes(sizes);
  const std::string n = std::to_string(sizes.back());
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t k = 1; k < sizes.size(); ++k) strides[k] = strides[k - 1] * sizes[k - 1];
  std::string text = "def every(x: " + name(dtype) + s + " strides=" + ir::format_sizes(strides) +
                     "):\n" + "    a = full(" + s + ", 1, " + d + ")\n" + "    b = zeros(" + s +
                     ", " + d + ")\n" + "    c = ones(" + s + ", " + d + ")\n" +
                     "    e = full_like(x, -1)\n" + "    f = zeros_like(x)\n" +
                     "    g = ones_like(x, dtype='f32')\n" + "    h = fill(x, 2)\n" +
                     "    k = scalar_tensor(1, " + d + ")\n";
  std::string outputs = "a, b, c, e, f, g, h, k";
  if (dtype != DType::Bool) {
    text += "    r = arange(-3, " + n + ", " + d + ")\n";
    text += "    r2 = arange(" + n + ", 0, -2, " + d + ")\n";
    outputs += ", r, r2";
  }
  if (is_floating(dtype)) {
    // A float step: the range's arithmetic (double, or float for the 16-bit dtypes) matters.
    text += "    r3 = arange(-0.3, " + n + ", 0.37, " + d + ")\n";
    text += "    r4 = arange(0.1, " + n + ", 1.1, " + d + ")\n";
    outputs += ", r3, r4";
  }
  if (is_integral(dtype)) {
    text += "    t = iota(" + n + ", start=120, step=7, " + d + ")\n";
    outputs += ", t";
  }
  return text + "    return " + outputs + "\n";
}

TEST(FactoryCompiled, EveryOpAndDtypeWithVectorTails) {
  for (DType dtype :
       {DType::Bool, DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64,
        DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    SCOPED_TRACE(name(dtype));
    const std::vector<int64_t> sizes = {3, 37};
    const Tensor x = eager::random_tensor_strided(dtype, sizes, {1, 3}, 1);
    expect_equals_eager(every_factory(dtype, sizes), {x});
  }
}

TEST(FactoryCompiled, LargeRangesRunVectorizedAndInParallel) {
  // 1-D results of 100003 elements: vector bodies, a masked tail and several threads; the
  // index values reach past float's integers (2^24) only in the f32 arithmetic of bf16/f16,
  // where both sides convert the index the same way.
  for (DType dtype : {DType::UInt8, DType::Int32, DType::Int64, DType::Float16, DType::BFloat16,
                      DType::Float32, DType::Float64}) {
    SCOPED_TRACE(name(dtype));
    const std::string d = "dtype='" + name(dtype) + "'";
    std::string text = "def big():\n    a = arange(5, 100008, " + d + ")\n" +
                       "    b = full([100003], 3, " + d + ")\n";
    std::string outputs = "a, b";
    if (is_floating(dtype)) {
      text += "    c = arange(-7.25, 1000, 0.01, " + d + ")\n";
      outputs += ", c";
    } else {
      text += "    c = iota(100003, start=-50000, step=3, " + d + ")\n";
      outputs += ", c";
    }
    expect_equals_eager(text + "    return " + outputs + "\n", {});
  }
}

TEST(FactoryCompiled, CausalMaskFusesIntoOneKernel) {
  const std::string text = R"(
def causal(x: f32[67, 67]):
    i = arange(0, 67)
    j = arange(0, 67)
    row = unsqueeze(i, 1)
    col = unsqueeze(j, 0)
    keep = ge(row, col)
    ninf = full([67, 67], -inf)
    y = where(keep, x, ninf)
    return y
)";
  const ir::Graph g = ir::parse_graph(text);
  const Tensor x = eager::random_tensor(DType::Float32, {67, 67}, 7);
  expect_equals_eager(g, {x});
  // Nothing but the output is stored: the mask, the ranges and the fill are recomputed in
  // the one kernel that writes y.
  const auto compilation = analyze(g);
  EXPECT_EQ(compilation->lowered.buffers.size(), 1u);
  EXPECT_EQ(compilation->schedule.kernels.size(), 1u);

  // arange(0, 67) is the index value itself: the kernel multiplies and adds nothing.
  const CompiledGraph compiled = compile(g);
  EXPECT_EQ(compiled.source().find("op_mul"), std::string::npos) << compiled.source();
  EXPECT_EQ(compiled.source().find("op_add"), std::string::npos) << compiled.source();

  // The result: -inf exactly above the diagonal.
  const Tensor y = compiled.run({x}).at(0);
  for (int64_t r = 0; r < 67; r += 11) {
    for (int64_t c = 0; c < 67; c += 5) {
      if (c > r) {
        EXPECT_EQ(y.get({r, c}), -std::numeric_limits<double>::infinity()) << r << ", " << c;
      } else {
        EXPECT_EQ(y.get({r, c}), x.get({r, c})) << r << ", " << c;
      }
    }
  }
}

TEST(FactoryCompiled, CausalMaskBuiltWithTheBuilderInBFloat16) {
  Graph g("causal_bf16");
  const int64_t t = 129;
  Val x = ops::input(g, "x", DType::BFloat16, {2, t, t});
  Val row = ops::unsqueeze(ops::arange(g, t), 1);
  Val col = ops::unsqueeze(ops::arange(g, t), 0);
  Val masked = ops::where(ops::ge(row, col), x, ops::full(g, {t, t}, -1e4, DType::BFloat16));
  // The scores of a softmax over the masked rows: a factory feeding a reduction.
  Val peak = ops::amax(masked, {-1}, true);
  ops::output(g, {masked, peak});
  expect_equals_eager(g, {eager::random_tensor(DType::BFloat16, {2, t, t}, 3)});
}

TEST(FactoryCompiled, FillConversionsMatchEager) {
  // The fill values whose conversion to the dtype is not the identity (torch 2.13.0 fills
  // these; tests/eager/test_factory.cpp has its values).
  expect_equals_eager(R"(
def fills():
    a = full([33], 9.223372036854775807e18, dtype='i64')
    b = full([33], -1, dtype='u8')
    c = full([33], 254.5, dtype='u8')
    d = full([33], -2.7, dtype='i32')
    e = full([33], -127.9, dtype='i8')
    f = full([33], nan, dtype='bool')
    g = full([1], 70000.0, dtype='f16')
    h = full([33], 0.1, dtype='bf16')
    k = full([33], 70000, dtype='f32')
    m = full([33], True, dtype='i16')
    n = full([33], -0.0, dtype='f16')
    return a, b, c, d, e, f, g, h, k, m, n
)",
                      {});
}

TEST(FactoryCompiled, GraphWithoutInputs) {
  const std::string text = R"(
def constants():
    i = arange(0, 1000)
    f = arange(0, 1, 0.001, dtype='f64')
    s = mul(f, 3.0)
    m = full([1000], 2)
    p = mul(i, m)
    z = scalar_tensor(2.5)
    return p, s, z, i
)";
  expect_equals_eager(text, {});
  const std::vector<Tensor> out = compile(ir::parse_graph(text)).run({});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].get({999}), 1998);
  EXPECT_EQ(out[2].dim(), 0u);
  EXPECT_EQ(out[2].get({}), 2.5);
}

TEST(FactoryCompiled, EmptyAndZeroDimResults) {
  expect_equals_eager(R"(
def shapes(x: f32[0, 3]):
    a = zeros([0, 3])
    b = arange(0, 0)
    c = full_like(x, 1.0)
    d = scalar_tensor(True, dtype='bool')
    e = full([], -0.0)
    f = iota(0, start=3, step=1, dtype='i32')
    return a, b, c, d, e, f
)",
                      {Tensor::empty(DType::Float32, {0, 3})});
}

TEST(FactoryCompiled, FactoriesFuseIntoArithmeticWithBroadcasting) {
  // Position encodings: an integral range cast and scaled, broadcast against an input.
  expect_equals_eager(R"(
def positions(x: f32[16, 64]):
    pos = arange(0, 16, dtype='f32')
    col = arange(0, 128, 2)
    colf = _to_copy(col, dtype='f32')
    scale = mul(colf, -0.14391156831212787)
    p = unsqueeze(pos, 1)
    angle = mul(p, scale)
    y = add(x, angle)
    w = ones_like(x)
    z = sub(y, w)
    return z
)",
                      {eager::random_tensor(DType::Float32, {16, 64}, 5)});
}

}  // namespace
}  // namespace stax
