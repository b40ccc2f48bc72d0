// Reductions of vector accumulators (docs/kernel_header_api.md, "Reductions"): lane
// reductions (sum, prod, NaN-propagating max/min, any/all), arg-reduction updates and lane
// combination (first index wins, NaN is the extreme), Welford mean/M2 accumulators, and the
// blocked float sums (cascade_fold, VecSumOuter) of codegen/cascade_sum.h.
// Included by stax_kernel.h after stax_kernel_vec_ops.h; not meant to be included directly.
#pragma once

#include <cstdint>

#include "stax_kernel_vec_ops.h"

namespace stax {

// ---- Lane reductions: registers are combined first, then the lanes of the one register ----
#define STAX_LANE_REDUCTION(name, combine)                               \
  template <class T, int N>                                              \
  inline T reduce_##name(const Vec<T, N>& v) {                           \
    typename Vec<T, N>::Reg r = v.reg[0];                                \
    for (int k = 1; k < Vec<T, N>::kRegs; ++k) r = combine(r, v.reg[k]); \
    return reg_reduce_##name(r);                                         \
  }
STAX_LANE_REDUCTION(sum, reg_add)
STAX_LANE_REDUCTION(prod, reg_mul)
STAX_LANE_REDUCTION(max, reg_maximum)
STAX_LANE_REDUCTION(min, reg_minimum)
#undef STAX_LANE_REDUCTION

template <int N>
inline bool reduce_max(const Vec<bool, N>& v) {
  return v.bits != 0;
}
template <int N>
inline bool reduce_min(const Vec<bool, N>& v) {
  return v.bits == Vec<bool, N>::kAll;
}
template <int N>
inline bool reduce_any(const Vec<bool, N>& v) {
  return v.bits != 0;
}
template <int N>
inline bool reduce_all(const Vec<bool, N>& v) {
  return v.bits == Vec<bool, N>::kAll;
}

// ---- Arg-reductions ----
// A lane takes x when x is strictly better than best, or x is NaN and best is not; indices
// increase along the reduction, so the first index wins ties.
template <class T>
inline detail::Scalar<T, void> argmax_update(T& best, int64_t& best_index, T x, int64_t index) {
  if (op_gt(x, best) || (op_isnan(x) && !op_isnan(best))) {
    best = x;
    best_index = index;
  }
}
template <class T>
inline detail::Scalar<T, void> argmin_update(T& best, int64_t& best_index, T x, int64_t index) {
  if (op_lt(x, best) || (op_isnan(x) && !op_isnan(best))) {
    best = x;
    best_index = index;
  }
}
template <class T, int N>
inline void argmax_update(Vec<T, N>& best, Vec<int64_t, N>& best_index, const Vec<T, N>& x,
                          const Vec<int64_t, N>& index) {
  const Vec<bool, N> take = op_gt(x, best) | (op_isnan(x) & ~op_isnan(best));
  best = op_where(take, x, best);
  best_index = op_where(take, index, best_index);
}
template <class T, int N>
inline void argmin_update(Vec<T, N>& best, Vec<int64_t, N>& best_index, const Vec<T, N>& x,
                          const Vec<int64_t, N>& index) {
  const Vec<bool, N> take = op_lt(x, best) | (op_isnan(x) & ~op_isnan(best));
  best = op_where(take, x, best);
  best_index = op_where(take, index, best_index);
}

namespace detail {
// Combines the lanes of an arg-reduction: the extreme value (a NaN first), the smallest index
// among equal values.
template <bool kMax, class T, int N>
inline void reduce_arg(const Vec<T, N>& best, const Vec<int64_t, N>& best_index, T& value,
                       int64_t& index) {
  value = best[0];
  index = best_index[0];
  for (int l = 1; l < N; ++l) {
    const T x = best[l];
    const int64_t i = best_index[l];
    const bool x_nan = op_isnan(x), v_nan = op_isnan(value);
    bool take;
    if (x_nan || v_nan) {
      take = x_nan && (!v_nan || i < index);
    } else if (kMax ? op_gt(x, value) : op_lt(x, value)) {
      take = true;
    } else {
      take = op_eq(x, value) && i < index;
    }
    if (take) {
      value = x;
      index = i;
    }
  }
}
}  // namespace detail

template <class T, int N>
inline void reduce_argmax(const Vec<T, N>& best, const Vec<int64_t, N>& best_index, T& value,
                          int64_t& index) {
  detail::reduce_arg<true>(best, best_index, value, index);
}
template <class T, int N>
inline void reduce_argmin(const Vec<T, N>& best, const Vec<int64_t, N>& best_index, T& value,
                          int64_t& index) {
  detail::reduce_arg<false>(best, best_index, value, index);
}

// ---- Welford (ATen's WelfordOps: weight counts the values) ----
template <class T>
struct Welford {
  T mean = T(0);
  T m2 = T(0);
  T weight = T(0);
};
template <class T>
inline void welford_update(Welford<T>& w, T x) {
  w.weight += T(1);
  const T delta = x - w.mean;
  w.mean += delta / w.weight;
  w.m2 += delta * (x - w.mean);
}
template <class T>
inline void welford_combine(Welford<T>& a, const Welford<T>& b) {
  if (b.weight == T(0)) return;
  if (a.weight == T(0)) {
    a = b;
    return;
  }
  const T delta = b.mean - a.mean;
  const T weight = a.weight + b.weight;
  const T b_share = b.weight / weight;
  a.mean += delta * b_share;
  a.m2 += b.m2 + delta * delta * a.weight * b_share;
  a.weight = weight;
}
template <class T, int N>
struct WelfordVec {
  Vec<T, N> mean;
  Vec<T, N> m2;
  Vec<T, N> weight;
};
// Lanes >= count (masked tails) are left unchanged.
template <class T, int N>
inline void welford_update(WelfordVec<T, N>& w, const Vec<T, N>& x, int64_t count = N) {
  const Vec<T, N> weight = w.weight + Vec<T, N>(T(1));
  const Vec<T, N> delta = x - w.mean;
  const Vec<T, N> mean = w.mean + delta / weight;
  const Vec<T, N> m2 = w.m2 + delta * (x - mean);
  w.weight = Vec<T, N>::set(w.weight, weight, count);
  w.mean = Vec<T, N>::set(w.mean, mean, count);
  w.m2 = Vec<T, N>::set(w.m2, m2, count);
}
template <class T, int N>
inline Welford<T> welford_reduce(const WelfordVec<T, N>& w) {
  Welford<T> total;
  for (int l = 0; l < N; ++l) welford_combine(total, Welford<T>{w.mean[l], w.m2[l], w.weight[l]});
  return total;
}

// ---- Blocked float sums (codegen/cascade_sum.h) ----
// Adds a block sum into its double outer accumulator and restarts the block at +0.
inline void cascade_fold(double& outer, float& block) {
  outer += block;
  block = 0.0f;
}

// The outer accumulator of a blocked vector sum: one double per lane.
template <int N = native_lanes<float>()>
struct VecSumOuter {
  double lane[N] = {};

  // Adds the block accumulator in and restarts it at +0.
  void fold(Vec<float, N>& block) {
    alignas(64) float b[N];
    block.store(b);
    for (int l = 0; l < N; ++l) lane[l] += b[l];
    block = Vec<float, N>(0.0f);
  }
  // The sum of all lanes, rounded once to float.
  float total() const {
    double s = 0.0;
    for (int l = 0; l < N; ++l) s += lane[l];
    return static_cast<float>(s);
  }
  // Each lane rounded to float (one output per lane).
  Vec<float, N> lanes() const {
    alignas(64) float f[N];
    for (int l = 0; l < N; ++l) f[l] = static_cast<float>(lane[l]);
    return Vec<float, N>::load(f);
  }
};

}  // namespace stax
