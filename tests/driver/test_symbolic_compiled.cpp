// The C++ API on graphs with size symbols (issue 33): one CompiledGraph runs inputs of any
// size the symbols' facts allow, each size matching the eager interpreter; a call whose sizes
// break the graph names the input, the dimension or the symbol; the programs kept are bounded
// by CompileOptions::max_symbolic_sizes.
#include <gtest/gtest.h>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "graph_passes/bind_sizes.h"
#include "ir/graph.h"

namespace stax {
namespace {

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

void expect_matches_eager(const ir::Graph& graph, const CompiledGraph& compiled, int64_t rows) {
  const Tensor x = eager::random_tensor(DType::Float32, {rows, 24}, static_cast<uint64_t>(rows));
  const Tensor b = eager::random_tensor(DType::Float32, {24}, 7);
  const std::vector<Tensor> got = compiled.run({x, b});
  std::vector<Tensor> values;
  const std::vector<Tensor> want = eager::run(graph, {x, b}, &values);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].sizes(), (std::vector<int64_t>{rows, 24}));
  EXPECT_EQ(got[1].sizes(), (std::vector<int64_t>{24}));
  // The tolerances of the graph of these sizes (its reductions' lengths and conditioning).
  const ir::Graph bound = graph_passes::bind_sizes(graph, {{"s0", rows}});
  const std::vector<Tolerance> tolerances = output_tolerances(bound, &values);
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_TRUE(
        eager::compare(got[k], want[k], tolerances[k].rtol, tolerances[k].atol).within_tolerance)
        << "output " << k << " at " << rows << " rows";
  }
}

TEST(SymbolicCompiled, OneCompiledGraphRunsEverySize) {
  const ir::Graph graph = ir::parse_graph(kRows, "rows.stax");
  const CompiledGraph compiled = compile(graph);
  EXPECT_TRUE(compiled.is_symbolic());
  // The hints' program first; 1 (a single row), a tail, a size large enough for the parallel
  // path.
  for (int64_t rows : {40, 1, 37, 3001, 40}) expect_matches_eager(graph, compiled, rows);
  const std::vector<std::map<std::string, int64_t>> sizes = compiled.compiled_sizes();
  ASSERT_EQ(sizes.size(), 4u);
  EXPECT_EQ(sizes[0].at("s0"), 40);
  EXPECT_EQ(sizes[3].at("s0"), 3001);
}

TEST(SymbolicCompiled, TheProgramsKeptAreBounded) {
  const ir::Graph graph = ir::parse_graph(kRows, "rows.stax");
  CompileOptions options;
  options.max_symbolic_sizes = 2;
  const CompiledGraph compiled = compile(graph, options);
  for (int64_t rows : {5, 6, 5}) expect_matches_eager(graph, compiled, rows);
  const std::vector<std::map<std::string, int64_t>> sizes = compiled.compiled_sizes();
  ASSERT_EQ(sizes.size(), 2u);  // the hints' and the last size's
  EXPECT_EQ(sizes[0].at("s0"), 40);
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

}  // namespace
}  // namespace stax
