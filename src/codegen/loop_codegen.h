// Loop nests of one fused node: shared outer loops, then each nest's pointwise loops,
// accumulators, reduction loops and the innermost loop in its chosen form — vectorized with a
// masked tail, or scalar (Section 8.3) — with the OpenMP work-sharing of Algorithm 8.1.
#pragma once

#include <set>
#include <string>

#include "codegen/cpp_codegen.h"

namespace stax::codegen {

struct LoopCode {
  std::string code;      // statements to place inside the kernel function (and its parallel region)
  std::string preamble;  // declarations before the parallel region (shared by its threads)
  LoopSummary summary;
};

LoopCode generate_loop(const scheduler::Schedule& schedule, const scheduler::FusedNode& fused,
                       const CodegenOptions& options, const std::set<std::string>& input_names);

}  // namespace stax::codegen
