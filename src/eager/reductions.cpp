// Reductions of the eager interpreter: sum, mean, amax, amin over a set of dims (keepdim or
// not). Every input element is visited once and folded into the accumulator of its output
// element. The results are PyTorch's (CPU); interpreter.h states the semantics per dtype.
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "eager/ops.h"
#include "ir/op_schema.h"

namespace stax::eager::detail {

Tensor eval_reduce(const Env& env, const ir::Node& node, ReduceOp op) {
  const Tensor& in = env.tensor(node, 0);
  const ir::TensorType& type = env.result_type(node);
  // sum/mean: (self, dim?, keepdim, dtype?); amax/amin: (self, dim[], keepdim).
  const std::optional<std::vector<int64_t>> dim_arg = ir::int_list_arg(node, 1);
  const bool keepdim = ir::bool_arg(node, 2);
  const std::vector<int64_t> dims = ir::reduction_dims(dim_arg, in.dim(), node.op);

  std::vector<bool> reduced(in.dim(), false);
  int64_t count = 1;  // input elements folded into each output element
  for (int64_t d : dims) {
    reduced.at(static_cast<size_t>(d)) = true;
    count *= in.sizes()[static_cast<size_t>(d)];
  }
  std::vector<int64_t> out_sizes;
  for (size_t i = 0; i < in.dim(); ++i) {
    if (!reduced[i]) {
      out_sizes.push_back(in.sizes()[i]);
    } else if (keepdim) {
      out_sizes.push_back(1);
    }
  }
  if (out_sizes != type.sizes) {
    throw std::logic_error("eager: " + node.op + ": computed result sizes " +
                           shape_to_string(out_sizes) + " differ from the inferred " +
                           shape_to_string(type.sizes));
  }

  Tensor out = Tensor::empty(type.dtype, type.sizes);
  const int64_t out_numel = out.numel();
  if ((op == ReduceOp::Amax || op == ReduceOp::Amin) && count == 0 && out_numel > 0) {
    throw std::runtime_error("eager: " + node.op +
                             ": cannot reduce over a dimension of size 0 (no identity)");
  }

  // Row-major position of the output element an input element (by index) folds into.
  const std::vector<int64_t> out_strides = ir::contiguous_strides(out_sizes);
  auto out_position = [&](const std::vector<int64_t>& index) {
    int64_t position = 0;
    size_t o = 0;
    for (size_t i = 0; i < index.size(); ++i) {
      if (reduced[i]) {
        if (keepdim) ++o;  // index 0 along the kept size-1 dim
        continue;
      }
      position += index[i] * out_strides[o++];
    }
    return position;
  };

  const bool integer = is_integer_like(type.dtype) && op != ReduceOp::Mean;
  const bool is_max = op == ReduceOp::Amax;
  std::vector<double> acc(static_cast<size_t>(out_numel), 0.0);
  std::vector<int64_t> acc_int(static_cast<size_t>(out_numel), 0);
  std::vector<bool> seen(static_cast<size_t>(out_numel), false);
  const int64_t in_numel = in.numel();
  for (int64_t p = 0; p < in_numel; ++p) {
    const std::vector<int64_t> index = unravel_index(p, in.sizes());
    const size_t o = static_cast<size_t>(out_position(index));
    if (op == ReduceOp::Sum || op == ReduceOp::Mean) {
      if (integer) {
        acc_int[o] = static_cast<int64_t>(static_cast<uint64_t>(acc_int[o]) +
                                          static_cast<uint64_t>(load_int(in, index)));
      } else {
        // The input is converted to the result dtype first (sum(x, dtype=...) semantics).
        acc[o] += round_to(type.dtype, in.get(index));
      }
      continue;
    }
    // amax / amin
    if (integer) {
      const int64_t v = load_int(in, index);
      if (!seen[o] || (is_max ? v > acc_int[o] : v < acc_int[o])) acc_int[o] = v;
    } else {
      const double v = in.get(index);
      if (!seen[o] || std::isnan(v)) {
        acc[o] = v;
      } else if (!std::isnan(acc[o]) && (is_max ? v > acc[o] : v < acc[o])) {
        acc[o] = v;
      }
    }
    seen[o] = true;
  }

  for (int64_t p = 0; p < out_numel; ++p) {
    const size_t o = static_cast<size_t>(p);
    const std::vector<int64_t> index = unravel_index(p, type.sizes);
    if (integer) {
      store_int(out, index, acc_int[o]);
    } else if (op == ReduceOp::Mean) {
      // PyTorch's CPU mean is sum(...).div_(count): the sum rounded to the dtype (so an
      // overflowing sum is infinite), divided in the dtype's opmath type. 0 / 0 = NaN (empty).
      const double sum = round_to(type.dtype, acc[o]);
      const double divisor = round_to_opmath(type.dtype, static_cast<double>(count));
      out.set(index, round_to(type.dtype, round_to_opmath(type.dtype, sum / divisor)));
    } else {
      out.set(index, round_to(type.dtype, acc[o]));
    }
  }
  return out;
}

}  // namespace stax::eager::detail
