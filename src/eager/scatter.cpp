// The eager oracle of the scatters (index_put, index_add, scatter, scatter_add): a copy of
// self, then the positions of the iteration space in row-major order, each combined into the
// element it names (ir/scatter_args.h), as torch 2.13.0's CPU kernels order them. Sums round
// as eager's do: index_put rounds each addition to the dtype (16-bit values added in float),
// scatter_add of 16-bit values sums in float and rounds once per element, and index_add
// follows the path eager takes (ir/scatter_args.cpp): scatter_add's float sums (float_sum),
// or out + alpha * value in the dtype's own arithmetic: alpha converted to the dtype, the
// product rounded to it, then the sum (float32 and float64 over a self of rank 2 or more:
// one fused multiply-add, as eager's vectorized add kernel with alpha computes it). Known
// gap: eager's rank-2+ loop computes 16-bit slices of 32 or more contiguous elements (with
// AVX2; the count depends on the CPU) with alpha converted to the dtype but the product and
// sum in float, which this oracle does not follow (alpha 1 is exact either way).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "eager/ops.h"
#include "ir/scatter_args.h"

namespace stax::eager::detail {

namespace {

const Tensor& operand(const Env& env, ir::ValueRef ref) {
  return env.values.at(static_cast<size_t>(ref.index));
}

// The combination of one value into an element of `out`.
class Combiner {
 public:
  Combiner(const ir::ScatterArgs& a, const Tensor& out) : a_(a), out_(out), dtype_(a.dtype) {
    integer_ = is_integer_like(dtype_);
    fused_ = a.fused_multiply_add;
    in_dtype_ = a.product_in_dtype;
    if (a.combine == ir::ScatterCombine::Add) {
      if (integer_) {
        int_alpha_ = scalar_to_int(a.alpha, dtype_);
      } else if (in_dtype_) {
        float_alpha_ = scalar_to_float(a.alpha, dtype_);  // rounded to the dtype
      } else {
        float_alpha_ =
            scalar_to_float(a.alpha, dtype_ == DType::Float64 ? DType::Float64 : DType::Float32);
      }
    }
    if (a.float_sum) {
      sums_.resize(static_cast<size_t>(out.numel()));
      for (int64_t p = 0; p < out.numel(); ++p) sums_[static_cast<size_t>(p)] = out.get_flat(p);
    }
    if (!a.include_self) touched_.assign(static_cast<size_t>(out.numel()), 0);
    if (a.combine == ir::ScatterCombine::Mean) {
      counts_.assign(static_cast<size_t>(out.numel()), a.include_self ? 1 : 0);
    }
  }

  // Combines element `at` of `values` (or the scalar value when `values` is null) into out's
  // element `dest` (row-major position `flat`).
  void combine(const Tensor* values, const std::vector<int64_t>& at,
               const std::vector<int64_t>& dest, int64_t flat) {
    if (a_.combine == ir::ScatterCombine::Assign) {
      if (values != nullptr && integer_) {
        store_int(out_, dest, load_int(*values, at));  // exact for int64
      } else if (values != nullptr) {
        out_.set(dest, values->get(at));  // floats round-trip through double exactly
      } else if (integer_) {
        store_int(out_, dest, scalar_to_int(a_.value, dtype_));
      } else {
        out_.set(dest, scalar_to_float(a_.value, dtype_));
      }
      return;
    }
    const auto f = static_cast<size_t>(flat);
    if (!touched_.empty() && touched_[f] == 0) {  // include_self=False: the first value
      touched_[f] = 1;
      if (!counts_.empty()) counts_[f] = 1;
      if (a_.float_sum) {
        sums_[f] = static_cast<float>(values->get(at));
      } else if (integer_) {
        store_int(out_, dest, load_int(*values, at));
      } else {
        out_.set(dest, values->get(at));
      }
      return;
    }
    if (!counts_.empty()) ++counts_[f];
    if (a_.combine != ir::ScatterCombine::Add && a_.combine != ir::ScatterCombine::Mean) {
      reduce(*values, at, dest, f);
      return;
    }
    if (dtype_ == DType::Bool) {  // bool += alpha * bool: true when either is
      const bool term = int_alpha_ != 0 && load_int(*values, at) != 0;
      store_int(out_, dest, (load_int(out_, dest) != 0 || term) ? 1 : 0);
    } else if (integer_) {
      const auto sum = static_cast<int64_t>(static_cast<uint64_t>(load_int(out_, dest)) +
                                            static_cast<uint64_t>(load_int(*values, at)) *
                                                static_cast<uint64_t>(int_alpha_));
      store_int(out_, dest, sum);
    } else if (a_.float_sum) {
      float& s = sums_[static_cast<size_t>(flat)];
      s += static_cast<float>(values->get(at));
    } else if (dtype_ == DType::Float64) {
      const double v = values->get(at);
      out_.set(dest, fused_ ? std::fma(float_alpha_, v, out_.get(dest))
                            : out_.get(dest) + float_alpha_ * v);
    } else {  // float32 and 16-bit values, in float
      const auto alpha = static_cast<float>(float_alpha_);
      const auto v = static_cast<float>(values->get(at));
      const auto o = static_cast<float>(out_.get(dest));
      float term = alpha * v;
      if (in_dtype_) term = static_cast<float>(round_to(dtype_, term));
      out_.set(dest, static_cast<double>(fused_ ? std::fma(alpha, v, o) : o + term));
    }
  }

  void finish() {
    if (!counts_.empty()) divide_by_counts();
    if (!a_.float_sum) return;
    for (int64_t p = 0; p < out_.numel(); ++p) out_.set_flat(p, sums_[static_cast<size_t>(p)]);
  }

 private:
  // scatter_reduce's prod, amax and amin (NaN wins; on ties and after a NaN the element keeps
  // its value, as std::max and std::min do; bool: and, or, and).
  void reduce(const Tensor& values, const std::vector<int64_t>& at,
              const std::vector<int64_t>& dest, size_t f) {
    const ir::ScatterCombine c = a_.combine;
    if (integer_) {
      const int64_t o = load_int(out_, dest);
      const int64_t v = load_int(values, at);
      int64_t r = 0;
      if (dtype_ == DType::Bool) {
        r = c == ir::ScatterCombine::Max ? (o != 0 || v != 0) : (o != 0 && v != 0);
      } else if (c == ir::ScatterCombine::Multiply) {
        r = static_cast<int64_t>(static_cast<uint64_t>(o) * static_cast<uint64_t>(v));
      } else {
        r = c == ir::ScatterCombine::Max ? std::max(o, v) : std::min(o, v);
      }
      store_int(out_, dest, r);
      return;
    }
    const double o = a_.float_sum ? sums_[f] : out_.get(dest);
    const double v = values.get(at);
    double r = 0.0;
    if (c == ir::ScatterCombine::Multiply) {
      r = dtype_ == DType::Float64
              ? o * v
              : static_cast<double>(static_cast<float>(o) * static_cast<float>(v));
    } else if (std::isnan(v)) {
      r = v;
    } else if (c == ir::ScatterCombine::Max) {
      r = o < v ? v : o;
    } else {
      r = v < o ? v : o;
    }
    if (a_.float_sum) {
      sums_[f] = static_cast<float>(r);
    } else {
      out_.set(dest, r);
    }
  }

  // Mean: each element's sum divided by its count (none counts as one), floored for integers,
  // in float for float32; a 16-bit float sum is rounded to the dtype first, as eager's sum
  // tensor is before its div_.
  void divide_by_counts() {
    for (int64_t p = 0; p < out_.numel(); ++p) {
      const int64_t count = std::max<int64_t>(1, counts_[static_cast<size_t>(p)]);
      const std::vector<int64_t> at = unravel_index(p, out_.sizes());
      if (integer_) {
        const int64_t sum = load_int(out_, at);
        int64_t q = sum / count;
        if (sum % count != 0 && sum < 0) --q;
        store_int(out_, at, q);
      } else if (a_.float_sum) {  // eager rounds the float sum, then divides (div_)
        float& s = sums_[static_cast<size_t>(p)];
        s = static_cast<float>(round_to(dtype_, s)) / static_cast<float>(count);
      } else if (dtype_ == DType::Float64) {
        out_.set(at, out_.get(at) / static_cast<double>(count));
      } else {
        out_.set(at,
                 static_cast<double>(static_cast<float>(out_.get(at)) / static_cast<float>(count)));
      }
    }
  }

  const ir::ScatterArgs& a_;
  const Tensor& out_;
  DType dtype_;
  bool integer_ = false;
  bool fused_ = false;     // ScatterArgs::fused_multiply_add
  bool in_dtype_ = false;  // ScatterArgs::product_in_dtype
  int64_t int_alpha_ = 1;
  double float_alpha_ = 1.0;
  std::vector<float> sums_;
  std::vector<uint8_t> touched_;  // include_self=False: whether the element has a value yet
  std::vector<int64_t> counts_;   // Mean: the values (self included) each element averages
};

}  // namespace

Tensor eval_scatter(const Env& env, const ir::Node& node) {
  const ir::ScatterArgs a = ir::scatter_args(env.graph, node);
  const ir::IndirectArgs& l = a.layout;
  const Tensor& self = operand(env, l.source);
  std::vector<const Tensor*> indices;
  for (const ir::IndexTerm& t : l.terms) indices.push_back(&operand(env, t.index));
  const Tensor* values = a.values ? &operand(env, *a.values) : nullptr;
  Tensor out = self.contiguous_copy();
  Combiner combiner(a, out);
  const std::vector<int64_t>& space = l.sizes;
  int64_t count = 1;
  for (int64_t s : space) count *= s;
  std::vector<int64_t> selected(l.terms.size(), 0);
  std::vector<int64_t> at_values(values != nullptr ? values->dim() : 0, 0);
  std::vector<int64_t> dest(self.dim(), 0);
  const int64_t rank = static_cast<int64_t>(self.dim());
  for (int64_t p = 0; p < count; ++p) {
    const std::vector<int64_t> r = unravel_index(p, space);
    for (size_t k = 0; k < l.terms.size(); ++k) {
      const ir::IndexTerm& t = l.terms[k];
      std::vector<int64_t> at_index;
      // -1: a 0-dim self's index_select twin reads the index's one element at any rank.
      for (int64_t d : t.index_dims) at_index.push_back(d < 0 ? 0 : r[static_cast<size_t>(d)]);
      int64_t v = load_int(*indices[k], at_index);
      if (!t.rule.accepts(v)) t.rule.fail(v);
      selected[k] = v < 0 ? v + t.size : v;
    }
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t from = l.source_dims[static_cast<size_t>(d)];
      const auto k = ir::IndirectArgs::term_of(from);
      dest[static_cast<size_t>(d)] = k ? selected[*k] : r[static_cast<size_t>(from)];
      flat = flat * self.sizes()[static_cast<size_t>(d)] + dest[static_cast<size_t>(d)];
    }
    if (values != nullptr) {
      std::fill(at_values.begin(), at_values.end(), 0);
      for (size_t d = 0; d < space.size(); ++d) {
        if (a.values_dims[d] >= 0) at_values[static_cast<size_t>(a.values_dims[d])] = r[d];
      }
    }
    combiner.combine(values, at_values, dest, flat);
  }
  combiner.finish();
  return out;
}

}  // namespace stax::eager::detail
