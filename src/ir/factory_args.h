// What a factory node produces (issue 7, point 3: full, zeros, ones, full_like, zeros_like,
// ones_like, fill, scalar_tensor, arange, iota): its dtype and sizes, and every element as a
// function of its row-major position, either one constant (the fills) or start + step * i in
// the arithmetic PyTorch computes ranges in (arange, iota). Type inference, the eager
// interpreter and lowering all read factory nodes through factory_args, so the three can never
// disagree on what an argument means. Arguments PyTorch refuses throw GraphError naming the op,
// the argument and PyTorch's reason.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace stax::ir {

// The type torch 2.13.0's CPU kernel computes start + step * i in before converting to the
// result dtype: int64 for integral results, double for f32 and f64, float for f16 and bf16.
enum class RangeArithmetic : uint8_t { Int64, Float64, Float32 };

struct FactoryArgs {
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  bool is_range = false;
  // A fill: every element is `fill` converted to `dtype` as PyTorch converts a Scalar (floats
  // truncate toward zero into integers, integers wrap, anything is != 0 as bool). Checked here:
  // the conversion is one PyTorch accepts.
  Scalar fill;
  // A range (1-D): element i is start + step * i computed in `arithmetic` (integers wrapping),
  // then converted to `dtype`. For Int64 arithmetic start and step are the integers below;
  // otherwise the doubles, already rounded to float for Float32 arithmetic.
  RangeArithmetic arithmetic = RangeArithmetic::Int64;
  int64_t int_start = 0;
  int64_t int_step = 0;
  double float_start = 0.0;
  double float_step = 0.0;
};

FactoryArgs factory_args(const Graph& graph, const Node& node);

}  // namespace stax::ir
