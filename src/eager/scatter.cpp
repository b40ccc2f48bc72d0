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
//
// The walk keeps element offsets instead of index vectors (issue 32, point 4): each position
// moves the offsets into the values, the indices and self by fixed steps, and an index is
// read once per row when the innermost dim does not select through it, so a scatter costs a
// few loads and one combination per update, without allocating (fuzz case 84742's 279M
// updates took 26 s with an index vector per update and per read).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "eager/element_access.h"
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
  Combiner(const ir::ScatterArgs& a, const Tensor& out, const Tensor* values)
      : a_(a),
        out_(static_cast<char*>(out.data())),
        numel_(out.numel()),
        dtype_(a.dtype),
        size_(static_cast<int64_t>(dtype_size(a.dtype))) {
    if (values != nullptr) {
      values_ = static_cast<const char*>(values->data());
      values_dtype_ = values->dtype();
      values_size_ = static_cast<int64_t>(dtype_size(values_dtype_));
    }
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
      sums_.resize(static_cast<size_t>(numel_));
      for (int64_t p = 0; p < numel_; ++p) sums_[static_cast<size_t>(p)] = get(p);
    }
    if (!a.include_self) touched_.assign(static_cast<size_t>(out.numel()), 0);
    if (a.combine == ir::ScatterCombine::Mean) {
      counts_.assign(static_cast<size_t>(out.numel()), a.include_self ? 1 : 0);
    }
  }

  // Combines the element of the values at element offset `at` (or the scalar value when there
  // are no values) into out's element at row-major position `flat` (out is contiguous).
  void combine(int64_t at, int64_t flat) {
    if (a_.combine == ir::ScatterCombine::Assign) {
      if (values_ != nullptr && integer_) {
        set_int(flat, value_int(at));  // exact for int64
      } else if (values_ != nullptr) {
        set(flat, value(at));  // floats round-trip through double exactly
      } else if (integer_) {
        set_int(flat, scalar_to_int(a_.value, dtype_));
      } else {
        set(flat, scalar_to_float(a_.value, dtype_));
      }
      return;
    }
    const auto f = static_cast<size_t>(flat);
    if (!touched_.empty() && touched_[f] == 0) {  // include_self=False: the first value
      touched_[f] = 1;
      if (!counts_.empty()) counts_[f] = 1;
      if (a_.float_sum) {
        sums_[f] = static_cast<float>(value(at));
      } else if (integer_) {
        set_int(flat, value_int(at));
      } else {
        set(flat, value(at));
      }
      return;
    }
    if (!counts_.empty()) ++counts_[f];
    if (a_.combine != ir::ScatterCombine::Add && a_.combine != ir::ScatterCombine::Mean) {
      reduce(at, flat);
      return;
    }
    if (dtype_ == DType::Bool) {  // bool += alpha * bool: true when either is
      const bool term = int_alpha_ != 0 && value_int(at) != 0;
      set_int(flat, (get_int(flat) != 0 || term) ? 1 : 0);
    } else if (integer_) {
      const auto sum = static_cast<int64_t>(static_cast<uint64_t>(get_int(flat)) +
                                            static_cast<uint64_t>(value_int(at)) *
                                                static_cast<uint64_t>(int_alpha_));
      set_int(flat, sum);
    } else if (a_.float_sum) {
      float& s = sums_[f];
      s += static_cast<float>(value(at));
    } else if (dtype_ == DType::Float64) {
      const double v = value(at);
      set(flat, fused_ ? std::fma(float_alpha_, v, get(flat)) : get(flat) + float_alpha_ * v);
    } else {  // float32 and 16-bit values, in float
      const auto alpha = static_cast<float>(float_alpha_);
      const auto v = static_cast<float>(value(at));
      const auto o = static_cast<float>(get(flat));
      float term = alpha * v;
      if (in_dtype_) term = static_cast<float>(round_to(dtype_, term));
      set(flat, static_cast<double>(fused_ ? std::fma(alpha, v, o) : o + term));
    }
  }

  // A row of `n` positions whose offsets move by fixed steps. Integer sums into self
  // (index_put's and index_add's accumulate, scatter_add) run in the dtype's own type: the
  // same wrapped arithmetic as combine(), without its dispatch per element; the rest goes
  // through combine().
  void combine_row(int64_t at, int64_t at_step, int64_t flat, int64_t flat_step, int64_t n) {
    const bool integer_sum = a_.combine == ir::ScatterCombine::Add && integer_ &&
                             dtype_ != DType::Bool && touched_.empty() && counts_.empty() &&
                             values_ != nullptr && values_dtype_ == dtype_;
    if (integer_sum) {
      switch (dtype_) {
        case DType::UInt8:
          return add_row<uint8_t>(at, at_step, flat, flat_step, n);
        case DType::Int8:
          return add_row<int8_t>(at, at_step, flat, flat_step, n);
        case DType::Int16:
          return add_row<int16_t>(at, at_step, flat, flat_step, n);
        case DType::Int32:
          return add_row<int32_t>(at, at_step, flat, flat_step, n);
        case DType::Int64:
          return add_row<int64_t>(at, at_step, flat, flat_step, n);
        default:
          break;
      }
    }
    for (int64_t j = 0; j < n; ++j) combine(at + j * at_step, flat + j * flat_step);
  }

  void finish() {
    if (!counts_.empty()) divide_by_counts();
    if (!a_.float_sum) return;
    for (int64_t p = 0; p < numel_; ++p) set(p, sums_[static_cast<size_t>(p)]);
  }

 private:
  template <typename T>
  void add_row(int64_t at, int64_t at_step, int64_t flat, int64_t flat_step, int64_t n) {
    const auto alpha = static_cast<uint64_t>(int_alpha_);
    for (int64_t j = 0; j < n; ++j) {
      const char* v = values_ + (at + j * at_step) * values_size_;
      char* o = out_ + (flat + j * flat_step) * size_;
      const uint64_t sum = static_cast<uint64_t>(static_cast<int64_t>(load_raw<T>(o))) +
                           static_cast<uint64_t>(static_cast<int64_t>(load_raw<T>(v))) * alpha;
      store_raw<T>(o, static_cast<T>(sum));  // wrapped to the dtype, as store_int_at does
    }
  }

  // Out's element at row-major position p, and the values' element at element offset `at`.
  double get(int64_t p) const { return load_as_double(dtype_, out_ + p * size_); }
  void set(int64_t p, double v) const { store_from_double(dtype_, out_ + p * size_, v); }
  int64_t get_int(int64_t p) const { return load_int_at(dtype_, out_ + p * size_); }
  void set_int(int64_t p, int64_t v) const { store_int_at(dtype_, out_ + p * size_, v); }
  double value(int64_t at) const {
    return load_as_double(values_dtype_, values_ + at * values_size_);
  }
  int64_t value_int(int64_t at) const {
    return load_int_at(values_dtype_, values_ + at * values_size_);
  }

  // scatter_reduce's prod, amax and amin (NaN wins; on ties and after a NaN the element keeps
  // its value, as std::max and std::min do; bool: and, or, and).
  void reduce(int64_t at, int64_t flat) {
    const auto f = static_cast<size_t>(flat);
    const ir::ScatterCombine c = a_.combine;
    if (integer_) {
      const int64_t o = get_int(flat);
      const int64_t v = value_int(at);
      int64_t r = 0;
      if (dtype_ == DType::Bool) {
        r = c == ir::ScatterCombine::Max ? (o != 0 || v != 0) : (o != 0 && v != 0);
      } else if (c == ir::ScatterCombine::Multiply) {
        r = static_cast<int64_t>(static_cast<uint64_t>(o) * static_cast<uint64_t>(v));
      } else {
        r = c == ir::ScatterCombine::Max ? std::max(o, v) : std::min(o, v);
      }
      set_int(flat, r);
      return;
    }
    const double o = a_.float_sum ? sums_[f] : get(flat);
    const double v = value(at);
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
      set(flat, r);
    }
  }

  // Mean: each element's sum divided by its count (none counts as one), floored for integers,
  // in float for float32; a 16-bit float sum is rounded to the dtype first, as eager's sum
  // tensor is before its div_.
  void divide_by_counts() {
    for (int64_t p = 0; p < numel_; ++p) {
      const int64_t count = std::max<int64_t>(1, counts_[static_cast<size_t>(p)]);
      if (integer_) {
        const int64_t sum = get_int(p);
        int64_t q = sum / count;
        if (sum % count != 0 && sum < 0) --q;
        set_int(p, q);
      } else if (a_.float_sum) {  // eager rounds the float sum, then divides (div_)
        float& s = sums_[static_cast<size_t>(p)];
        s = static_cast<float>(round_to(dtype_, s)) / static_cast<float>(count);
      } else if (dtype_ == DType::Float64) {
        set(p, get(p) / static_cast<double>(count));
      } else {
        set(p, static_cast<double>(static_cast<float>(get(p)) / static_cast<float>(count)));
      }
    }
  }

  const ir::ScatterArgs& a_;
  char* out_;  // contiguous: row-major positions are element offsets
  int64_t numel_;
  DType dtype_;
  int64_t size_;  // bytes per element of out
  const char* values_ = nullptr;
  DType values_dtype_ = DType::Float32;
  int64_t values_size_ = 0;
  bool integer_ = false;
  bool fused_ = false;     // ScatterArgs::fused_multiply_add
  bool in_dtype_ = false;  // ScatterArgs::product_in_dtype
  int64_t int_alpha_ = 1;
  double float_alpha_ = 1.0;
  std::vector<float> sums_;
  std::vector<uint8_t> touched_;  // include_self=False: whether the element has a value yet
  std::vector<int64_t> counts_;   // Mean: the values (self included) each element averages
};

// Per dim of the iteration space: how far one step along it moves each offset the walk keeps
// (in elements).
struct Steps {
  std::vector<int64_t> values;              // into the values
  std::vector<int64_t> out;                 // into out, through the dims not selected
  std::vector<std::vector<int64_t>> index;  // per term: into its index tensor
  std::vector<int64_t> out_per_selected;    // per term: out's step per selected position
};

Steps steps_of(const ir::ScatterArgs& a, const Tensor& self, const Tensor* values,
               const std::vector<const Tensor*>& indices) {
  const ir::IndirectArgs& l = a.layout;
  const size_t rank = l.sizes.size();
  Steps s;
  s.values.assign(rank, 0);
  s.out.assign(rank, 0);
  s.index.assign(l.terms.size(), std::vector<int64_t>(rank, 0));
  s.out_per_selected.assign(l.terms.size(), 0);
  if (values != nullptr) {
    for (size_t d = 0; d < rank; ++d) {
      if (a.values_dims[d] >= 0) {
        s.values[d] = values->strides()[static_cast<size_t>(a.values_dims[d])];
      }
    }
  }
  for (size_t k = 0; k < l.terms.size(); ++k) {
    const std::vector<int64_t>& dims = l.terms[k].index_dims;
    for (size_t i = 0; i < dims.size(); ++i) {
      // -1: a 0-dim self's index_select twin reads the index's one element at any rank.
      if (dims[i] >= 0) s.index[k][static_cast<size_t>(dims[i])] += indices[k]->strides()[i];
    }
  }
  // Out is a contiguous copy of self: its row-major strides.
  int64_t stride = 1;
  for (size_t d = self.dim(); d-- > 0;) {
    const int64_t from = l.source_dims[d];
    if (const auto k = ir::IndirectArgs::term_of(from)) {
      s.out_per_selected[*k] += stride;
    } else {
      s.out[static_cast<size_t>(from)] += stride;
    }
    stride *= self.sizes()[d];
  }
  return s;
}

}  // namespace

Tensor eval_scatter(const Env& env, const ir::Node& node) {
  const ir::ScatterArgs a = ir::scatter_args(env.graph, node);
  const ir::IndirectArgs& l = a.layout;
  const Tensor& self = operand(env, l.source);
  std::vector<const Tensor*> indices;
  for (const ir::IndexTerm& t : l.terms) indices.push_back(&operand(env, t.index));
  const Tensor* values = a.values ? &operand(env, *a.values) : nullptr;
  Tensor out = self.contiguous_copy();
  Combiner combiner(a, out, values);
  const std::vector<int64_t>& space = l.sizes;
  for (int64_t s : space) {
    if (s == 0) {
      combiner.finish();
      return out;
    }
  }
  const Steps steps = steps_of(a, self, values, indices);
  const size_t rank = space.size();
  const size_t terms = l.terms.size();
  // The walk: row-major over the space, the innermost dim as a run of `row` positions.
  const size_t inner = rank == 0 ? 0 : rank - 1;
  const int64_t row = rank == 0 ? 1 : space[inner];
  const int64_t value_step = rank == 0 ? 0 : steps.values[inner];
  const int64_t out_step = rank == 0 ? 0 : steps.out[inner];
  std::vector<int64_t> r(rank, 0);
  int64_t at_values = 0;
  int64_t at_out = 0;
  std::vector<int64_t> at_index(terms, 0);
  // Terms whose index does not move along the innermost dim are read once per row.
  std::vector<bool> per_element(terms, false);
  for (size_t k = 0; k < terms; ++k) per_element[k] = rank > 0 && steps.index[k][inner] != 0;
  const bool row_selected =
      std::find(per_element.begin(), per_element.end(), true) != per_element.end();
  std::vector<const char*> index_data(terms);
  std::vector<int64_t> index_size(terms);
  for (size_t k = 0; k < terms; ++k) {
    index_data[k] = static_cast<const char*>(indices[k]->data());
    index_size[k] = static_cast<int64_t>(dtype_size(indices[k]->dtype()));
  }
  auto select = [&](size_t k, int64_t at) {
    const ir::IndexTerm& t = l.terms[k];
    const int64_t v = load_int_at(indices[k]->dtype(), index_data[k] + at * index_size[k]);
    if (!t.rule.accepts(v)) t.rule.fail(v);
    return (v < 0 ? v + t.size : v) * steps.out_per_selected[k];
  };
  for (;;) {
    // Every term at the row's first position, in the order of the terms, so that the first
    // index refused is the one eager refuses.
    int64_t base = at_out;
    for (size_t k = 0; k < terms; ++k) {
      const int64_t selected = select(k, at_index[k]);
      if (!per_element[k]) base += selected;
    }
    if (row_selected) {
      for (int64_t j = 0; j < row; ++j) {
        int64_t flat = base + j * out_step;
        for (size_t k = 0; k < terms; ++k) {
          if (per_element[k]) flat += select(k, at_index[k] + j * steps.index[k][inner]);
        }
        combiner.combine(at_values + j * value_step, flat);
      }
    } else {
      combiner.combine_row(at_values, value_step, base, out_step, row);
    }
    // The next row: the odometer over the outer dims.
    size_t d = inner;
    for (; d-- > 0;) {
      ++r[d];
      at_values += steps.values[d];
      at_out += steps.out[d];
      for (size_t k = 0; k < terms; ++k) at_index[k] += steps.index[k][d];
      if (r[d] < space[d]) break;
      at_values -= space[d] * steps.values[d];
      at_out -= space[d] * steps.out[d];
      for (size_t k = 0; k < terms; ++k) at_index[k] -= space[d] * steps.index[k][d];
      r[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) break;
  }
  combiner.finish();
  return out;
}

}  // namespace stax::eager::detail
