// Stax's runtime scatter (see scatter.h).
#include "external/scatter.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "ir/graph.h"
// Storage-only 16-bit float types (conversions to and from float); the generated kernels use
// the same header, so the runtime rounds exactly as they do.
#include "runtime/kernel_include/stax_kernel_half.h"

namespace stax::external {

namespace {

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// The offsets, in several strided layouts, of consecutive row-major positions of `sizes`.
class StridedWalk {
 public:
  StridedWalk(const std::vector<int64_t>& sizes, std::vector<const std::vector<int64_t>*> strides,
              int64_t start)
      : sizes_(sizes),
        strides_(std::move(strides)),
        coord_(sizes.size(), 0),
        offsets_(strides_.size(), 0) {
    for (size_t d = sizes_.size(); d-- > 0;) {
      coord_[d] = sizes_[d] == 0 ? 0 : start % sizes_[d];
      start = sizes_[d] == 0 ? 0 : start / sizes_[d];
      for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] += coord_[d] * (*strides_[k])[d];
    }
  }
  int64_t offset(size_t k) const { return offsets_[k]; }
  void next() {
    for (size_t d = sizes_.size(); d-- > 0;) {
      if (++coord_[d] < sizes_[d]) {
        for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] += (*strides_[k])[d];
        return;
      }
      for (size_t k = 0; k < strides_.size(); ++k) {
        offsets_[k] -= (sizes_[d] - 1) * (*strides_[k])[d];
      }
      coord_[d] = 0;
    }
  }

 private:
  const std::vector<int64_t>& sizes_;
  std::vector<const std::vector<int64_t>*> strides_;
  std::vector<int64_t> coord_;
  std::vector<int64_t> offsets_;
};

int64_t load_index(const void* index, DType dtype, int64_t offset) {
  return dtype == DType::Int64 ? static_cast<const int64_t*>(index)[offset]
                               : static_cast<const int32_t*>(index)[offset];
}

// Every index value, position by position in row-major order and the indices in order at
// each: throws for the first bad one. The positions walked are the space's dims along which
// some index varies (the values repeat along the others, so the first bad one is the same).
void check_indices(const ScatterSpec& s, const std::vector<const void*>& indices, int threads) {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides(s.indices.size());
  for (size_t d = 0; d < s.space.size(); ++d) {
    bool varies = false;
    for (const ScatterIndexSpec& index : s.indices) varies = varies || index.space_strides[d] != 0;
    if (!varies) continue;
    sizes.push_back(s.space[d]);
    for (size_t k = 0; k < s.indices.size(); ++k) {
      strides[k].push_back(s.indices[k].space_strides[d]);
    }
  }
  std::vector<const std::vector<int64_t>*> walked;
  for (const auto& st : strides) walked.push_back(&st);
  const int64_t n = numel(sizes);
  const auto bad_at = [&](const StridedWalk& walk) -> std::optional<size_t> {
    for (size_t k = 0; k < s.indices.size(); ++k) {
      const ScatterIndexSpec& index = s.indices[k];
      const int64_t v = load_index(indices[k], index.dtype, walk.offset(k));
      if (v != index.skipped && !index.rule.accepts(v)) return k;
    }
    return std::nullopt;
  };
  int64_t first_bad = n;
#pragma omp parallel num_threads(threads) reduction(min : first_bad)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    if (begin < end) {
      StridedWalk walk(sizes, walked, begin);
      for (int64_t p = begin; p < end; ++p, walk.next()) {
        if (bad_at(walk)) {
          first_bad = p;
          break;
        }
      }
    }
  }
  if (first_bad == n) return;
  const StridedWalk at(sizes, walked, first_bad);
  const size_t k = *bad_at(at);
  s.indices[k].rule.fail(load_index(indices[k], s.indices[k].dtype, at.offset(k)));
}

// out = self (strided) or zeros, split over the threads (which also spreads first touches).
void initialize_output(const ScatterSpec& s, const void* self, void* out, int threads) {
  const int64_t n = numel(s.out_sizes);
  const auto esize = static_cast<int64_t>(dtype_size(s.dtype));
  const bool dense = s.self && s.self->strides == ir::contiguous_strides(s.out_sizes);
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    char* dst = static_cast<char*>(out) + begin * esize;
    if (begin >= end) {
      // nothing
    } else if (!s.self) {
      std::memset(dst, 0, static_cast<size_t>((end - begin) * esize));
    } else if (dense) {
      std::memcpy(dst, static_cast<const char*>(self) + begin * esize,
                  static_cast<size_t>((end - begin) * esize));
    } else {
      StridedWalk walk(s.out_sizes, {&s.self->strides}, begin);
      for (int64_t p = begin; p < end; ++p, walk.next(), dst += esize) {
        std::memcpy(dst, static_cast<const char*>(self) + walk.offset(0) * esize,
                    static_cast<size_t>(esize));
      }
    }
  }
}

// The work split: positions are (outer free coordinates, a chunk of the innermost free dim,
// then every non-free coordinate in order). Per dim, the strides of the destination, the
// values and each index, in that order.
struct Split {
  std::vector<int64_t> outer_sizes, index_sizes;  // the free dims but the innermost; the others
  std::vector<std::vector<int64_t>> outer_strides, index_strides;  // [operand][dim]
  int64_t inner = 1;                                               // the innermost free dim's size
  std::vector<int64_t> inner_strides;                              // [operand]
  int64_t chunk = 1;  // of the innermost free dim, per work item
};

Split split_space(const ScatterSpec& s, int threads) {
  Split w;
  const size_t operands = 2 + s.indices.size();
  w.outer_strides.resize(operands);
  w.index_strides.resize(operands);
  w.inner_strides.assign(operands, 0);
  const std::vector<int64_t> zeros(s.space.size(), 0);
  const std::vector<int64_t>& vs = s.values_strides ? *s.values_strides : zeros;
  const auto stride = [&](size_t operand, size_t d) {
    if (operand == 0) return s.dest_strides[d];
    if (operand == 1) return vs[d];
    return s.indices[operand - 2].space_strides[d];
  };
  std::optional<size_t> innermost;
  for (size_t d = 0; d < s.space.size(); ++d) {
    if (s.dest_strides[d] != 0) innermost = d;
  }
  for (size_t d = 0; d < s.space.size(); ++d) {
    if (innermost && d == *innermost) {
      w.inner = s.space[d];
      for (size_t o = 0; o < operands; ++o) w.inner_strides[o] = stride(o, d);
    } else if (s.dest_strides[d] != 0) {
      w.outer_sizes.push_back(s.space[d]);
      for (size_t o = 0; o < operands; ++o) w.outer_strides[o].push_back(stride(o, d));
    } else {
      w.index_sizes.push_back(s.space[d]);
      for (size_t o = 0; o < operands; ++o) w.index_strides[o].push_back(stride(o, d));
    }
  }
  // Enough items for every thread, none shorter than a few cache lines where it can help.
  const int64_t outer = numel(w.outer_sizes);
  const int64_t wanted =
      std::max<int64_t>(1, 4 * static_cast<int64_t>(threads) / std::max<int64_t>(outer, 1));
  w.chunk = std::max<int64_t>(std::min<int64_t>(w.inner, 64), (w.inner + wanted - 1) / wanted);
  return w;
}

template <typename T>
constexpr bool is_16bit = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename T>
T scalar_of(const ScatterSpec& s) {
  if constexpr (std::is_same_v<T, bool>) {
    return s.int_value != 0;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(s.int_value);
  } else if constexpr (is_16bit<T>) {
    return T(static_cast<float>(s.value));
  } else {
    return static_cast<T>(s.value);
  }
}

// scatter_reduce's prod, amax and amin of `v` into `*dst` (or its float `sum`): a NaN wins;
// on ties and after a NaN the element keeps its value (std::max and std::min); bool: and,
// or, and.
template <typename T>
inline void reduce(ir::ScatterCombine c, T* dst, float* sum, T v) {
  using C = ir::ScatterCombine;
  if constexpr (std::is_same_v<T, bool>) {
    *dst = c == C::Max ? (*dst || v) : (*dst && v);
  } else if constexpr (std::is_integral_v<T>) {
    if (c == C::Multiply) {
      *dst = static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(*dst)) *
                                                 static_cast<uint64_t>(static_cast<int64_t>(v))));
    } else {
      *dst = c == C::Max ? std::max(*dst, v) : std::min(*dst, v);
    }
  } else {
    using Math = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const Math o = sum != nullptr ? *sum : static_cast<Math>(*dst);
    const auto x = static_cast<Math>(v);
    Math r = o;
    if (c == C::Multiply) {
      r = o * x;
    } else if (std::isnan(x)) {
      r = x;
    } else if (c == C::Max) {
      r = std::max(o, x);
    } else {
      r = std::min(o, x);
    }
    if (sum != nullptr) {
      *sum = static_cast<float>(r);
    } else {
      *dst = T(r);
    }
  }
}

// Per element state of scatter_reduce: whether it has a value yet (include_self=False) and
// how many values a mean averages (null where not needed).
struct ElementState {
  uint8_t* touched = nullptr;
  int64_t* count = nullptr;
};

// Combines `v` into `*dst` (sum: the float sum of a 16-bit float_sum scatter); `alpha` is
// the spec's, converted as eager converts it for T (alpha_for).
template <typename T, typename Alpha>
inline void combine(const ScatterSpec& s, T* dst, float* sum, T v, Alpha alpha,
                    ElementState state) {
  using C = ir::ScatterCombine;
  if (s.combine == C::Assign) {
    *dst = v;
    return;
  }
  if (state.touched != nullptr && *state.touched == 0) {  // the first value replaces self's
    *state.touched = 1;
    if (state.count != nullptr) *state.count = 1;
    if (sum != nullptr) {
      *sum = static_cast<float>(v);
    } else {
      *dst = v;
    }
    return;
  }
  if (state.count != nullptr) ++*state.count;
  if (s.combine != C::Add && s.combine != C::Mean) {
    reduce<T>(s.combine, dst, sum, v);
  } else if constexpr (std::is_same_v<T, bool>) {
    *dst = *dst || (alpha != 0 && v);
  } else if constexpr (std::is_integral_v<T>) {
    const uint64_t r =
        static_cast<uint64_t>(static_cast<int64_t>(*dst)) +
        static_cast<uint64_t>(static_cast<int64_t>(v)) * static_cast<uint64_t>(alpha);
    *dst = static_cast<T>(static_cast<int64_t>(r));  // wraps to the width (C++20)
  } else if constexpr (is_16bit<T>) {
    if (sum != nullptr) {
      *sum += static_cast<float>(v);
    } else if (s.product_in_dtype) {
      const float term = static_cast<float>(T(alpha * static_cast<float>(v)));
      *dst = T(static_cast<float>(*dst) + term);
    } else {
      *dst = T(static_cast<float>(*dst) + alpha * static_cast<float>(v));
    }
  } else {  // float, double: this file is compiled without contraction (-ffp-contract=off)
    if (alpha == 1) {  // exact either way; std::fma is a library call without FMA hardware
      *dst = *dst + v;
    } else if (s.fused_multiply_add) {
      *dst = std::fma(alpha, v, *dst);
    } else {
      const T term = alpha * v;
      *dst = *dst + term;
    }
  }
}

// The alpha `combine` takes for T: int64 for integers and bool, float for float and 16-bit
// types (rounded to the 16-bit dtype first where the product is rounded), double for double.
template <typename T>
auto alpha_for(const ScatterSpec& s) {
  if constexpr (std::is_integral_v<T>) {
    return s.int_alpha;
  } else if constexpr (is_16bit<T>) {
    const auto a = static_cast<float>(s.alpha);
    return s.product_in_dtype ? static_cast<float>(T(a)) : a;
  } else {
    return static_cast<T>(s.alpha);
  }
}

template <typename T>
void scatter_typed(const ScatterSpec& s, const std::vector<const void*>& indices, const T* values,
                   T* out, float* sums, uint8_t* touched, int64_t* counts, int threads) {
  const Split w = split_space(s, threads);
  const int64_t outer = numel(w.outer_sizes);
  const int64_t chunks = (w.inner + w.chunk - 1) / w.chunk;
  const int64_t items = outer * chunks;
  const int64_t positions = numel(w.index_sizes);
  const T scalar = scalar_of<T>(s);
  const auto alpha = alpha_for<T>(s);
  const size_t terms = s.indices.size();
  std::vector<const std::vector<int64_t>*> outer_strides, index_strides;
  for (const auto& st : w.outer_strides) outer_strides.push_back(&st);
  for (size_t o = 1; o < w.index_strides.size(); ++o) index_strides.push_back(&w.index_strides[o]);
  // The indices that vary along the inner dim (read per element); the others are read once
  // per position (index_put's rows).
  std::vector<size_t> varying;
  for (size_t k = 0; k < terms; ++k) {
    if (w.inner_strides[2 + k] != 0) varying.push_back(k);
  }
  // The offset term k selects at `at`, or nullopt for its skipped value.
  const auto selected = [&](size_t k, int64_t at) -> std::optional<int64_t> {
    const ScatterIndexSpec& index = s.indices[k];
    int64_t v = load_index(indices[k], index.dtype, at);
    if (v == index.skipped) return std::nullopt;
    if (v < 0) v += index.rule.size;
    return v * index.dest_stride;
  };
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t o = item / chunks;
    const int64_t l0 = (item % chunks) * w.chunk;
    const int64_t l1 = std::min(w.inner, l0 + w.chunk);
    const StridedWalk base(w.outer_sizes, outer_strides, o);
    StridedWalk walk(w.index_sizes, index_strides, 0);
    for (int64_t j = 0; j < positions; ++j, walk.next()) {
      const int64_t values_at = base.offset(1) + walk.offset(0);
      int64_t rows = base.offset(0);
      bool skip_row = false;
      for (size_t k = 0; k < terms && !skip_row; ++k) {
        if (w.inner_strides[2 + k] != 0) continue;
        const std::optional<int64_t> t = selected(k, base.offset(2 + k) + walk.offset(1 + k));
        if (t) rows += *t;
        skip_row = !t;
      }
      if (skip_row) continue;
      for (int64_t l = l0; l < l1; ++l) {
        int64_t dest = rows + l * w.inner_strides[0];
        bool skip = false;
        for (size_t k : varying) {
          const std::optional<int64_t> t =
              selected(k, base.offset(2 + k) + walk.offset(1 + k) + l * w.inner_strides[2 + k]);
          if (t) dest += *t;
          skip = skip || !t;
        }
        if (skip) continue;
        const T value = values != nullptr ? values[values_at + l * w.inner_strides[1]] : scalar;
        const ElementState state{touched != nullptr ? touched + dest : nullptr,
                                 counts != nullptr ? counts + dest : nullptr};
        combine<T>(s, out + dest, sums != nullptr ? sums + dest : nullptr, value, alpha, state);
      }
    }
  }
}

// Mean: each element's sum divided by its count (none counts as one), floored for integers,
// in float for float32; a 16-bit float sum is rounded to the dtype first, as eager's sum
// tensor is before its div_.
template <typename T>
void divide_by_counts(T* out, float* sums, const int64_t* counts, int64_t n) {
  for (int64_t p = 0; p < n; ++p) {
    const int64_t count = std::max<int64_t>(1, counts[p]);
    if constexpr (std::is_integral_v<T>) {
      const auto sum = static_cast<int64_t>(out[p]);
      int64_t q = sum / count;
      if (sum % count != 0 && sum < 0) --q;
      out[p] = static_cast<T>(q);
    } else if constexpr (std::is_same_v<T, double>) {
      out[p] = out[p] / static_cast<double>(count);
    } else if (sums != nullptr) {  // eager rounds the float sum, then divides (div_)
      sums[p] = static_cast<float>(T(sums[p])) / static_cast<float>(count);
    } else {
      out[p] = T(static_cast<float>(out[p]) / static_cast<float>(count));
    }
  }
}

template <typename T>
void run_typed(const ScatterSpec& s, const std::vector<const void*>& indices, const void* values,
               void* out, int threads) {
  T* o = static_cast<T*>(out);
  const auto n = static_cast<size_t>(numel(s.out_sizes));
  std::vector<float> sums;
  if constexpr (is_16bit<T>) {
    if (s.float_sum && s.combine != ir::ScatterCombine::Assign) {
      sums.resize(n);
      for (size_t p = 0; p < n; ++p) sums[p] = static_cast<float>(o[p]);
    }
  }
  std::vector<uint8_t> touched(s.include_self ? 0 : n, 0);
  std::vector<int64_t> counts;
  if (s.combine == ir::ScatterCombine::Mean) counts.assign(n, s.include_self ? 1 : 0);
  scatter_typed<T>(s, indices, static_cast<const T*>(values), o,
                   sums.empty() ? nullptr : sums.data(), touched.empty() ? nullptr : touched.data(),
                   counts.empty() ? nullptr : counts.data(), threads);
  if constexpr (!std::is_same_v<T, bool>) {
    if (!counts.empty()) {
      divide_by_counts<T>(o, sums.empty() ? nullptr : sums.data(), counts.data(),
                          static_cast<int64_t>(n));
    }
  }
  if constexpr (is_16bit<T>) {
    for (size_t p = 0; p < sums.size(); ++p) o[p] = T(sums[p]);
  }
}

}  // namespace

std::optional<std::string> scatter_spec_problem(const ScatterSpec& s) {
  const size_t rank = s.space.size();
  if (s.dest_strides.size() != rank || (s.values_strides && s.values_strides->size() != rank)) {
    return "per-dim strides of a rank other than the space's (" + std::to_string(rank) + ")";
  }
  if (s.indices.empty()) return "no index";
  for (const ScatterIndexSpec& index : s.indices) {
    if (index.space_strides.size() != rank) return "an index's strides of another rank";
    if (index.dtype != DType::Int64 && index.dtype != DType::Int32) return "an index dtype";
  }
  if (s.self && s.self->sizes != s.out_sizes) return "self's sizes differ from the output's";
  return std::nullopt;
}

void run_scatter(const ScatterSpec& spec, const void* self, const std::vector<const void*>& indices,
                 const void* values, void* out, int num_threads) {
  const int threads = std::max(1, num_threads);
  // Eager checks the index values it visits: none when the space is empty.
  if (numel(spec.space) != 0) check_indices(spec, indices, threads);
  initialize_output(spec, self, out, threads);
  if (numel(spec.space) == 0) return;
  switch (spec.dtype) {
    case DType::Bool:
      return run_typed<bool>(spec, indices, values, out, threads);
    case DType::UInt8:
      return run_typed<uint8_t>(spec, indices, values, out, threads);
    case DType::Int8:
      return run_typed<int8_t>(spec, indices, values, out, threads);
    case DType::Int16:
      return run_typed<int16_t>(spec, indices, values, out, threads);
    case DType::Int32:
      return run_typed<int32_t>(spec, indices, values, out, threads);
    case DType::Int64:
      return run_typed<int64_t>(spec, indices, values, out, threads);
    case DType::Float16:
      return run_typed<Half>(spec, indices, values, out, threads);
    case DType::BFloat16:
      return run_typed<BFloat16>(spec, indices, values, out, threads);
    case DType::Float32:
      return run_typed<float>(spec, indices, values, out, threads);
    case DType::Float64:
      return run_typed<double>(spec, indices, values, out, threads);
  }
}

}  // namespace stax::external
