// What the tests of graphs over size symbols (issue 33) expect of a compiled graph: at given
// values of the symbols, its outputs against the eager interpreter's, and one program (one
// C++ compile) for every size.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "graph_passes/bind_sizes.h"
#include "ir/graph.h"

namespace stax::symbolic_testing {

// The graph's inputs at these sizes (random, one seed per call), its outputs from `compiled`
// at `threads`, against the eager interpreter within the tolerances of the graph bound to
// those sizes (its reductions' lengths and conditioning).
inline void expect_matches_eager(const ir::Graph& graph, const CompiledGraph& compiled,
                                 const std::map<std::string, int64_t>& values, int threads = 0) {
  const ir::Graph bound = graph_passes::bind_sizes(graph, values);
  std::vector<Tensor> inputs;
  uint64_t seed = 1;
  for (const ir::ValueRef in : bound.inputs()) {
    const ir::TensorType& type = bound.value(in).type;
    for (const auto& [name, v] : values) seed = seed * 31 + static_cast<uint64_t>(v);
    if (type.dtype == DType::Int64) {
      // Ids into the 10 rows of the cache graph's table.
      Tensor ids = Tensor::empty(DType::Int64, type.sizes);
      for (int64_t p = 0; p < ids.numel(); ++p) ids.set_flat(p, static_cast<double>((p * 7) % 10));
      inputs.push_back(ids);
    } else {
      inputs.push_back(eager::random_tensor(type.dtype, type.sizes, seed++));
    }
  }
  RunOptions run;
  run.num_threads = threads;
  const std::vector<Tensor> got = compiled.run(inputs, run);
  std::vector<Tensor> intermediate;
  const std::vector<Tensor> want = eager::run(graph, inputs, &intermediate);
  ASSERT_EQ(got.size(), want.size());
  const std::vector<Tolerance> tolerances = output_tolerances(bound, &intermediate);
  std::string where;
  for (const auto& [name, v] : values) where += " " + name + "=" + std::to_string(v);
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].sizes(), want[k].sizes()) << "output " << k << " at" << where;
    EXPECT_TRUE(
        eager::compare(got[k], want[k], tolerances[k].rtol, tolerances[k].atol).within_tolerance)
        << "output " << k << " at" << where << ", " << threads << " threads; rtol "
        << tolerances[k].rtol << " atol " << tolerances[k].atol << ", max abs "
        << eager::compare(got[k], want[k], 0, 0).max_abs;
  }
}

// Compiles `text` once, expects one program for every size, and runs it at each value of s0
// at 1 and 2 threads against eager.
inline void expect_one_program_matches_eager(const std::string& text,
                                             const std::vector<int64_t>& s0_values) {
  const ir::Graph graph = ir::parse_graph(text, "graph.stax");
  const CompiledGraph compiled = compile(graph);
  ASSERT_TRUE(compiled.takes_every_size()) << compiled.per_size_reason();
  for (int threads : {1, 2}) {
    for (int64_t s0 : s0_values) expect_matches_eager(graph, compiled, {{"s0", s0}}, threads);
  }
}

// The same over several symbols: one program, each map of values at 1 and 2 threads.
inline void expect_one_program_matches_eager(
    const std::string& text, const std::vector<std::map<std::string, int64_t>>& values) {
  const ir::Graph graph = ir::parse_graph(text, "graph.stax");
  const CompiledGraph compiled = compile(graph);
  ASSERT_TRUE(compiled.takes_every_size()) << compiled.per_size_reason();
  for (int threads : {1, 2}) {
    for (const auto& at : values) expect_matches_eager(graph, compiled, at, threads);
  }
}

}  // namespace stax::symbolic_testing
