// The comparison the compiled-vs-oracle tests of the library-backed ops share: every output of
// `g` has eager's dtype and sizes and lies within the tolerance Stax derives for it
// (driver/tolerance.h), failures naming the output, the configuration and the difference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// Every output within the tolerance Stax derives for it (driver/tolerance.h), its allowance
// applied to the largest element of the output as well as to each element: attention's sums
// mix signs (the values, and dS = P (dP - D) in the backward), so an element's rounding
// error is relative to the terms it sums, whose size the largest result bounds, not to the
// element itself, which cancellation can bring near zero.
inline void expect_attention_outputs_match(const ir::Graph& g, const std::vector<Tensor>& actual,
                                           const std::vector<Tensor>& expected,
                                           const std::string& where) {
  const std::vector<Tolerance> tolerances = output_tolerances(g);
  ASSERT_EQ(actual.size(), expected.size()) << where;
  for (size_t k = 0; k < actual.size(); ++k) {
    const std::string name = g.value(g.outputs()[k]).name;
    ASSERT_EQ(actual[k].sizes(), expected[k].sizes()) << where << ", " << name;
    EXPECT_EQ(actual[k].dtype(), expected[k].dtype()) << where << ", " << name;
    double largest = 0;
    for (int64_t p = 0; p < expected[k].numel(); ++p) {
      largest = std::max(largest, std::abs(expected[k].get_flat(p)));
    }
    const double atol = std::max(tolerances[k].atol, tolerances[k].rtol * largest);
    const eager::Difference d = eager::compare(actual[k], expected[k], tolerances[k].rtol, atol);
    EXPECT_TRUE(d.within_tolerance) << where << ", output " << name << ": max abs " << d.max_abs
                                    << " (rtol " << tolerances[k].rtol << ", atol " << atol << ")";
  }
}

}  // namespace stax
