// The C++ API as the README shows it: build a graph with the builder, compile, run, compare
// with the eager interpreter; and the wrapper's input checks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "driver/compiler.h"
#include "driver/explain.h"
#include "driver/profile.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/builder.h"

namespace stax {
namespace {

TEST(Api, ReadmeExample) {
  stax::Graph g("k");
  auto x = stax::ops::input(g, "x", stax::DType::Float32, {64, 128});
  auto y = x / stax::ops::sum(x, {-1}, /*keepdim=*/true);
  stax::ops::output(g, {y});
  stax::CompiledGraph compiled = stax::compile(g);
  const Tensor input = eager::random_tensor(DType::Float32, {64, 128}, 3);
  for (int64_t p = 0; p < input.numel(); ++p) input.set_flat(p, input.get_flat(p) + 2.0);
  const auto out = compiled.run({input});
  const auto expected = eager::run(g, {input});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (std::vector<int64_t>{64, 128}));
  const Tolerance tol = output_tolerances(g)[0];
  EXPECT_TRUE(eager::compare(out[0], expected[0], tol.rtol, tol.atol).within_tolerance);
  // The explanation of the same graph is Example 7.1's.
  const std::string text = explain_text(compiled.compilation());
  EXPECT_NE(text.find("OUTER_LOOP_FUSED depth 1"), std::string::npos) << text;
}

// CompileOptions::keep_analysis = false: the program runs as before, what running reads stays,
// Issue 34, point 4: with a tracer set (driver::set_trace_hook; the Python bridge sets one
// while torch.profiler records), every kernel function and library call of a run opens and
// closes a range on the calling thread, in the program's order, named after the function and
// the fused nodes it runs (or the call and the buffer it writes); with none set, nothing.
std::vector<std::pair<std::string, bool>> traced;
void record_trace(const char* name, bool begin) {
  traced.emplace_back(name, begin);
}

TEST(Api, KernelsAndLibraryCallsOpenRangesInATracersTimeline) {
  stax::Graph g("k");
  auto x = stax::ops::input(g, "x", stax::DType::Float32, {32, 64});
  auto w = stax::ops::input(g, "w", stax::DType::Float32, {64, 48});
  auto h = stax::ops::mm(stax::ops::exp(x), w);
  stax::ops::output(g, {stax::ops::sum(stax::ops::relu(h), {-1}, /*keepdim=*/false)});
  const CompiledGraph compiled = stax::compile(g);
  const Tensor xs = eager::random_tensor(DType::Float32, {32, 64}, 1);
  const Tensor ws = eager::random_tensor(DType::Float32, {64, 48}, 2);
  traced.clear();
  (void)compiled.run({xs, ws});
  EXPECT_TRUE(traced.empty());
  driver::set_trace_hook(&record_trace);
  (void)compiled.run({xs, ws});
  driver::set_trace_hook(nullptr);
  std::vector<std::string> kernels;
  const std::string source = compiled.source();
  for (size_t at = source.find("static void kernel"); at != std::string::npos;
       at = source.find("static void kernel", at + 1)) {
    kernels.push_back(source.substr(at + 12, source.find('(', at) - at - 12));
  }
  ASSERT_EQ(kernels.size(), 2u) << source;  // exp before the product, relu and sum after
  ASSERT_EQ(traced.size(), 6u);
  EXPECT_EQ(traced[0].first.rfind("stax::kernel0 op", 0), 0u) << traced[0].first;
  EXPECT_EQ(traced[2].first.rfind("stax::mm -> ", 0), 0u) << traced[2].first;
  EXPECT_EQ(traced[4].first.rfind("stax::kernel1 op", 0), 0u) << traced[4].first;
  for (size_t k = 0; k < traced.size(); k += 2) {
    EXPECT_TRUE(traced[k].second);
    EXPECT_FALSE(traced[k + 1].second);
    EXPECT_EQ(traced[k].first, traced[k + 1].first);
  }
  traced.clear();
  (void)compiled.run({xs, ws});
  EXPECT_TRUE(traced.empty());
}

// and the analysis it freed is refused, not read empty.
TEST(Api, AProgramCompiledWithoutItsAnalysisRunsAndRefusesExplain) {
  stax::Graph g("k");
  auto x = stax::ops::input(g, "x", stax::DType::Float32, {64, 128});
  auto s = stax::ops::sum(x, {-1}, /*keepdim=*/true);
  stax::ops::output(g, {x / s, stax::ops::exp(s)});
  CompileOptions slim;
  slim.keep_analysis = false;
  const CompiledGraph kept = stax::compile(g);
  const CompiledGraph freed = stax::compile(g, slim);
  EXPECT_TRUE(kept.analysis_kept());
  EXPECT_FALSE(freed.analysis_kept());
  EXPECT_THROW((void)freed.compilation(), std::logic_error);
  EXPECT_THROW((void)freed.source(), std::logic_error);
  EXPECT_EQ(freed.output_slot_bytes(), kept.output_slot_bytes());
  EXPECT_EQ(freed.arena_bytes(), kept.arena_bytes());
  EXPECT_EQ(freed.outputs().size(), 2u);
  EXPECT_FALSE(explain_text(kept.compilation()).empty());
  const Tensor input = eager::random_tensor(DType::Float32, {64, 128}, 3);
  const auto a = kept.run({input});
  const auto b = freed.run({input});
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_TRUE(eager::compare(a[k], b[k], 0.0, 0.0).within_tolerance) << k;
  }
}

TEST(Api, WrongSizesStridesAndDtypesAreReported) {
  stax::Graph g("k");
  auto x = stax::ops::input(g, "x", stax::DType::Float32, {4, 8});
  stax::ops::output(g, {stax::ops::exp(x)});
  CompileOptions options;
  options.num_threads = 1;
  const CompiledGraph compiled = compile(g, options);
  auto message = [&](const std::vector<Tensor>& inputs) {
    try {
      compiled.run(inputs);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({Tensor::empty(DType::Float32, {4, 9})}),
            "input 'x' (argument 0): dimension 1: expected size 8, got 9");
  EXPECT_EQ(message({Tensor::empty_strided(DType::Float32, {4, 8}, {1, 4})}),
            "input 'x' (argument 0): dimension 0: expected stride 8, got 1");
  EXPECT_EQ(message({Tensor::empty(DType::Float32, {4, 8, 1})}),
            "input 'x' (argument 0): expected 2 dimensions, got 3");
  EXPECT_EQ(message({Tensor::empty(DType::Float64, {4, 8})}),
            "input 'x' (argument 0): expected dtype f32, got f64");
  EXPECT_EQ(message({}), "expected 1 inputs, got 0");
}

TEST(Api, Avx512CompilesAndRunsOnlyWhereSupported) {
  stax::Graph g("k");
  auto x = stax::ops::input(g, "x", stax::DType::Float32, {4, 37});
  stax::ops::output(g, {stax::ops::sum(stax::ops::exp(x), {1})});
  CompileOptions options;
  options.simd = runtime::SimdLevel::Avx512;
  const CompiledGraph compiled = compile(g, options);  // the AVX-512 kernel compiles anywhere
  const Tensor input = eager::random_tensor(DType::Float32, {4, 37}, 5);
  if (runtime::cpu_supports(runtime::SimdLevel::Avx512)) {
    const auto out = compiled.run({input});
    const auto expected = eager::run(g, {input});
    const Tolerance tol = output_tolerances(g)[0];
    EXPECT_TRUE(eager::compare(out[0], expected[0], tol.rtol, tol.atol).within_tolerance);
  } else {
    // Running it would be an illegal instruction: a clear error instead.
    EXPECT_THROW(compiled.run({input}), std::runtime_error);
  }
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

TEST(Api, ComparisonsOfBoolValuesAreVectorized) {
  // Every op has a vector form in the kernel-header API (kernel_api.md), bool operands
  // included: comparing two bool vectors no longer sends the kernel to the scalar form.
  const ir::Graph g = ir::parse_graph(R"(
def bb(x: f32[5, 33], y: f32[5, 33]):
    a = gt(x, 0.0)
    b = lt(y, 0.0)
    c = eq(a, b)
    d = where(c, x, y)
    return c, d
)");
  CompileOptions options;
  options.simd = runtime::SimdLevel::Avx2;
  const CompiledGraph compiled = compile(g, options);
  const auto& loops = compiled.compilation().module.kernels.at(0).loops;
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].nest_forms, (std::vector<std::string>{"vectorized(W=8) over x0"}));
  const std::vector<Tensor> inputs = {eager::random_tensor(DType::Float32, {5, 33}, 1),
                                      eager::random_tensor(DType::Float32, {5, 33}, 2)};
  const auto out = compiled.run(inputs);
  const auto expected = eager::run(g, inputs);
  EXPECT_TRUE(eager::compare(out[0], expected[0], 0, 0).within_tolerance);
  EXPECT_TRUE(eager::compare(out[1], expected[1], 0, 0).within_tolerance);
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

TEST(Api, FullReductionSplitsAcrossThreads) {
  const ir::Graph g = ir::parse_graph(R"(
def full(x: f32[1000, 1003]):
    s = sum(x)
    m = amax(x)
    n = amin(x, dim=[0, 1], keepdim=True)
    return s, m, n
)");
  Tensor input = eager::random_tensor(DType::Float32, {1000, 1003}, 9);
  for (bool with_nan : {false, true}) {
    if (with_nan) input.set({900, 17}, std::nan(""));  // in the second thread's share
    for (int level_and_threads = 0; level_and_threads < 6; ++level_and_threads) {
      const int threads = 1 + level_and_threads % 2;
      const auto level = static_cast<runtime::SimdLevel>(level_and_threads / 2);
      if (!runtime::cpu_supports(level)) continue;  // compile-checked by the kernel tests
      CompileOptions options;
      options.num_threads = threads;
      options.simd = level;
      const CompiledGraph compiled = compile(g, options);
      const auto& forms = compiled.compilation().module.kernels.at(0).loops.at(0).nest_forms;
      ASSERT_EQ(forms.size(), 1u);
      EXPECT_EQ(forms[0].find("split across threads") != std::string::npos, threads == 2)
          << forms[0];
      const auto out = compiled.run({input});
      const auto expected = eager::run(g, {input});
      const std::vector<Tolerance> tolerances = output_tolerances(g);
      for (size_t k = 0; k < out.size(); ++k) {
        const Tolerance& tol = tolerances[k];
        EXPECT_TRUE(eager::compare(out[k], expected[k], tol.rtol, tol.atol).within_tolerance)
            << "output " << k << " threads " << threads << " nan " << with_nan << " at "
            << runtime::simd_level_name(level) << ": " << out[k].get_flat(0) << " vs "
            << expected[k].get_flat(0);
      }
      if (with_nan) {
        EXPECT_TRUE(std::isnan(out[1].get({})));
      }
    }
  }
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

TEST(Api, LocalizedBuffersMatchEager) {
  // exp (materialized) and the centered values are localized per row; the result must not
  // depend on it, at either thread count and with the vector tail (1003 columns).
  const ir::Graph g = ir::parse_graph(R"(
def f(x: f32[40, 1003]):
    m = amax(x, dim=[-1], keepdim=True)
    d = sub(x, m)
    e = exp(d)
    s = sum(e, dim=[-1], keepdim=True)
    y = div(e, s)
    c = mul(e, 2.0)
    t = amin(c, dim=[-1])
    return y, t
)");
  const Tensor input = eager::random_tensor(DType::Float32, {40, 1003}, 4);
  const auto expected = eager::run(g, {input});
  const std::vector<Tolerance> tolerances = output_tolerances(g);
  for (bool localize : {true, false}) {
    for (int threads : {1, 2}) {
      CompileOptions options;
      options.localize = localize;
      options.num_threads = threads;
      const CompiledGraph compiled = compile(g, options);
      bool any_local = false;
      for (const auto& p : compiled.compilation().schedule.buffers) any_local |= p.localized;
      EXPECT_EQ(any_local, localize);
      const auto out = compiled.run({input});
      for (size_t k = 0; k < out.size(); ++k) {
        const Tolerance& tol = tolerances[k];
        EXPECT_TRUE(eager::compare(out[k], expected[k], tol.rtol, tol.atol).within_tolerance)
            << "output " << k << " localize " << localize << " threads " << threads;
      }
    }
  }
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

TEST(Api, TransposedOperandUsesTheTiledForm) {
  const ir::Graph g = ir::parse_graph(R"(
def tr(x: f32[130, 75], y: f32[75, 130]):
    t = transpose(y, 0, 1)
    z = add(x, t)
    return z
)");
  const std::vector<Tensor> inputs = {eager::random_tensor(DType::Float32, {130, 75}, 1),
                                      eager::random_tensor(DType::Float32, {75, 130}, 2)};
  const auto expected = eager::run(g, inputs);
  for (int threads : {1, 2}) {
    CompileOptions options;
    options.num_threads = threads;
    // A 32 KiB L1 (the defaults): two float tiles and the output rows fit 48 x 48.
    options.caches = runtime::CacheSizes{};
    const CompiledGraph compiled = compile(g, options);
    const auto& forms = compiled.compilation().module.kernels.at(0).loops.at(0).nest_forms;
    if (compiled.compilation().module.options.simd != runtime::SimdLevel::Scalar) {
      EXPECT_EQ(forms.at(0).rfind("tiled(T=48)", 0), 0u) << forms.at(0);
    }
    // Exact: one add per element, whatever the loop order.
    EXPECT_TRUE(eager::compare(compiled.run(inputs)[0], expected[0], 0, 0).within_tolerance);
  }
}

}  // namespace
}  // namespace stax
