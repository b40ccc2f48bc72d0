// Test kernel for the data-movement, 16-bit storage, reduction and error-check parts of the
// kernel-header API (docs/kernel_header_api.md). Not built by CMake: the runtime tests
// JIT-compile it at every SIMD level and compare with plain host loops.
#include "stax_kernel.h"

using namespace stax;

namespace {

#define DTYPES(X) X(bool) X(int8_t) X(uint8_t) X(int16_t) X(int32_t) X(int64_t) X(float) X(double)

// Loop in vectors of N with a counted tail; body(i, count) handles elements [i, i + count).
template <int N, class F>
void chunks(int64_t n, F body) {
  int64_t i = 0;
  for (; i + N <= n; i += N) body(i, int64_t{N});
  if (i < n) body(i, n - i);
}

// Data movement case `which` on T at width N (see the host test for the expected results).
template <class T, int N>
int moves(int which, const T* src, const int64_t* offsets, const bool* mask, int64_t n, T* out) {
  using V = Vec<T, N>;
  using I64 = Vec<int64_t, N>;
  using M = Vec<bool, N>;
  switch (which) {
    case 0:  // out[i] = src[3 i]
      chunks<N>(
          n, [&](int64_t i, int64_t c) { V::load_strided(src + 3 * i, 3, c).store(out + i, c); });
      return 1;
    case 1:  // out[i] = src[offsets[i]], int64 offsets
      chunks<N>(n, [&](int64_t i, int64_t c) {
        V::gather(src, I64::load(offsets + i, c), c).store(out + i, c);
      });
      return 1;
    case 2:  // the same with int32 offsets
      chunks<N>(n, [&](int64_t i, int64_t c) {
        V::gather(src, convert<int32_t>(I64::load(offsets + i, c)), c).store(out + i, c);
      });
      return 1;
    case 3:  // out[i] = mask[i] ? src[i] : 0
      chunks<N>(n, [&](int64_t i, int64_t c) {
        V::load_masked(src + i, M::load(mask + i, c)).store(out + i, c);
      });
      return 1;
    case 4:  // out[i] = mask[i] ? src[offsets[i]] : 0
      chunks<N>(n, [&](int64_t i, int64_t c) {
        V::gather_masked(src, I64::load(offsets + i, c), M::load(mask + i, c)).store(out + i, c);
      });
      return 1;
    case 5:  // out[3 i] = src[i]
      chunks<N>(
          n, [&](int64_t i, int64_t c) { V::load(src + i, c).store_strided(out + 3 * i, 3, c); });
      return 1;
    case 6:  // out[offsets[i]] = src[i]
      chunks<N>(n, [&](int64_t i, int64_t c) {
        V::load(src + i, c).scatter(out, I64::load(offsets + i, c), c);
      });
      return 1;
    case 7: {  // streaming stores of whole vectors (out 64-byte aligned, n a multiple of N)
      for (int64_t i = 0; i + N <= n; i += N) V::load(src + i).store_stream(out + i);
      stream_fence();
      return 1;
    }
    case 8:  // out[i] = set(src, 0, count = i % (N + 1)) lanes, vector by vector
      chunks<N>(n, [&](int64_t i, int64_t c) {
        V::set(V::load(src + i, c), V(), (i / N) % (N + 1)).store(out + i, c);
      });
      return 1;
    case 9:  // out[i] = lane (i % N) read with v[l]
      chunks<N>(n, [&](int64_t i, int64_t c) {
        const V v = V::load(src + i, c);
        for (int64_t l = 0; l < c; ++l) out[i + l] = v[static_cast<int>(l)];
      });
      return 1;
  }
  return 0;
}

template <class T, int N>
int arange_case(int64_t start, int64_t step, int64_t n, T* out) {
  chunks<N>(n, [&](int64_t i, int64_t c) {
    Vec<T, N>::arange(static_cast<T>(start + i * step), static_cast<T>(step)).store(out + i, c);
  });
  return 1;
}

// Lane reductions over x[0..n): out holds the result(s) as T (sum/prod/max/min), bool
// (any/all), T + int64 (arg), or 3 doubles (Welford mean, m2, weight).
template <class T, int N>
int reduce(int which, const T* x, int64_t n, void* out) {
  using V = Vec<T, N>;
  if constexpr (detail::kSame<T, bool>) {
    V any(false), all(true);
    chunks<N>(n, [&](int64_t i, int64_t c) {
      const V v = V::load(x + i, c);
      any = any | v;
      all = V::set(all, all & v, c);
    });
    *static_cast<bool*>(out) = which == 0 ? reduce_any(any) : reduce_all(all);
    if (which == 2 || which == 3) {
      V best(which == 2 ? false : true);
      Vec<int64_t, N> best_index(0);
      chunks<N>(n, [&](int64_t i, int64_t c) {
        V v = V::load(x + i, c);
        const Vec<int64_t, N> idx = Vec<int64_t, N>::arange(i, 1);
        V b = best;
        Vec<int64_t, N> bi = best_index;
        if (which == 2)
          argmax_update(b, bi, v, idx);
        else
          argmin_update(b, bi, v, idx);
        best = V::set(best, b, c);
        best_index = Vec<int64_t, N>::set(best_index, bi, c);
      });
      bool value;
      int64_t index;
      if (which == 2)
        reduce_argmax(best, best_index, value, index);
      else
        reduce_argmin(best, best_index, value, index);
      static_cast<int64_t*>(out)[0] = value;
      static_cast<int64_t*>(out)[1] = index;
    }
    return 1;
  } else {
    if (which <= 3) {
      const T init = which == 0   ? T(0)
                     : which == 1 ? T(1)
                     : which == 2 ? detail::min_value<T>()
                                  : detail::max_value<T>();
      V acc(init);
      chunks<N>(n, [&](int64_t i, int64_t c) {
        const V v = V::load(x + i, c);
        const V next = which == 0   ? op_add(acc, v)
                       : which == 1 ? op_mul(acc, v)
                       : which == 2 ? op_maximum(acc, v)
                                    : op_minimum(acc, v);
        acc = V::set(acc, next, c);
      });
      *static_cast<T*>(out) = which == 0   ? reduce_sum(acc)
                              : which == 1 ? reduce_prod(acc)
                              : which == 2 ? reduce_max(acc)
                                           : reduce_min(acc);
      return 1;
    }
    if (which == 4 || which == 5) {
      V best(which == 4 ? detail::min_value<T>() : detail::max_value<T>());
      Vec<int64_t, N> best_index(0);
      chunks<N>(n, [&](int64_t i, int64_t c) {
        const V v = V::load(x + i, c);
        const Vec<int64_t, N> idx = Vec<int64_t, N>::arange(i, 1);
        V b = best;
        Vec<int64_t, N> bi = best_index;
        if (which == 4)
          argmax_update(b, bi, v, idx);
        else
          argmin_update(b, bi, v, idx);
        best = V::set(best, b, c);
        best_index = Vec<int64_t, N>::set(best_index, bi, c);
      });
      T value;
      int64_t index;
      if (which == 4)
        reduce_argmax(best, best_index, value, index);
      else
        reduce_argmin(best, best_index, value, index);
      *static_cast<T*>(out) = value;
      __builtin_memcpy(static_cast<char*>(out) + 8, &index, 8);
      return 1;
    }
    if constexpr (detail::kIsFloat<T>) {
      if (which == 6) {
        WelfordVec<T, N> w{V(), V(), V()};
        chunks<N>(n, [&](int64_t i, int64_t c) { welford_update(w, V::load(x + i, c), c); });
        const Welford<T> total = welford_reduce(w);
        double* d = static_cast<double*>(out);
        d[0] = total.mean;
        d[1] = total.m2;
        d[2] = total.weight;
        // The scalar form over the same values.
        Welford<T> scalar;
        for (int64_t i = 0; i < n; ++i) welford_update(scalar, x[i]);
        d[3] = scalar.mean;
        d[4] = scalar.m2;
        d[5] = scalar.weight;
        return 1;
      }
    }
  }
  return 0;
}

template <class T, int N>
int errors(const T* x, int64_t n, int64_t lo, int64_t hi, int* out) {
  out[0] = 0;
  out[1] = 0;
  chunks<N>(n, [&](int64_t i, int64_t c) {
    // A counted load zero-fills lanes >= c: those lanes must not be checked for zero.
    const Vec<T, N> v = Vec<T, N>::set(Vec<T, N>(T(1)), Vec<T, N>::load(x + i, c), c);
    out[0] |= any_zero(v);
    out[1] |= any_out_of_range(
        Vec<T, N>::set(Vec<T, N>(static_cast<T>(lo)), Vec<T, N>::load(x + i, c), c), lo, hi);
  });
  return 1;
}

}  // namespace

#define WIDTHS(T, CALL)                  \
  switch (width_kind) {                  \
    case 0:                              \
      return CALL(T, 16);                \
    case 1:                              \
      return CALL(T, native_lanes<T>()); \
    case 2:                              \
      return CALL(T, 64);                \
    case 4:                              \
      return CALL(T, 8);                 \
    default:                             \
      return CALL(T, 1);                 \
  }

STAX_KERNEL_EXPORT int stax_data_native_lanes(int dtype) {
  int k = 0;
#define LANES(T) \
  if (dtype == k++) return native_lanes<T>();
  DTYPES(LANES)
#undef LANES
  return 0;
}

STAX_KERNEL_EXPORT int stax_data_moves(int which, int dtype, int width_kind, const void* src,
                                       const int64_t* offsets, const bool* mask, int64_t n,
                                       void* out) {
  int k = 0;
#define MOVES(T, W) \
  moves<T, W>(which, static_cast<const T*>(src), offsets, mask, n, static_cast<T*>(out))
#define DTYPE(T) \
  if (dtype == k++) WIDTHS(T, MOVES)
  DTYPES(DTYPE)
#undef DTYPE
#undef MOVES
  return -1;
}

STAX_KERNEL_EXPORT int stax_data_arange(int is64, int width_kind, int64_t start, int64_t step,
                                        int64_t n, void* out) {
#define ARANGE(T, W) arange_case<T, W>(start, step, n, static_cast<T*>(out))
  if (is64) WIDTHS(int64_t, ARANGE)
  WIDTHS(int32_t, ARANGE)
#undef ARANGE
}

STAX_KERNEL_EXPORT int stax_data_reduce(int which, int dtype, int width_kind, const void* x,
                                        int64_t n, void* out) {
  int k = 0;
#define REDUCE(T, W) reduce<T, W>(which, static_cast<const T*>(x), n, out)
#define DTYPE(T) \
  if (dtype == k++) WIDTHS(T, REDUCE)
  DTYPES(DTYPE)
#undef DTYPE
#undef REDUCE
  return -1;
}

STAX_KERNEL_EXPORT int stax_data_errors(int dtype, int width_kind, const void* x, int64_t n,
                                        int64_t lo, int64_t hi, int* out) {
  int k = 0;
#define ERRORS(T, W) errors<T, W>(static_cast<const T*>(x), n, lo, hi, out)
#define DTYPE(T) \
  if (dtype == k++) WIDTHS(T, ERRORS)
  DTYPES(DTYPE)
#undef DTYPE
#undef ERRORS
  return -1;
}

// Float vectors stored to / loaded from Half (kind 0) or BFloat16 (kind 1), vector form with
// counted tails (vector_bits, vector_back) and scalar form (scalar_bits, scalar_back).
template <class S, int N>
void storage16(const float* in, uint16_t* vector_bits, float* vector_back, uint16_t* scalar_bits,
               float* scalar_back, int64_t n) {
  S* vs = reinterpret_cast<S*>(vector_bits);
  chunks<N>(n, [&](int64_t i, int64_t c) { Vec<float, N>::load(in + i, c).store(vs + i, c); });
  chunks<N>(
      n, [&](int64_t i, int64_t c) { Vec<float, N>::load(vs + i, c).store(vector_back + i, c); });
  for (int64_t i = 0; i < n; ++i) {
    const S s = in[i];
    scalar_bits[i] = s.bits;
    scalar_back[i] = convert<float>(S::from_bits(vector_bits[i]));
  }
}
STAX_KERNEL_EXPORT void stax_data_storage16(int kind, int width_kind, const float* in,
                                            uint16_t* vector_bits, float* vector_back,
                                            uint16_t* scalar_bits, float* scalar_back, int64_t n) {
#define STORAGE(S, W) storage16<S, W>(in, vector_bits, vector_back, scalar_bits, scalar_back, n)
  if (kind == 0) {
    WIDTHS(Half, STORAGE)
  }
  WIDTHS(BFloat16, STORAGE)
#undef STORAGE
}

// round_to<S> (kind 0: Half, 1: BFloat16) of float vectors with counted tails (vector_out)
// and of scalars (scalar_out).
template <class S, int N>
void round16(const float* in, float* vector_out, float* scalar_out, int64_t n) {
  chunks<N>(n, [&](int64_t i, int64_t c) {
    round_to<S>(Vec<float, N>::load(in + i, c)).store(vector_out + i, c);
  });
  for (int64_t i = 0; i < n; ++i) scalar_out[i] = round_to<S>(in[i]);
}
STAX_KERNEL_EXPORT void stax_data_round16(int kind, int width_kind, const float* in,
                                          float* vector_out, float* scalar_out, int64_t n) {
#define ROUND(S, W) round16<S, W>(in, vector_out, scalar_out, n)
  if (kind == 0) {
    WIDTHS(Half, ROUND)
  }
  WIDTHS(BFloat16, ROUND)
#undef ROUND
}

// transpose_tile<T, R, C> of a src with row stride src_stride into dst with row stride R + 3:
// 2 when the level's register transpose did it, 1 when the plain loops did.
template <class T, int R, int C>
int transpose_case(const void* src, int64_t src_stride, void* dst) {
  const T* s = static_cast<const T*>(src);
  T* d = static_cast<T*>(dst);
  if (detail::transpose_tile_registers<T, R, C>(s, src_stride, d, R + 3)) return 2;
  transpose_tile<T, R, C>(s, src_stride, d, R + 3);
  return 1;
}
STAX_KERNEL_EXPORT int stax_data_transpose(int which, const void* src, int64_t src_stride,
                                           void* dst) {
  switch (which) {
    case 0:
      return transpose_case<float, 16, 16>(src, src_stride, dst);
    case 1:
      return transpose_case<float, 8, 8>(src, src_stride, dst);
    case 2:
      return transpose_case<int32_t, 16, 16>(src, src_stride, dst);
    case 3:
      return transpose_case<int32_t, 8, 8>(src, src_stride, dst);
    case 4:
      return transpose_case<float, 5, 3>(src, src_stride, dst);
    case 5:
      return transpose_case<int64_t, 4, 7>(src, src_stride, dst);
    case 6:
      return transpose_case<double, 8, 8>(src, src_stride, dst);
    case 7:
      return transpose_case<double, 4, 4>(src, src_stride, dst);
    case 8:
      return transpose_case<int64_t, 8, 8>(src, src_stride, dst);
    case 9:
      return transpose_case<int64_t, 4, 4>(src, src_stride, dst);
    case 10:
      return transpose_case<BFloat16, 16, 16>(src, src_stride, dst);
    case 11:
      return transpose_case<Half, 16, 16>(src, src_stride, dst);
    case 12:
      return transpose_case<int16_t, 16, 16>(src, src_stride, dst);
    case 13:
      return transpose_case<int8_t, 16, 16>(src, src_stride, dst);
    case 14:
      return transpose_case<uint8_t, 16, 16>(src, src_stride, dst);
    case 15:
      return transpose_case<bool, 16, 16>(src, src_stride, dst);
  }
  return 0;
}
