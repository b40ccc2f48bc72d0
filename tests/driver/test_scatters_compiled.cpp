// Compiled scatters (index_put, index_add, scatter, scatter_add: external nodes that Stax's
// runtime runs, external/scatter.h) against PyTorch: every case of scatter_torch_cases.inc
// (torch 2.13.0's CPU results over every dtype, repeated and negative indices, None entries,
// broadcast values, int32 indices, transposed operands, empty index tensors, index_add's
// three paths), compiled in batches and run with 1 and 2 threads, must equal torch's results
// bit for bit: the runtime visits each element's values in eager's order with eager's
// roundings. Then sizes that split over threads (free dims chunked, several chunks per
// thread) against the eager oracle, a zeros destination that is never stored, operands read
// through their strides, and index values out of range raising eager's class and message.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "eager/interpreter.h"
#include "eager_test_util.h"
#include "ir/graph.h"
#include "ir/index_rule.h"
#include "scatter_torch_cases.h"

namespace stax {
namespace {

using eager::testing::ScatterCase;

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// Cases [begin, end) as one program: case k's inputs and result get the suffix _k.
struct Batch {
  std::string program;
  std::vector<Tensor> inputs;
  std::vector<const ScatterCase*> cases;
};

Batch batch(const std::vector<ScatterCase>& cases, size_t begin, size_t end) {
  Batch b;
  std::string params, body, outputs;
  for (size_t k = begin; k < end; ++k) {
    const ScatterCase& c = cases[k];
    const std::string suffix = "_" + std::to_string(k);
    std::string statement = c.body;
    for (const eager::testing::ScatterInput& in : c.inputs) {
      eager::testing::ScatterInput renamed = in;
      renamed.name += suffix;
      params += (params.empty() ? "" : ", ") + renamed.declaration();
      statement = std::regex_replace(statement, std::regex("\\b" + in.name + "\\b"), renamed.name);
    }
    statement = std::regex_replace(statement, std::regex("^y\\b"), "y" + suffix);
    body += "    " + statement + "\n";
    outputs += (outputs.empty() ? "" : ", ") + ("y" + suffix);
    for (Tensor& t : eager::testing::make_scatter_inputs(c)) b.inputs.push_back(std::move(t));
    b.cases.push_back(&c);
  }
  b.program = "def f(" + params + "):\n" + body + "    return " + outputs + "\n";
  return b;
}

TEST(CompiledScatter, TorchCasesBitForBit) {
  const std::vector<ScatterCase>& cases = eager::testing::scatter_cases();
  ASSERT_GE(cases.size(), 200u);
  constexpr size_t kPerProgram = 48;
  for (size_t begin = 0; begin < cases.size(); begin += kPerProgram) {
    const Batch b = batch(cases, begin, std::min(cases.size(), begin + kPerProgram));
    const ir::Graph g = ir::parse_graph(b.program, "scatters.stax");
    CompileOptions o;
    o.num_threads = 2;
    const CompiledGraph compiled = compile(g, o);
    EXPECT_GE(compiled.compilation().module.externals.size(), b.cases.size());
    for (int threads : {1, 2}) {
      RunOptions r;
      r.num_threads = threads;
      const std::vector<Tensor> actual = compiled.run(b.inputs, r);
      ASSERT_EQ(actual.size(), b.cases.size());
      for (size_t k = 0; k < b.cases.size(); ++k) {
        SCOPED_TRACE(b.cases[k]->name + " (" + std::to_string(threads) +
                     " threads): " + b.cases[k]->body);
        eager::testing::expect_torch_result(*b.cases[k], actual[k]);
      }
    }
  }
}

// Sizes whose free dims split into several chunks per thread (and an index constant along
// the rows, read once per row), compared with the eager oracle bit for bit.
TEST(CompiledScatter, ParallelSplitsMatchTheOracle) {
  const std::string program =
      "def f(g: f32[700, 96], ids: i64[700], w: bf16[300, 130], s: bf16[900, 130],\n"
      "      j: i64[900], x: f64[64, 257], k: i64[64, 300], src: f64[64, 300]):\n"
      "    z = zeros([500, 96])\n"
      "    e = index_put(z, [ids], g, True)\n"
      "    a = index_add(w, 0, j, s)\n"
      "    b = index_add(w, 0, j, s, alpha=0.5)\n"
      "    c = scatter_add(x, 1, k, src)\n"
      "    d = scatter(x, 1, k, src)\n"
      "    t = transpose(g, 0, 1)\n"
      "    zt = transpose(z, 0, 1)\n"
      "    u = index_put(zt, [None, ids], t)\n"
      "    return e, a, b, c, d, u\n";
  const ir::Graph graph = ir::parse_graph(program, "parallel.stax");
  std::vector<Tensor> inputs;
  uint64_t seed = 3;
  for (const ir::ValueRef ref : graph.inputs()) {
    const ir::Value& v = graph.value(ref);
    Tensor t = Tensor::empty(v.type.dtype, v.type.sizes);
    const int64_t bound = v.name == "ids" ? 500 : v.name == "j" ? 300 : 257;
    for (int64_t p = 0; p < t.numel(); ++p) {
      const uint64_t h = eager::testing::convolution_parsing::splitmix64(seed * 7919 + p);
      if (v.type.dtype == DType::Int64) {
        // Negative where index_put wraps them.
        const int64_t value = static_cast<int64_t>(h % static_cast<uint64_t>(bound));
        eager::detail::store_int(t, unravel_index(p, t.sizes()),
                                 v.name == "ids" && p % 3 == 0 ? value - bound : value);
      } else {
        t.set_flat(p, static_cast<double>(static_cast<int64_t>(h % 2001) - 1000) / 128.0);
      }
    }
    inputs.push_back(std::move(t));
    ++seed;
  }
  const std::vector<Tensor> expected = eager::run(graph, inputs);
  CompileOptions o;
  o.num_threads = 2;
  const CompiledGraph compiled = compile(graph, o);
  // e's zeros are never stored: no loop computes them, the runtime zeroes its output (u's
  // destination, a view of them, is stored).
  int zeroed = 0;
  for (const auto& site : compiled.compilation().module.externals) {
    if (site.call->op == "index_put" && !site.call->scatter->self) ++zeroed;
  }
  EXPECT_EQ(zeroed, 1);
  for (int threads : {1, 2, 3}) {
    RunOptions r;
    r.num_threads = threads;
    const std::vector<Tensor> actual = compiled.run(inputs, r);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t k = 0; k < actual.size(); ++k) {
      ASSERT_EQ(actual[k].sizes(), expected[k].sizes());
      for (int64_t p = 0; p < actual[k].numel(); ++p) {
        ASSERT_TRUE(same(actual[k].get_flat(p), expected[k].get_flat(p)))
            << "output " << k << " at " << p << " with " << threads << " threads";
      }
    }
  }
}

// The first bad index value in row-major order, with eager's exception class and message.
TEST(CompiledScatter, OutOfRangeIndicesRaiseAsEager) {
  struct Case {
    std::string expr;
    bool index_error;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"index_put(x, [i], v, True)", true,
       "index_put: index 7 is out of bounds for dimension 0 with size 4"},
      {"index_add(x, 0, i, v)", false,
       "index_add: index 7 is out of bounds for dimension 0 with size 4"},
      {"index_add(x, 0, i, v, alpha=2)", true, "index_add: index out of range in self"},
      {"scatter_add(x, 0, k, v)", false,
       "scatter_add: index 7 is out of bounds for dimension 0 with size 4"},
      // Two tensor indices: position by position, the indices in order at each.
      // A.index_put.default(zeros(4, 3), [tensor([0, 1, 7, 2, -9, 3]), tensor([2, 1, 0, 0,
      // 0, 0])], zeros(6), True): IndexError: index 7 is out of bounds for dimension 0 with
      // size 4; with the indices swapped ([.., 0 -> dim 0], [.., 7 -> dim 1 of size 3]):
      // IndexError: index 7 is out of bounds for dimension 1 with size 3.
      {"index_put(x, [i, j], w, True)", true,
       "index_put: index 7 is out of bounds for dimension 0 with size 4"},
      {"index_put(x, [j, i], w)", true,
       "index_put: index 7 is out of bounds for dimension 1 with size 3"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expr);
    const std::string program =
        "def f(x: f32[4, 3], i: i64[6], v: f32[6, 3], j: i64[6], w: f32[6]):\n"
        "    u = unsqueeze(i, 1)\n    k = expand(u, [6, 3])\n    y = " +
        c.expr + "\n    return y\n";
    const ir::Graph g = ir::parse_graph(program, "bad.stax");
    Tensor x = Tensor::empty(DType::Float32, {4, 3});
    Tensor v = Tensor::empty(DType::Float32, {6, 3});
    Tensor i = eager::testing::make(DType::Int64, {6}, {0, 1, 7, 2, -9, 3});
    Tensor j = eager::testing::make(DType::Int64, {6}, {2, 1, 0, 0, 0, 0});
    Tensor w = Tensor::empty(DType::Float32, {6});
    const CompiledGraph compiled = compile(g, CompileOptions{});
    for (int threads : {1, 2}) {
      RunOptions r;
      r.num_threads = threads;
      try {
        compiled.run({x, i, v, j, w}, r);
        ADD_FAILURE() << "no error";
      } catch (const ir::IndexError& e) {
        EXPECT_TRUE(c.index_error) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      } catch (const std::out_of_range& e) {
        EXPECT_FALSE(c.index_error) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace stax
