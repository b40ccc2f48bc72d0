// The C++ API on graphs with size symbols (issue 33): one CompiledGraph runs inputs of any
// size the symbols' facts allow, each size matching the eager interpreter. Where every stage
// takes the symbols, one program (one C++ compile) serves every size, at 1 and 2 threads;
// where one refuses them (a matrix product, so far), a program per size, the programs kept
// bounded by CompileOptions::max_symbolic_sizes. A call whose sizes break the graph names the
// input, the dimension or the symbol.
#include <gtest/gtest.h>

#include <cstdlib>

#include "driver/compiler.h"
#include "driver/external_calls.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "graph_passes/bind_sizes.h"
#include "ir/graph.h"
#include "runtime/block_pool.h"
#include "symbolic_expectations.h"

namespace stax {
namespace {

using symbolic_testing::expect_matches_eager;
using symbolic_testing::expect_one_program_matches_eager;

const char* const kRows =
    "def rows(x: f32[s0, 24], b: f32[24]) where s0: [1, 4096] hint=40:\n"
    "    y = add(x, b)\n"
    "    m = amax(y, dim=[1], keepdim=True)\n"
    "    d = sub(y, m)\n"
    "    e = exp(d)\n"
    "    s = sum(e, dim=[1], keepdim=True)\n"
    "    p = div(e, s)\n"
    "    c = sum(p, dim=[0])\n"
    "    return p, c\n";

TEST(SymbolicCompiled, OneProgramRunsEverySize) {
  const ir::Graph graph = ir::parse_graph(kRows, "rows.stax");
  const CompiledGraph compiled = compile(graph);
  EXPECT_TRUE(compiled.is_symbolic());
  ASSERT_TRUE(compiled.takes_every_size()) << compiled.per_size_reason();
  // One wrapper reads s0 from x's rows and checks its facts; no size of x is a literal.
  EXPECT_NE(compiled.source().find("const int64_t s0 = inputs[0].sizes[0];"), std::string::npos);
  EXPECT_NE(compiled.source().find("s0 > 4096"), std::string::npos);
  // The hints first; 1 (a single row), a tail, a size large enough for the parallel path; at
  // 1 and 2 threads.
  for (int threads : {1, 2}) {
    for (int64_t rows : {40, 1, 37, 3001, 40}) {
      expect_matches_eager(graph, compiled, {{"s0", rows}}, threads);
    }
  }
  EXPECT_TRUE(compiled.compiled_sizes().empty());  // no program per size
}

// Pointwise, reductions along the static and the symbolic dim (means and variances divide by
// s0 at run time), views (a split of the channels, a transpose, the last row, all rows but the
// first), an arange to s0; in float32 and bfloat16.
constexpr const char* kViews =
    "def f(x: {t}[s0, 16], b: {t}[16]) where s0: [1, 4096] hint=64:\n"
    "    a = add(x, b)\n"
    "    m = mean(a, [1], True)\n"
    "    d = sub(a, m)\n"
    "    e = exp(d)\n"
    "    s = sum(e, [1], True)\n"
    "    p = div(e, s)\n"
    "    v = var(a, 1, correction=1)\n"
    "    vz = var(a, [0], correction=0)\n"
    "    cm = mean(a, [0])\n"
    "    h = view(p, [s0, 4, 4])\n"
    "    t = transpose(h, 0, 2)\n"
    "    last = select(p, 0, -1)\n"
    "    rest = narrow(a, 0, 1, s0 - 1)\n"
    "    big = amax(rest, [1])\n"
    "    i = arange(0, s0)\n"
    "    return p, v, vz, cm, t, last, rest, big, i\n";

TEST(SymbolicCompiled, ViewsAndReductionsOverOneProgramInFloat32AndBfloat16) {
  for (const char* dtype : {"f32", "bf16"}) {
    std::string text = kViews;
    for (size_t at; (at = text.find("{t}")) != std::string::npos;) text.replace(at, 3, dtype);
    const ir::Graph graph = ir::parse_graph(text, "views.stax");
    const CompiledGraph compiled = compile(graph);
    ASSERT_TRUE(compiled.takes_every_size()) << dtype << ": " << compiled.per_size_reason();
    for (int threads : {1, 2}) {
      for (int64_t rows : {2, 17, 64, 1000}) {
        expect_matches_eager(graph, compiled, {{"s0", rows}}, threads);
      }
    }
  }
}

// A decoder step's data movement over two symbols: the key cache of s0 tokens grows by one
// (s0 = 0 at the first step), the last position is read back, s1 ids index a static table.
constexpr const char* kCache =
    "def kv(cache: f32[2, s0, 4], new: f32[2, 1, 4], w: f32[10, 4], ids: i64[s1]) "
    "where s0: [0, 4096] hint=8, s1: [1, 64] hint=8:\n"
    "    c = cat([cache, new], 1)\n"
    "    e = embedding(w, ids)\n"
    "    s = index_select(w, 0, ids)\n"
    "    l = select(c, 1, -1)\n"
    "    return c, e, s, l\n";

TEST(SymbolicCompiled, AGrowingCacheFromEmptyRunsOneProgram) {
  const ir::Graph graph = ir::parse_graph(kCache, "kv.stax");
  const CompiledGraph compiled = compile(graph);
  ASSERT_TRUE(compiled.takes_every_size()) << compiled.per_size_reason();
  for (int threads : {1, 2}) {
    for (const auto& [s0, s1] :
         std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 3}, {8, 8}, {63, 64}, {3000, 5}}) {
      expect_matches_eager(graph, compiled, {{"s0", s0}, {"s1", s1}}, threads);
    }
  }
}

// Matrix products over symbolic rows and batches (issue 33, point 2): one program whose
// library calls build a plan per shape at the first call with it; an epilogue the library
// applies (tanh), a bias, a batched product whose batch is s1, a transposed weight, and a
// loop-nest product (int64, which no library runs); float32 and bfloat16.
constexpr const char* kProducts =
    "def p(x: {t}[s0, 24], w: {t}[24, 8], wt: {t}[8, 24], bias: {t}[8], q: {t}[s1, s0, 8], "
    "k: {t}[s1, 8, s0], i: i64[s0, 3], j: i64[3, 5]) "
    "where s0: [1, 4096] hint=40, s1: [1, 64] hint=2:\n"
    "    y = mm(x, w)\n"
    "    t = tanh(y)\n"
    "    wtt = transpose(wt, 0, 1)\n"
    "    z = addmm(bias, x, wtt)\n"
    "    s = bmm(q, k)\n"
    "    m = amax(s, [2], True)\n"
    "    e = sub(s, m)\n"
    "    n = mm(i, j)\n"
    "    return t, z, e, n\n";

TEST(SymbolicCompiled, MatrixProductsPlanPerShapeInOneProgram) {
  for (const char* dtype : {"f32", "bf16"}) {
    std::string text = kProducts;
    for (size_t at; (at = text.find("{t}")) != std::string::npos;) text.replace(at, 3, dtype);
    const ir::Graph graph = ir::parse_graph(text, "products.stax");
    const CompiledGraph compiled = compile(graph);
    ASSERT_TRUE(compiled.takes_every_size()) << dtype << ": " << compiled.per_size_reason();
    const driver::ExternalPlans& plans = compiled.external_plans();
    const size_t sites = compiled.compilation().module.externals.size();
    // mm, addmm and bmm through the library in float32 (int64 is a loop nest); in bfloat16
    // where the target's library takes it.
    if (std::string(dtype) == "f32") {
      EXPECT_EQ(sites, 3u);
    }
    for (size_t k = 0; k < sites; ++k) {
      EXPECT_EQ(plans.shapes_planned(k), 0u) << "no shape is planned before a call";
    }
    for (int threads : {1, 2}) {
      for (const auto& [s0, s1] :
           std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {40, 2}, {37, 3}, {513, 2}}) {
        expect_matches_eager(graph, compiled, {{"s0", s0}, {"s1", s1}}, threads);
      }
    }
    // Four shapes met; each site keeps a plan for each.
    for (size_t k = 0; k < sites; ++k) EXPECT_EQ(plans.shapes_planned(k), 4u) << dtype;
    // 40 and 37 rows are one size class (up to 64, s1 up to 2): a product's form (B in place,
    // packed, or the BLAS), decided at 40, is not measured again at 37.
    expect_matches_eager(graph, compiled, {{"s0", 37}, {"s1", 2}});
    for (size_t k = 0; k < sites; ++k) {
      const auto planned = plans.planned_shapes(k);
      ASSERT_FALSE(planned.empty());
      EXPECT_EQ(planned.back().first, (std::vector<int64_t>{37, 2}));
      if (planned.back().second.empty()) continue;  // not a matrix product
      const auto at_40 = std::find_if(planned.begin(), planned.end(), [](const auto& p) {
        return p.first == std::vector<int64_t>{40, 2};
      });
      ASSERT_NE(at_40, planned.end());
      EXPECT_EQ(at_40->second.find("as decided at"), std::string::npos) << at_40->second;
      EXPECT_NE(planned.back().second.find("as decided at"), std::string::npos)
          << dtype << " site " << k << ": " << planned.back().second;
    }
  }
}

// Attention over s0 keys and s1 queries, forward and backward (a training step's calls): one
// program, the runtime's attention planned per shape, its results in eager's layouts over the
// symbols ([B, L, H, E] gradients).
constexpr const char* kAttention =
    "def att(q: f32[2, 4, s1, 16], k: f32[2, 4, s0, 16], v: f32[2, 4, s0, 16], "
    "g: f32[2, 4, s1, 16]) where s0: [1, 2048] hint=32, s1: [1, 2048] hint=8:\n"
    "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, k, v)\n"
    "    dq, dk, dv = _scaled_dot_product_flash_attention_for_cpu_backward(g, q, k, v, o, l, 0.0, "
    "False)\n"
    "    return o, dq, dk, dv\n";

TEST(SymbolicCompiled, AttentionForwardAndBackwardPlanPerShapeInOneProgram) {
  const ir::Graph graph = ir::parse_graph(kAttention, "att.stax");
  const CompiledGraph compiled = compile(graph);
  ASSERT_TRUE(compiled.takes_every_size()) << compiled.per_size_reason();
  for (int threads : {1, 2}) {
    for (const auto& [s0, s1] :
         std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {32, 8}, {77, 5}, {300, 130}}) {
      expect_matches_eager(graph, compiled, {{"s0", s0}, {"s1", s1}}, threads);
    }
  }
}

// pow's lowering reads its exponent at the hints: the graph runs a program per size, the reason
// kept, the programs bounded.
constexpr const char* kPowOverASymbol =
    "def c(x: f32[s0, 3, 8]) where s0: [1, 64] hint=2:\n"
    "    y = pow(x, s0)\n"
    "    t = tanh(y)\n"
    "    return t\n";

TEST(SymbolicCompiled, WhereAStageRefusesTheSymbolsTheProgramsPerSizeAreBounded) {
  const ir::Graph graph = ir::parse_graph(kPowOverASymbol, "c.stax");
  CompileOptions options;
  options.max_symbolic_sizes = 2;
  const CompiledGraph compiled = compile(graph, options);
  EXPECT_FALSE(compiled.takes_every_size());
  EXPECT_NE(compiled.per_size_reason().find("lowering pow"), std::string::npos)
      << compiled.per_size_reason();
  for (int64_t n : {5, 6, 5}) expect_matches_eager(graph, compiled, {{"s0", n}});
  const std::vector<std::map<std::string, int64_t>> sizes = compiled.compiled_sizes();
  ASSERT_EQ(sizes.size(), 2u);  // the hints' and the last size's
  EXPECT_EQ(sizes[0].at("s0"), 2);
  EXPECT_EQ(sizes[1].at("s0"), 5);
  options.max_symbolic_sizes = 0;
  EXPECT_THROW(compile(graph, options), std::invalid_argument);
}

TEST(SymbolicCompiled, SizesThatBreakTheGraphAreNamed) {
  const ir::Graph graph = ir::parse_graph(kRows, "rows.stax");
  const CompiledGraph compiled = compile(graph);
  auto error = [&](std::vector<int64_t> x_sizes, std::vector<int64_t> b_sizes) -> std::string {
    try {
      compiled.run(
          {Tensor::empty(DType::Float32, x_sizes), Tensor::empty(DType::Float32, b_sizes)});
    } catch (const InputError& e) {
      return e.what();
    }
    return "<no error>";
  };
  EXPECT_EQ(error({37, 23}, {24}), "input 'x': dim 1 has size 23 but must be 24 (sizes [s0, 24])");
  EXPECT_EQ(error({5000, 24}, {24}), "size symbol s0 = 5000 breaks its facts (s0 in [1, 4096])");
  EXPECT_EQ(error({0, 24}, {24}), "size symbol s0 = 0 breaks its facts (s0 in [1, 4096])");
  EXPECT_EQ(error({37, 24}, {25}), "input 'b': dim 0 has size 25 but must be 24 (sizes [24])");
}

// An int over the symbols computed with, not a size: a decoder's causal mask compares the
// key positions arange(0, s0 + 1) with the query's, s0 + arange(0, 1) (GPT-2's mask over a
// cache of s0 tokens). The one program computes s0 in its kernels; at the hint's value baked
// in, the last key was masked at every other length.
constexpr const char* kCausalMask =
    "def mask(scores: f32[12, s0], new: f32[12, 1]) where s0: [2, 4096] hint=33:\n"
    "    all = cat([scores, new], 1)\n"
    "    first = arange(0, 1)\n"
    "    q = add(first, s0, alpha=1)\n"
    "    k = arange(0, s0 + 1)\n"
    "    qs = unsqueeze(q, 1)\n"
    "    allowed = le(k, qs)\n"
    "    zero = zeros([], dtype=\"f32\")\n"
    "    low = scalar_tensor(-3.0e38, dtype=\"f32\")\n"
    "    masked = where(allowed, zero, low)\n"
    "    x = add(all, masked, alpha=1)\n"
    "    m = amax(x, [-1], True)\n"
    "    y = sub(x, m, alpha=1)\n"
    "    r = mul(y, s0)\n"
    "    return y, r\n";

TEST(SymbolicCompiled, IntsOverTheSymbolsAreComputedAtEachCall) {
  expect_one_program_matches_eager(kCausalMask, {33, 34, 2, 47, 1000});
}

// Where a lowering would read such an int at the hints (full's fill value, pow's exponent,
// add's alpha), the graph is compiled per size instead, each size right.
TEST(SymbolicCompiled, IntsOverTheSymbolsALoweringReadsAtTheHintsAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"    f = full([s0, 1], s0, dtype=\"f32\")\n    y = add(x, f, alpha=1)\n", "full"},
      {"    y = pow(x, s0)\n", "pow"},
      {"    y = add(x, x, alpha=s0)\n", "add"},
  };
  for (const auto& [body, op] : cases) {
    const std::string text =
        "def g(x: f32[s0, 3]) where s0: [2, 64] hint=3:\n" + body + "    return y\n";
    const ir::Graph graph = ir::parse_graph(text, "g.stax");
    const CompiledGraph compiled = compile(graph);
    EXPECT_FALSE(compiled.takes_every_size()) << op;
    EXPECT_NE(compiled.per_size_reason().find("is a value over size symbols"), std::string::npos)
        << op << ": " << compiled.per_size_reason();
    for (int64_t s0 : {3, 2, 5}) expect_matches_eager(graph, compiled, {{"s0", s0}});
  }
}

// A scatter over the symbols (the embedding's gradient in a training step at any length):
// index_put accumulating s0 rows of gradients into a table, and scatter_add along a dim of s0
// positions; one program, each size matching eager (the runtime's scatter in eager's order).
TEST(SymbolicCompiled, ScattersOverTheSymbolsRunOneProgram) {
  expect_one_program_matches_eager(
      "def grads(g: f32[s0, 16], ids: i64[s0], h: f32[3, s0]) where s0: [1, 4096] hint=7:\n"
      "    table = zeros([10, 16], dtype=\"f32\")\n"
      "    r = index_put(table, [ids], g, True)\n"
      "    base = zeros([3, 10], dtype=\"f32\")\n"
      "    i2 = unsqueeze(ids, 0)\n"
      "    i3 = expand(i2, [3, s0])\n"
      "    c = scatter_add(base, 1, i3, h)\n"
      "    return r, c\n",
      {7, 1, 33, 2000});
}

// flip reverses a dim of any size (s - 1 - i); roll wraps its shifts by each call's size, in
// the index, not at the hint: shifts larger than some sizes (7 over s0 = 1, 2, 3), negative
// ones, two shifts of one dim that add up, and the roll of the flattened tensor (its numel a
// product of symbols).
TEST(SymbolicCompiled, FlipAndRollRunOneProgram) {
  expect_one_program_matches_eager(
      "def f(x: f32[s0, 5], y: f32[3, s1]) where s0: [1, 512] hint=40, s1: [1, 512] hint=9:\n"
      "    c = flip(x, [0, 1])\n"
      "    d = roll(y, [7], [1])\n"
      "    e = roll(x, [-3, 1, 9], [0, 1, 0])\n"
      "    g = roll(y, [5])\n"
      "    return c, d, e, g\n",
      {{{"s0", 40}, {"s1", 9}},
       {{"s0", 1}, {"s1", 1}},
       {{"s0", 2}, {"s1", 3}},
       {{"s0", 3}, {"s1", 7}},
       {{"s0", 300}, {"s1", 64}}});
}

// constant_pad_nd pads and cuts dims of symbolic size (its masks bound by s + pad); a cut that
// leaves a size below 0 for some values the facts allow is refused by name.
TEST(SymbolicCompiled, PadsRunOneProgram) {
  expect_one_program_matches_eager(
      "def f(x: f32[s0, 5], y: bf16[3, s1]) where s0: [1, 512] hint=40, s1: [3, 512] hint=9:\n"
      "    a = constant_pad_nd(x, [1, 2, 3, 0], 1.5)\n"
      "    b = constant_pad_nd(y, [-2, 1])\n"
      "    c = constant_pad_nd(x, [0, 0, -1, 4])\n"
      "    return a, b, c\n",
      {{{"s0", 40}, {"s1", 9}}, {{"s0", 1}, {"s1", 3}}, {{"s0", 300}, {"s1", 100}}});
  try {
    ir::parse_graph(
        "def f(x: f32[s0, 5]) where s0: [1, 512] hint=40:\n"
        "    a = constant_pad_nd(x, [0, 0, -2, 0])\n"
        "    return a\n",
        "cut.stax");
    ADD_FAILURE() << "a cut below size 0 was taken";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "the padded size s0 - 2 of dim 0 is at least 0 only for some values"),
              std::string::npos)
        << e.what();
  }
}

// The scans are the runtime's calls, bound to each call's sizes: a cumsum along and across the
// symbolic dim, a bfloat16 logcumsumexp, cummax's values and indices, an int64 cumsum, and a
// line long enough to be split across the threads (3000).
TEST(SymbolicCompiled, ScansRunOneProgram) {
  expect_one_program_matches_eager(
      "def f(x: f32[s0, 5], y: bf16[2, s0], z: i64[s0]) where s0: [1, 4096] hint=40:\n"
      "    a = cumsum(x, 0)\n"
      "    b = cumsum(x, 1)\n"
      "    c = logcumsumexp(y, 1)\n"
      "    m, i = cummax(y, 1)\n"
      "    p = cumsum(z, 0)\n"
      "    return a, b, c, m, i, p\n",
      {40, 1, 3, 3000});
}

// BERT's token types: a gather of s0 positions from a buffer of 512 (expanded over the batch),
// then an embedding; one program, each length matching eager.
TEST(SymbolicCompiled, AGatherOfSymbolicPositionsRunsOneProgram) {
  expect_one_program_matches_eager(
      "def tt(types: i64[1, 512], pos: i64[2, s0], table: f32[10, 16]) "
      "where s0: [1, 512] hint=7:\n"
      "    e = expand(types, [2, 512])\n"
      "    t = gather(e, 1, pos)\n"
      "    v = embedding(table, t)\n"
      "    return t, v\n",
      {7, 1, 64, 512});
}

// A scatter into a dim of s0 rows bounds its index values by s0 at each call, not at the hint:
// a row past the hint is written where s0 holds it, and a row past a smaller s0 is refused
// with eager's message naming that size (never written out of bounds).
TEST(SymbolicCompiled, AScattersIndexBoundIsTheSizeAtEachCall) {
  const ir::Graph graph = ir::parse_graph(
      "def g(x: f32[s0, 4], ids: i64[3], v: f32[3, 4]) where s0: [1, 4096] hint=8:\n"
      "    r = index_put(x, [ids], v, True)\n"
      "    return r\n",
      "g.stax");
  const CompiledGraph compiled = compile(graph);
  ASSERT_TRUE(compiled.takes_every_size()) << compiled.per_size_reason();
  auto ids = [](std::vector<int64_t> values) {
    Tensor t = Tensor::empty(DType::Int64, {static_cast<int64_t>(values.size())});
    for (size_t p = 0; p < values.size(); ++p) {
      t.set_flat(static_cast<int64_t>(p), static_cast<double>(values[p]));
    }
    return t;
  };
  const Tensor v = eager::random_tensor(DType::Float32, {3, 4}, 5);
  const std::vector<Tensor> inputs = {eager::random_tensor(DType::Float32, {20, 4}, 4),
                                      ids({0, 12, 19}), v};
  const std::vector<Tensor> got = compiled.run(inputs);
  const std::vector<Tensor> want = eager::run(graph, inputs);
  EXPECT_TRUE(eager::compare(got[0], want[0], 0, 0).within_tolerance);
  try {
    compiled.run({eager::random_tensor(DType::Float32, {4, 4}, 4), ids({0, 5, 1}), v});
    ADD_FAILURE() << "index 5 into 4 rows was taken";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("index 5 is out of bounds for dimension 0 with size 4"),
              std::string::npos)
        << e.what();
  }
}

// slice_scatter and select_scatter over the symbols (the backward of a split or a slice in a
// training step at any length): a static window of a [s0, 8] value, a window along s0 ending
// at s0 - 1, the last row by index -1; one program, each size matching eager.
TEST(SymbolicCompiled, WindowScattersOverTheSymbolsRunOneProgram) {
  expect_one_program_matches_eager(
      "def ss(x: f32[s0, 8], g: f32[s0, 3]) where s0: [2, 4096] hint=5:\n"
      "    z = zeros([s0, 8], dtype=\"f32\")\n"
      "    a = slice_scatter(z, g, 1, 2, 5, 1)\n"
      "    t = slice(x, 0, 1, 9223372036854775807, 1)\n"
      "    b = slice_scatter(x, t, 0, 0, s0 - 1, 1)\n"
      "    r0 = select(x, 0, 0)\n"
      "    c = select_scatter(x, r0, 0, -1)\n"
      "    e = slice(x, 0, 0, 9223372036854775807, 2)\n"
      "    f = slice_scatter(z, e, 0, 0, 9223372036854775807, 2)\n"
      "    return a, b, c, f\n",
      {5, 2, 33, 1001});
}

// The bridge's way in (issue 33): run_into with each input's sizes and strides, the output slots
// planned by layout_at at the symbols' values read by symbol_sources' rule. Each size gives
// run()'s numbers exactly (the same program), into the caller's memory or the pool's.
TEST(SymbolicCompiled, RunIntoTakesEachCallsLayouts) {
  const ir::Graph graph = ir::parse_graph(kRows, "rows.stax");
  const CompiledGraph compiled = compile(graph);
  ASSERT_TRUE(compiled.takes_every_size()) << compiled.per_size_reason();
  const std::map<std::string, ir::SymbolSource> sources = compiled.symbol_sources();
  ASSERT_EQ(sources.size(), 1u);
  EXPECT_EQ(sources.at("s0").input, 0u);
  EXPECT_EQ(sources.at("s0").dim, 0u);
  EXPECT_EQ(sources.at("s0").factor, 1);
  for (int64_t rows : {40, 7, 3001, 1}) {
    const Tensor x = eager::random_tensor(DType::Float32, {rows, 24}, 3);
    const Tensor b = eager::random_tensor(DType::Float32, {24}, 4);
    const std::vector<Tensor> want = compiled.run({x, b});
    const CallLayout layout = compiled.layout_at({{"s0", rows}});
    ASSERT_EQ(layout.inputs.size(), 2u);
    EXPECT_EQ(layout.inputs[0].sizes, (std::vector<int64_t>{rows, 24}));
    EXPECT_EQ(layout.inputs[0].strides, (std::vector<int64_t>{24, 1}));
    ASSERT_EQ(layout.outputs.size(), 2u);
    EXPECT_EQ(layout.outputs[0].sizes, (std::vector<int64_t>{rows, 24}));
    EXPECT_EQ(layout.slot_bytes.size(), 2u);
    EXPECT_GE(layout.slot_bytes[0], rows * 24 * 4);
    const std::vector<InputLayout> inputs = layout.inputs;
    std::vector<std::shared_ptr<Storage>> owned;
    std::vector<void*> slots;
    for (int64_t bytes : layout.slot_bytes) {
      void* p = std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64));
      owned.push_back(
          std::make_shared<Storage>(p, static_cast<size_t>(bytes), [](void* q) { std::free(q); }));
      slots.push_back(p);
    }
    compiled.run_into({x.data(), b.data()}, inputs, slots, {.num_threads = 2});
    std::vector<void*> pooled(2, nullptr);
    std::vector<int64_t> pooled_bytes;
    compiled.run_into_pooled({x.data(), b.data()}, inputs, pooled, {}, &pooled_bytes);
    EXPECT_EQ(pooled_bytes, layout.slot_bytes);
    for (size_t k = 0; k < 2; ++k) {
      const OutputLayout& o = layout.outputs[k];
      const Tensor into(owned[static_cast<size_t>(o.index)], o.dtype, o.sizes, o.strides, o.offset);
      EXPECT_TRUE(eager::compare(into, want[k], 0, 0).within_tolerance)
          << "output " << k << " at " << rows << " rows";
      auto block = std::make_shared<Storage>(
          pooled[static_cast<size_t>(o.index)], static_cast<size_t>(pooled_bytes[k]),
          [](void* q) { runtime::process_block_pool().give(q); });
      const Tensor from_pool(block, o.dtype, o.sizes, o.strides, o.offset);
      EXPECT_TRUE(eager::compare(from_pool, want[k], 0, 0).within_tolerance)
          << "pooled output " << k << " at " << rows << " rows";
    }
  }
  // A layout the program does not read (x's rows apart by 25 elements) is refused by name.
  const Tensor x = eager::random_tensor(DType::Float32, {7, 25}, 3);
  const Tensor b = eager::random_tensor(DType::Float32, {24}, 4);
  std::vector<void*> pooled(2, nullptr);
  try {
    compiled.run_into_pooled({x.data(), b.data()}, {{{7, 24}, {25, 1}}, {{24}, {1}}}, pooled);
    ADD_FAILURE() << "a stride of 25 was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' (argument 0): dimension 0: expected stride"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(pooled, (std::vector<void*>{nullptr, nullptr}));
  EXPECT_THROW(compiled.layout_at({{"s0", 5000}}), InputError);
  EXPECT_THROW(compiled.layout_at({}), InputError);
  EXPECT_THROW(compiled.run_into_pooled({x.data(), b.data()}, {{{7, 24}, {24, 1}}}, pooled),
               InputError);
}

// Sizes whose tensors int64 cannot count are refused at every call: the values remembered as
// checked are only those that passed.
TEST(SymbolicCompiled, ValuesWhoseExtentsOverflowAreRefusedEveryTime) {
  const ir::Graph graph =
      ir::parse_graph("def big(x: f32[s0, s1]):\n    y = exp(x)\n    return y\n", "big.stax");
  const CompiledGraph compiled = compile(graph);
  ASSERT_TRUE(compiled.takes_every_size()) << compiled.per_size_reason();
  const std::map<std::string, int64_t> huge = {{"s0", (int64_t{1} << 31) - 1},
                                               {"s1", (int64_t{1} << 31) - 1}};
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      compiled.layout_at(huge);
      ADD_FAILURE() << "attempt " << attempt << ": sizes past int64 were taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(compiled.layout_at({{"s0", 3}, {"s1", 5}}).slot_bytes.size(), 1u);
  EXPECT_EQ(compiled.layout_at({{"s0", 3}, {"s1", 5}}).outputs[0].sizes,
            (std::vector<int64_t>{3, 5}));
}

// A graph compiled per size takes each call's layouts too: the program of those sizes runs.
TEST(SymbolicCompiled, RunIntoOfAGraphCompiledPerSizeRunsThatSizesProgram) {
  const ir::Graph graph = ir::parse_graph(kPowOverASymbol, "c.stax");
  const CompiledGraph compiled = compile(graph);
  ASSERT_FALSE(compiled.takes_every_size());
  for (int64_t n : {2, 5}) {
    const CallLayout layout = compiled.layout_at({{"s0", n}});
    std::vector<Tensor> inputs;
    uint64_t seed = 9;
    for (const InputLayout& in : layout.inputs) {
      inputs.push_back(eager::random_tensor(DType::Float32, in.sizes, seed++));
    }
    const std::vector<Tensor> want = compiled.run(inputs);
    std::vector<const void*> data;
    for (const Tensor& t : inputs) data.push_back(t.data());
    std::vector<void*> pooled(layout.slot_bytes.size(), nullptr);
    std::vector<int64_t> bytes;
    compiled.run_into_pooled(data, layout.inputs, pooled, {}, &bytes);
    EXPECT_EQ(bytes, layout.slot_bytes);
    const OutputLayout& o = layout.outputs[0];
    auto block = std::make_shared<Storage>(pooled[static_cast<size_t>(o.index)],
                                           static_cast<size_t>(bytes[0]),
                                           [](void* q) { runtime::process_block_pool().give(q); });
    EXPECT_TRUE(eager::compare(Tensor(block, o.dtype, o.sizes, o.strides, o.offset), want[0], 0, 0)
                    .within_tolerance)
        << n;
  }
}

}  // namespace
}  // namespace stax
