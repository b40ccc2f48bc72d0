// Definition 7.2 by element count: the GPU backend's reading of compatibility (Section 7.1's
// last paragraph, Example 7.2). A GPU kernel maps its program instances over a flat range of
// outputs and each reduction over a flat range of reduced elements, so two nodes share a
// kernel when their element counts agree, whatever their per-dimension ranges; the CPU keeps
// the per-dimension ranges and fuses by outer loops (fusion_rules.cpp). Nothing else differs:
// access equality (Proposition 7.2), cycles, limits and the peak are checked as on the CPU.
#pragma once

#include <string>
#include <vector>

#include "index/expr.h"

namespace stax::scheduler {

// The product of `ranges` (1 for none).
index::Expr element_count(const std::vector<index::Expr>& ranges);

// Definition 7.2, condition 3's split: whether the row-major range `ranges` (N = n·r elements)
// splits into an outer group of n elements and an inner group of r, cutting at most one range
// in two (a range d cut as a × d/a, a dividing d). With size symbols a cut must fall between
// ranges whose prefix product is n as an expression.
bool splits_as(const std::vector<index::Expr>& ranges, const index::Expr& n, const index::Expr& r);

// The iteration group (pointwise ranges, reduction ranges; Definition 7.2's (n, r) are their
// element counts) of each side, and the loop nest they would share.
struct GpuCompatibility {
  bool compatible = false;
  // SAME_VARS_REDUCE (condition 1), COMPATIBLE_RANGES_NO_REDUCTION (2), COMPATIBLE_REDUCTION
  // (3), with the element counts that decided it; or why not.
  std::string reason;
  std::vector<index::Expr> sizes;            // the shared nest's pointwise ranges
  std::vector<index::Expr> reduction_sizes;  // and reduction ranges
  // Condition 3 with N = n: the pointwise node runs once per output, outside the reduction
  // loop (the scheduler makes the pair a node of rows).
  bool once_per_output = false;
};
GpuCompatibility gpu_compatibility(const std::vector<index::Expr>& pointwise_a,
                                   const std::vector<index::Expr>& reduction_a,
                                   const std::vector<index::Expr>& pointwise_b,
                                   const std::vector<index::Expr>& reduction_b);

}  // namespace stax::scheduler
