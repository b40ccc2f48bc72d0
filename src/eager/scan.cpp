// The eager interpreter's scans (issue 16, point 7): cumsum, cumprod, logcumsumexp, cummax and
// cummin, as eager's CPU loop computes them (ir/scan_args.h): the input converted to the
// values' dtype, then each line along `dim` walked in order with the running value in
// PyTorch's accumulation type. The oracle walks every line sequentially, one element at a
// time; the runtime (external/scan.cpp) computes the same with lines in parallel and long
// lines split by associativity.
#include <cmath>
#include <limits>

#include "eager/ops.h"
#include "eager/row_major.h"
#include "ir/scan_args.h"

namespace stax::eager::detail {

namespace {

using ir::ScanKind;

// eager's _log_add_exp_helper(x, y) in the accumulation type A.
template <typename A>
A log_add_exp(A x, A y) {
  const A lo = std::isnan(y) ? y : std::min(x, y);
  const A hi = std::isnan(y) ? y : std::max(x, y);
  if (lo != hi || std::isfinite(lo)) return hi + std::log1p(std::exp(lo - hi));
  return x;
}

struct Lines {
  int64_t outer = 1, length = 1, inner = 1;
  size_t at(int64_t o, int64_t k, int64_t i) const {
    return static_cast<size_t>((o * length + k) * inner + i);
  }
};

Lines lines_of(const std::vector<int64_t>& sizes, int64_t dim) {
  Lines l;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const auto di = static_cast<int64_t>(d);
    if (di < dim) l.outer *= sizes[d];
    if (di == dim) l.length = sizes[d];
    if (di > dim) l.inner *= sizes[d];
  }
  return l;
}

// Sums, products and logsumexp of floating values, carried in A (float or double).
template <typename A>
std::vector<double> float_scan(ScanKind kind, const Lines& l, const std::vector<double>& x) {
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t i = 0; i < l.inner; ++i) {
      A acc = kind == ScanKind::Prod        ? A(1)
              : kind == ScanKind::LogSumExp ? -std::numeric_limits<A>::infinity()
                                            : A(0);
      for (int64_t k = 0; k < l.length; ++k) {
        const auto v = static_cast<A>(x[l.at(o, k, i)]);
        if (kind == ScanKind::Sum) acc = acc + v;
        if (kind == ScanKind::Prod) acc = acc * v;
        if (kind == ScanKind::LogSumExp) acc = log_add_exp<A>(v, acc);
        out[l.at(o, k, i)] = static_cast<double>(acc);
      }
    }
  }
  return out;
}

// cummax and cummin over values of type V: a NaN or a value at least as large (as small)
// replaces the running one, and nothing replaces a NaN.
template <typename V>
void extremum_scan(bool max, const Lines& l, const std::vector<V>& x, std::vector<V>& values,
                   std::vector<int64_t>& indices) {
  values.resize(x.size());
  indices.resize(x.size());
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t i = 0; i < l.inner; ++i) {
      V best{};
      int64_t at = -1;
      for (int64_t k = 0; k < l.length; ++k) {
        const V v = x[l.at(o, k, i)];
        bool take = at < 0;
        if constexpr (std::is_floating_point_v<V>) {
          if (std::isnan(v)) take = true;
          if (!take && !std::isnan(best)) take = max ? v >= best : v <= best;
        } else {
          take = take || (max ? v >= best : v <= best);
        }
        if (take) {
          best = v;
          at = k;
        }
        values[l.at(o, k, i)] = best;
        indices[l.at(o, k, i)] = at;
      }
    }
  }
}

// The input in the values' dtype, as eager's `self.to(dtype)`: floating values as doubles,
// integer values exactly.
std::vector<double> converted_floats(const Tensor& t, DType to) {
  if (is_floating(t.dtype())) {
    std::vector<double> x = gather_floats(t);
    for (double& v : x) v = float_to_float(v, to);
    return x;
  }
  std::vector<int64_t> ints = gather_ints(t);
  std::vector<double> x(ints.size());
  for (size_t k = 0; k < ints.size(); ++k) x[k] = int_to_float(ints[k], to);
  return x;
}

std::vector<int64_t> converted_ints(const Tensor& t, DType to) {
  if (is_floating(t.dtype())) {
    std::vector<double> floats = gather_floats(t);
    std::vector<int64_t> x(floats.size());
    for (size_t k = 0; k < floats.size(); ++k) x[k] = float_to_int(floats[k], to);
    return x;
  }
  std::vector<int64_t> x = gather_ints(t);
  for (int64_t& v : x) v = wrap_int(v, to);
  return x;
}

Tensor stored(DType dtype, const std::vector<int64_t>& sizes, const std::vector<double>& floats,
              const std::vector<int64_t>& ints) {
  Tensor out = Tensor::empty(dtype, sizes);
  const bool floating = is_floating(dtype);
  write_all(out, [&](const std::vector<int64_t>& index, int64_t p) {
    const auto k = static_cast<size_t>(p);
    if (floating) {
      out.set(index, round_to(dtype, floats[k]));
    } else {
      store_int(out, index, ints[k]);
    }
  });
  return out;
}

}  // namespace

std::vector<Tensor> eval_scan(const Env& env, const ir::Node& node) {
  const ir::ScanArgs a = ir::scan_args(env.graph, node);
  const Tensor& input = env.tensor(node, 0);
  const std::vector<int64_t>& sizes = input.sizes();
  const Lines l = lines_of(sizes, a.dim);
  const bool floating = is_floating(a.dtype);
  std::vector<double> floats;
  std::vector<int64_t> ints;
  if (a.with_indices) {
    std::vector<int64_t> indices;
    const bool max = a.kind == ScanKind::Max;
    if (floating) {
      extremum_scan<double>(max, l, converted_floats(input, a.dtype), floats, indices);
    } else {
      extremum_scan<int64_t>(max, l, converted_ints(input, a.dtype), ints, indices);
    }
    return {stored(a.dtype, sizes, floats, ints), stored(DType::Int64, sizes, {}, indices)};
  }
  if (floating) {
    const std::vector<double> x = converted_floats(input, a.dtype);
    floats = a.accumulate_dtype == DType::Float32 ? float_scan<float>(a.kind, l, x)
                                                  : float_scan<double>(a.kind, l, x);
  } else {
    // int64 sums and products, wrapping as eager's do.
    ints = converted_ints(input, a.dtype);
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t i = 0; i < l.inner; ++i) {
        uint64_t acc = a.kind == ScanKind::Prod ? 1 : 0;
        for (int64_t k = 0; k < l.length; ++k) {
          const auto v = static_cast<uint64_t>(ints[l.at(o, k, i)]);
          acc = a.kind == ScanKind::Prod ? acc * v : acc + v;
          ints[l.at(o, k, i)] = static_cast<int64_t>(acc);
        }
      }
    }
  }
  return {stored(a.dtype, sizes, floats, ints)};
}

}  // namespace stax::eager::detail
