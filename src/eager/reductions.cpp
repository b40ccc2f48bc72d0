// Reductions of the eager interpreter: sum, prod, mean, amax, amin, argmax, argmin, any, all,
// var, std, var_mean and logsumexp over a set of dims (keepdim or not). Every input element is
// visited in row-major order and folded into the accumulator of its output element (logsumexp
// visits twice: the maximum first). The results are PyTorch's (CPU); interpreter.h states the
// semantics per op and dtype.
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>

#include "eager/ops.h"
#include "ir/op_schema.h"

namespace stax::eager::detail {

namespace {

// Which input dims a node reduces and where each input element lands.
class ReductionShape {
 public:
  ReductionShape(const Tensor& in, const ir::Node& node, const ir::TensorType& type,
                 size_t keepdim_position)
      : in_(in), reduced_(in.dim(), false) {
    const std::vector<int64_t> dims =
        ir::reduction_dims(ir::int_list_arg(node, 1), in.dim(), node.op);
    keepdim_ = ir::bool_arg(node, keepdim_position);
    for (int64_t d : dims) {
      reduced_.at(static_cast<size_t>(d)) = true;
      count_ *= in.sizes()[static_cast<size_t>(d)];
    }
    std::vector<int64_t> out_sizes;
    for (size_t i = 0; i < in.dim(); ++i) {
      if (!reduced_[i]) {
        out_sizes.push_back(in.sizes()[i]);
      } else if (keepdim_) {
        out_sizes.push_back(1);
      }
    }
    if (out_sizes != type.sizes) {
      throw std::logic_error("eager: " + node.op + ": computed result sizes " +
                             shape_to_string(out_sizes) + " differ from the inferred " +
                             shape_to_string(type.sizes));
    }
    out_strides_ = ir::contiguous_strides(out_sizes);
  }

  // Input elements folded into each output element.
  int64_t count() const { return count_; }

  // Calls visit(output position, position among the reduced elements (row-major over the
  // reduced dims), input index) for every input element, in row-major order.
  void for_each(
      const std::function<void(size_t, int64_t, const std::vector<int64_t>&)>& visit) const {
    const int64_t numel = in_.numel();
    for (int64_t p = 0; p < numel; ++p) {
      const std::vector<int64_t> index = unravel_index(p, in_.sizes());
      int64_t out_position = 0;
      int64_t reduced_position = 0;
      size_t o = 0;
      for (size_t i = 0; i < index.size(); ++i) {
        if (reduced_[i]) {
          reduced_position = reduced_position * in_.sizes()[i] + index[i];
          if (keepdim_) ++o;  // index 0 along the kept size-1 dim
          continue;
        }
        out_position += index[i] * out_strides_[o++];
      }
      visit(static_cast<size_t>(out_position), reduced_position, index);
    }
  }

 private:
  const Tensor& in_;
  std::vector<bool> reduced_;
  bool keepdim_ = false;
  int64_t count_ = 1;
  std::vector<int64_t> out_strides_;
};

bool is_arg_op(ReduceOp op) {
  return op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
}
bool seeks_max(ReduceOp op) {
  return op == ReduceOp::Amax || op == ReduceOp::ArgMax;
}

// Whether v replaces the running extreme acc: NaN beats everything and the first NaN stays;
// otherwise only a strictly greater (smaller) value replaces, so ties keep the first.
bool replaces(double v, double acc, bool max) {
  if (std::isnan(acc)) return false;
  if (std::isnan(v)) return true;
  return max ? v > acc : v < acc;
}

// Input elements as the reduction computes with them: converted to the result dtype first
// (sum(x, dtype=...) semantics) for sum, prod and mean, as they are otherwise.
struct ElementReader {
  const Tensor& in;
  DType convert_to;
  bool convert;
  double floating(const std::vector<int64_t>& index) const {
    const double v = in.get(index);
    return convert ? round_to(convert_to, v) : v;
  }
};

Tensor reduce_extremum(const Tensor& in, const ReductionShape& shape, const ir::TensorType& type,
                       ReduceOp op, const std::string& name) {
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  const size_t n = static_cast<size_t>(out.numel());
  if (shape.count() == 0 && n > 0) {
    throw std::runtime_error("eager: " + name +
                             ": cannot reduce over a dimension of size 0 (no identity)");
  }
  const bool integer = is_integer_like(in.dtype());
  const bool max = seeks_max(op);
  std::vector<double> acc(n, 0.0);
  std::vector<int64_t> acc_int(n, 0);
  std::vector<int64_t> where(n, 0);
  std::vector<bool> seen(n, false);
  shape.for_each([&](size_t o, int64_t r, const std::vector<int64_t>& index) {
    if (integer) {
      const int64_t v = load_int(in, index);
      if (!seen[o] || (max ? v > acc_int[o] : v < acc_int[o])) {
        acc_int[o] = v;
        where[o] = r;
      }
    } else {
      const double v = in.get(index);
      if (!seen[o] || replaces(v, acc[o], max)) {
        acc[o] = v;
        where[o] = r;
      }
    }
    seen[o] = true;
  });
  for (size_t o = 0; o < n; ++o) {
    const std::vector<int64_t> index = unravel_index(static_cast<int64_t>(o), type.sizes);
    if (is_arg_op(op)) {
      store_int(out, index, where[o]);
    } else if (integer) {
      store_int(out, index, acc_int[o]);
    } else {
      out.set(index, acc[o]);
    }
  }
  return out;
}

Tensor reduce_any_all(const Tensor& in, const ReductionShape& shape, const ir::TensorType& type,
                      ReduceOp op) {
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  const bool is_all = op == ReduceOp::All;
  // The identities: any of nothing is false, all of nothing is true.
  std::vector<bool> acc(static_cast<size_t>(out.numel()), is_all);
  const bool integer = is_integer_like(in.dtype());
  shape.for_each([&](size_t o, int64_t, const std::vector<int64_t>& index) {
    // Nonzero is true; NaN is nonzero.
    const bool truth = integer ? load_int(in, index) != 0 : in.get(index) != 0.0;
    acc[o] = is_all ? acc[o] && truth : acc[o] || truth;
  });
  for (size_t o = 0; o < acc.size(); ++o) {
    store_int(out, unravel_index(static_cast<int64_t>(o), type.sizes), acc[o] ? 1 : 0);
  }
  return out;
}

// sum, prod, mean.
Tensor reduce_sum_prod_mean(const Tensor& in, const ReductionShape& shape,
                            const ir::TensorType& type, ReduceOp op) {
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  const size_t n = static_cast<size_t>(out.numel());
  const bool integer = is_integer_like(type.dtype);
  const bool is_prod = op == ReduceOp::Prod;
  const ElementReader read{in, type.dtype, in.dtype() != type.dtype};
  std::vector<double> acc(n, is_prod ? 1.0 : 0.0);
  std::vector<int64_t> acc_int(n, is_prod ? 1 : 0);
  shape.for_each([&](size_t o, int64_t, const std::vector<int64_t>& index) {
    if (integer) {
      // Exact arithmetic modulo 2^64, as int64 wraps; stored in the result dtype it wraps to
      // the same value as arithmetic in that dtype would.
      const uint64_t a = static_cast<uint64_t>(acc_int[o]);
      const uint64_t v = static_cast<uint64_t>(load_int(in, index));
      acc_int[o] = static_cast<int64_t>(is_prod ? a * v : a + v);
    } else if (is_prod) {
      acc[o] *= read.floating(index);
    } else {
      acc[o] += read.floating(index);
    }
  });
  for (size_t o = 0; o < n; ++o) {
    const std::vector<int64_t> index = unravel_index(static_cast<int64_t>(o), type.sizes);
    if (integer) {
      store_int(out, index, acc_int[o]);
    } else if (op == ReduceOp::Mean) {
      // PyTorch's CPU mean is sum(...).div_(count): the sum rounded to the dtype (so an
      // overflowing sum is infinite), divided in the dtype's opmath type. 0 / 0 = NaN (empty).
      const double sum = round_to(type.dtype, acc[o]);
      const double divisor = round_to_opmath(type.dtype, static_cast<double>(shape.count()));
      out.set(index, round_to(type.dtype, round_to_opmath(type.dtype, sum / divisor)));
    } else {
      out.set(index, round_to(type.dtype, acc[o]));
    }
  }
  return out;
}

// var, std and var_mean as PyTorch's CPU kernels compute them, in double for every floating
// dtype: Welford's update, then M2 / max(0, N - correction) (so N <= correction gives inf, or
// NaN when M2 is 0), the square root for std, rounded once; NaN for an empty reduction.
// var_mean's mean is Welford's (so it does not overflow where mean's sum does). var and std
// (not var_mean) of a whole f32/f64 tensor (one output element) take PyTorch's two passes
// instead: mean() in the dtype (rounded, and inf when the sum overflows), then the sum of
// (x - mean)^2 in double.
struct Variance {
  Tensor var;  // or std
  Tensor mean;
};
Variance reduce_variance(const Tensor& in, const ReductionShape& shape, const ir::TensorType& type,
                         bool take_sqrt, double correction, bool with_mean) {
  Variance out{Tensor::empty(type.dtype, type.sizes), Tensor::empty(type.dtype, type.sizes)};
  const size_t n = static_cast<size_t>(out.var.numel());
  const bool two_pass =
      !with_mean && n == 1 && (type.dtype == DType::Float32 || type.dtype == DType::Float64);
  std::vector<int64_t> count(n, 0);
  std::vector<double> mean(n, 0.0);
  std::vector<double> m2(n, 0.0);
  shape.for_each([&](size_t o, int64_t, const std::vector<int64_t>& index) {
    const double x = in.get(index);
    ++count[o];
    if (two_pass) {
      mean[o] += x;  // the sum, for now
      return;
    }
    const double delta = x - mean[o];
    mean[o] += delta / static_cast<double>(count[o]);
    m2[o] += delta * (x - mean[o]);
  });
  if (two_pass) {
    // mean() in the dtype: the sum rounded to the dtype, divided by N in the dtype.
    const double sum = round_to(type.dtype, mean[0]);
    mean[0] = round_to(type.dtype, sum / static_cast<double>(count[0]));
    shape.for_each([&](size_t o, int64_t, const std::vector<int64_t>& index) {
      const double dx = in.get(index) - mean[o];
      m2[o] += dx * dx;
    });
  }
  for (size_t o = 0; o < n; ++o) {
    const double divisor = std::max(0.0, static_cast<double>(count[o]) - correction);
    const double var = count[o] == 0 ? std::numeric_limits<double>::quiet_NaN() : m2[o] / divisor;
    const std::vector<int64_t> index = unravel_index(static_cast<int64_t>(o), type.sizes);
    out.var.set(index, round_to(type.dtype, take_sqrt ? std::sqrt(var) : var));
    out.mean.set(index, count[o] == 0 ? std::numeric_limits<double>::quiet_NaN()
                                      : round_to(type.dtype, mean[o]));
  }
  return out;
}

// logsumexp as PyTorch composes it: m = amax(x) (NaN-propagating), shift = m unless m is
// +-inf (then 0, so that an infinite maximum gives +-inf rather than inf - inf), then
// log(sum(exp(x - shift))) + shift. Every step but the sum is rounded to the result dtype
// as the ATen ops it is made of are; the sum is eager's (double, rounded once). An empty
// reduction is log(0) = -inf.
Tensor reduce_logsumexp(const Tensor& in, const ReductionShape& shape, const ir::TensorType& type) {
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  const size_t n = static_cast<size_t>(out.numel());
  const DType dtype = type.dtype;
  // Integral and bool inputs are converted to the (floating) result dtype first.
  auto element = [&](const std::vector<int64_t>& index) { return round_to(dtype, in.get(index)); };
  std::vector<double> shift(n, 0.0);
  std::vector<bool> seen(n, false);
  shape.for_each([&](size_t o, int64_t, const std::vector<int64_t>& index) {
    const double v = element(index);
    if (!seen[o] || replaces(v, shift[o], /*max=*/true)) shift[o] = v;
    seen[o] = true;
  });
  for (double& s : shift) {
    if (std::isinf(s)) s = 0.0;
  }
  std::vector<double> sum(n, 0.0);
  shape.for_each([&](size_t o, int64_t, const std::vector<int64_t>& index) {
    sum[o] += round_to(dtype, std::exp(round_to(dtype, element(index) - shift[o])));
  });
  for (size_t o = 0; o < n; ++o) {
    const double log_sum = round_to(dtype, std::log(round_to(dtype, sum[o])));
    out.set(unravel_index(static_cast<int64_t>(o), type.sizes),
            round_to(dtype, log_sum + shift[o]));
  }
  return out;
}

}  // namespace

Tensor eval_reduce(const Env& env, const ir::Node& node, ReduceOp op) {
  const Tensor& in = env.tensor(node, 0);
  const ir::TensorType& type = env.result_type(node);
  // Every reduction has (self, dim, ...); var and std put correction before keepdim.
  const bool variance = op == ReduceOp::Var || op == ReduceOp::Std;
  const ReductionShape shape(in, node, type, variance ? 3 : 2);
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod:
    case ReduceOp::Mean:
      return reduce_sum_prod_mean(in, shape, type, op);
    case ReduceOp::Amax:
    case ReduceOp::Amin:
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
      return reduce_extremum(in, shape, type, op, node.op);
    case ReduceOp::Any:
    case ReduceOp::All:
      return reduce_any_all(in, shape, type, op);
    case ReduceOp::Var:
    case ReduceOp::Std:
      return reduce_variance(in, shape, type, op == ReduceOp::Std,
                             ir::scalar_arg(node, 2).as_double(), /*with_mean=*/false)
          .var;
    case ReduceOp::LogSumExp:
      return reduce_logsumexp(in, shape, type);
  }
  throw std::logic_error("eager: unhandled reduction " + node.op);
}

std::vector<Tensor> eval_var_mean(const Env& env, const ir::Node& node) {
  const Tensor& in = env.tensor(node, 0);
  const ir::TensorType& type = env.result_type(node);
  const ReductionShape shape(in, node, type, 3);
  Variance result =
      reduce_variance(in, shape, type, false, ir::scalar_arg(node, 2).as_double(), /*with_mean=*/true);
  return {std::move(result.var), std::move(result.mean)};
}

}  // namespace stax::eager::detail
