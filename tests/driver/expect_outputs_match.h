// The comparison the compiled-vs-oracle tests of the library-backed ops share: every output of
// `g` has eager's dtype and sizes and lies within the tolerance Stax derives for it
// (driver/tolerance.h), failures naming the output, the configuration and the difference.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/tolerance.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"

namespace stax {

inline void expect_outputs_match(const ir::Graph& g, const std::vector<Tensor>& actual,
                                 const std::vector<Tensor>& expected, const std::string& where) {
  const std::vector<Tolerance> tolerances = output_tolerances(g);
  ASSERT_EQ(actual.size(), expected.size()) << where;
  for (size_t k = 0; k < actual.size(); ++k) {
    const std::string name = g.value(g.outputs()[k]).name;
    EXPECT_EQ(actual[k].dtype(), expected[k].dtype()) << where << ", " << name;
    ASSERT_EQ(actual[k].sizes(), expected[k].sizes()) << where << ", " << name;
    const eager::Difference d =
        eager::compare(actual[k], expected[k], tolerances[k].rtol, tolerances[k].atol);
    EXPECT_TRUE(d.within_tolerance)
        << where << ", output " << name << ": max abs " << d.max_abs << ", max rel " << d.max_rel
        << " (rtol " << tolerances[k].rtol << ", atol " << tolerances[k].atol << ")";
  }
}

}  // namespace stax
