// stax::Vec<T, N>: N lanes of T (N one of 1, 2, 4, 8, 16, 32, 64), as Vec<T,N>::kRegs machine
// registers of kRegLanes lanes (the widest register of the level that N fills; below that a
// plain lane array); Vec<bool, N> is a lane mask held as N bits. Loads, stores, gathers,
// scatters, arange, set and lane access (docs/kernel_header_api.md, "Vectors").
// Included by stax_kernel.h after the register layers; not meant to be included directly.
#pragma once

#include <cstdint>

#include "stax_kernel_reg_generic.h"

namespace stax {

namespace detail {

// Bytes of the widest machine vector of the level (0: none).
#if defined(STAX_SIMD_AVX512)
inline constexpr int kVectorBytes = 64;
#elif defined(STAX_SIMD_AVX2)
inline constexpr int kVectorBytes = 32;
#else
inline constexpr int kVectorBytes = 0;
#endif

// Lanes per register of a Vec<T, n>: a full 64- or 32-byte register when n fills one, else n
// lanes in one generic register.
template <class T>
constexpr int reg_lanes(int n) {
  constexpr int size = static_cast<int>(sizeof(T));
  if (kVectorBytes >= 64 && n >= 64 / size) return 64 / size;
  if (kVectorBytes >= 32 && n >= 32 / size) return 32 / size;
  return n;
}

struct Uninitialized {};

template <class S, class T>
inline constexpr bool kLoadable = kSame<S, T> || (kSame<T, float> && kIsStorage16<S>);

}  // namespace detail

// The natural vector width of T at this level: one machine register (scalar level: 1).
template <class T>
constexpr int native_lanes() {
  return detail::kVectorBytes == 0 ? 1 : detail::kVectorBytes / static_cast<int>(sizeof(T));
}

template <class T, int N>
struct Vec;

// ---- Lane masks ----
template <int N>
struct Vec<bool, N> {
  static_assert(N >= 1 && N <= 64 && (N & (N - 1)) == 0, "Vec lanes: a power of two <= 64");
  static constexpr uint64_t kAll = detail::low_bits(N);
  uint64_t bits;  // bit l is lane l; bits >= N are 0

  static constexpr int size() { return N; }
  Vec() : bits(0) {}
  Vec(bool x) : bits(x ? kAll : 0) {}
  static Vec from_bits(uint64_t b) {
    Vec v;
    v.bits = b & kAll;
    return v;
  }
  bool operator[](int l) const { return (bits >> l) & 1; }

  static Vec load(const bool* p) { return load(p, N); }
  static Vec load(const bool* p, int64_t count) {
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(p);
    uint64_t b = 0;
    for (int l = 0; l < N && l < count; ++l) b |= static_cast<uint64_t>(bytes[l] != 0) << l;
    return from_bits(b);
  }
  static Vec load_strided(const bool* p, int64_t stride, int64_t count = N) {
    uint64_t b = 0;
    for (int l = 0; l < N && l < count; ++l) b |= static_cast<uint64_t>(p[l * stride]) << l;
    return from_bits(b);
  }
  template <class I>
  static Vec gather(const bool* p, const Vec<I, N>& offsets, int64_t count = N);
  static Vec load_masked(const bool* p, const Vec& mask) {
    uint64_t b = 0;
    for (int l = 0; l < N; ++l) {
      if (mask[l]) b |= static_cast<uint64_t>(p[l]) << l;
    }
    return from_bits(b);
  }
  template <class I>
  static Vec gather_masked(const bool* p, const Vec<I, N>& offsets, const Vec& mask);
  static Vec set(const Vec& a, const Vec& b, int64_t count) {
    const uint64_t take_b = detail::low_bits(count < 0   ? 0
                                             : count > N ? N
                                                         : static_cast<int>(count));
    return from_bits((b.bits & take_b) | (a.bits & ~take_b));
  }

  void store(bool* p, int64_t count = N) const {
    for (int l = 0; l < N && l < count; ++l) p[l] = (bits >> l) & 1;
  }
  void store_strided(bool* p, int64_t stride, int64_t count = N) const {
    for (int l = 0; l < N && l < count; ++l) p[l * stride] = (bits >> l) & 1;
  }
  template <class I>
  void scatter(bool* p, const Vec<I, N>& offsets, int64_t count = N) const;
  void store_stream(bool* p) const { store(p); }

  // Pre-kernel-IR names (stax_kernel_legacy.h).
  static Vec load_bytes(const bool* p, int64_t count = N) { return load(p, count); }
  void store_bytes(bool* p, int64_t count = N) const { store(p, count); }
  template <class F>
  static Vec from_lanes(F f, int64_t count = N) {
    uint64_t b = 0;
    for (int l = 0; l < N && l < count; ++l)
      b |= static_cast<uint64_t>(static_cast<bool>(f(int64_t{l}))) << l;
    return from_bits(b);
  }

  friend Vec operator&(const Vec& a, const Vec& b) { return from_bits(a.bits & b.bits); }
  friend Vec operator|(const Vec& a, const Vec& b) { return from_bits(a.bits | b.bits); }
  friend Vec operator^(const Vec& a, const Vec& b) { return from_bits(a.bits ^ b.bits); }
  friend Vec operator!(const Vec& a) { return from_bits(~a.bits); }
  friend Vec operator~(const Vec& a) { return from_bits(~a.bits); }
};

// ---- Value vectors ----
template <class T, int N>
struct Vec {
  static_assert(N >= 1 && N <= 64 && (N & (N - 1)) == 0, "Vec lanes: a power of two <= 64");
  static constexpr int kRegLanes = detail::reg_lanes<T>(N);
  static constexpr int kRegs = N / kRegLanes;
  using Reg = detail::Reg<T, kRegLanes>;
  Reg reg[kRegs];

  static constexpr int size() { return N; }
  explicit Vec(detail::Uninitialized) {}
  Vec() {
    for (int k = 0; k < kRegs; ++k) reg[k] = Reg::zero();
  }
  Vec(T x) {
    for (int k = 0; k < kRegs; ++k) reg[k] = Reg::broadcast(x);
  }

  // Lane l (not for hot loops).
  T operator[](int l) const {
    alignas(64) T x[N];
    store(x);
    return x[l];
  }
  static Vec from_array(const T* x) {
    Vec v{detail::Uninitialized{}};
    for (int k = 0; k < kRegs; ++k) v.reg[k] = Reg::load(x + k * kRegLanes);
    return v;
  }

  // N contiguous elements; S is T, or Half / BFloat16 for a float vector (exact).
  template <class S>
  static Vec load(const S* p) {
    static_assert(detail::kLoadable<S, T>, "load: pointer type does not match the vector");
    if constexpr (detail::kSame<S, T>) {
      return from_array(p);
    } else {
      return load_storage16(p, N);
    }
  }
  // Lanes >= count are zero; nothing past p[count - 1] is read.
  template <class S>
  static Vec load(const S* p, int64_t count) {
    static_assert(detail::kLoadable<S, T>, "load: pointer type does not match the vector");
    if constexpr (detail::kSame<S, T>) {
      if (count >= N) return from_array(p);
      Vec v{detail::Uninitialized{}};
      for (int k = 0; k < kRegs; ++k)
        v.reg[k] = Reg::load_partial(p + k * kRegLanes, count - k * kRegLanes);
      return v;
    } else {
      return load_storage16(p, count);
    }
  }
  template <class S>
  static Vec load_strided(const S* p, int64_t stride, int64_t count = N) {
    static_assert(detail::kLoadable<S, T>, "load_strided: pointer type does not match the vector");
    alignas(64) T x[N];
    for (int l = 0; l < N; ++l) x[l] = l < count ? static_cast<T>(p[l * stride]) : T(0);
    return from_array(x);
  }
  template <class S, class I>
  static Vec gather(const S* p, const Vec<I, N>& offsets, int64_t count = N) {
    static_assert(detail::kLoadable<S, T>, "gather: pointer type does not match the vector");
    alignas(64) I o[N];
    offsets.store(o);
    alignas(64) T x[N];
    for (int l = 0; l < N; ++l) x[l] = l < count ? static_cast<T>(p[o[l]]) : T(0);
    return from_array(x);
  }
  template <class S>
  static Vec load_masked(const S* p, const Vec<bool, N>& mask) {
    static_assert(detail::kLoadable<S, T>, "load_masked: pointer type does not match the vector");
    // A mask of one value across the vector (a concatenation split at a multiple of the vector
    // width, a pad's interior) takes the plain load or no load at all: only a vector straddling
    // the boundary pays for the lane-by-lane path.
    if (mask.bits == Vec<bool, N>::kAll) return load(p);
    if (mask.bits == 0) return Vec(T(0));
    alignas(64) T x[N];
    for (int l = 0; l < N; ++l) x[l] = mask[l] ? static_cast<T>(p[l]) : T(0);
    return from_array(x);
  }
  template <class S, class I>
  static Vec gather_masked(const S* p, const Vec<I, N>& offsets, const Vec<bool, N>& mask) {
    static_assert(detail::kLoadable<S, T>, "gather_masked: pointer type does not match the vector");
    if (mask.bits == 0) return Vec(T(0));  // as load_masked: nothing to read
    alignas(64) I o[N];
    offsets.store(o);
    alignas(64) T x[N];
    for (int l = 0; l < N; ++l) x[l] = mask[l] ? static_cast<T>(p[o[l]]) : T(0);
    return from_array(x);
  }
  // Lane l = start + l * step (wrapping in T).
  static Vec arange(T start, T step) {
    alignas(64) T x[N];
    for (int l = 0; l < N; ++l) x[l] = op_add(start, op_mul(static_cast<T>(l), step));
    return from_array(x);
  }
  // Lanes < count from b, the others from a.
  static Vec set(const Vec& a, const Vec& b, int64_t count) {
    if (count >= N) return b;
    const uint64_t take_b = detail::low_bits(count < 0 ? 0 : static_cast<int>(count));
    Vec v{detail::Uninitialized{}};
    for (int k = 0; k < kRegs; ++k) {
      v.reg[k] = reg_select(take_b >> (k * kRegLanes), b.reg[k], a.reg[k]);
    }
    return v;
  }

  template <class S>
  void store(S* p) const {
    static_assert(detail::kLoadable<S, T>, "store: pointer type does not match the vector");
    if constexpr (detail::kSame<S, T>) {
      for (int k = 0; k < kRegs; ++k) reg[k].store(p + k * kRegLanes);
    } else {
      store_storage16(p, N);
    }
  }
  // Only lanes < count are written.
  template <class S>
  void store(S* p, int64_t count) const {
    static_assert(detail::kLoadable<S, T>, "store: pointer type does not match the vector");
    if constexpr (detail::kSame<S, T>) {
      if (count >= N) return store(p);
      for (int k = 0; k < kRegs; ++k)
        reg[k].store_partial(p + k * kRegLanes, count - k * kRegLanes);
    } else {
      store_storage16(p, count);
    }
  }
  template <class S>
  void store_strided(S* p, int64_t stride, int64_t count = N) const {
    static_assert(detail::kLoadable<S, T>, "store_strided: pointer type does not match the vector");
    alignas(64) T x[N];
    store(x);
    for (int l = 0; l < N && l < count; ++l) p[l * stride] = S(x[l]);
  }
  template <class S, class I>
  void scatter(S* p, const Vec<I, N>& offsets, int64_t count = N) const {
    static_assert(detail::kLoadable<S, T>, "scatter: pointer type does not match the vector");
    alignas(64) T x[N];
    alignas(64) I o[N];
    store(x);
    offsets.store(o);
    for (int l = 0; l < N && l < count; ++l) p[o[l]] = S(x[l]);
  }
  // A full store that bypasses the caches where the level has one (see store_stream_reg).
  void store_stream(T* p) const {
    for (int k = 0; k < kRegs; ++k) store_stream_reg(reg[k], p + k * kRegLanes);
  }

  // Pre-kernel-IR names (stax_kernel_legacy.h).
  static Vec loadu(const T* p) { return load(p); }
  static Vec loadu(const T* p, int64_t count) { return load(p, count); }
  template <class F>
  static Vec from_lanes(F f, int64_t count = N) {
    alignas(64) T x[N];
    for (int l = 0; l < N; ++l) x[l] = l < count ? static_cast<T>(f(int64_t{l})) : T(0);
    return from_array(x);
  }

  // Operators with the op semantics (integers wrap); hidden friends, so a scalar operand
  // converts (broadcasts) implicitly.
  friend Vec operator+(const Vec& a, const Vec& b) { return op_add(a, b); }
  friend Vec operator-(const Vec& a, const Vec& b) { return op_sub(a, b); }
  friend Vec operator*(const Vec& a, const Vec& b) { return op_mul(a, b); }
  friend Vec operator/(const Vec& a, const Vec& b) { return op_div(a, b); }
  friend Vec operator-(const Vec& a) { return op_neg(a); }
  Vec& operator+=(const Vec& o) { return *this = op_add(*this, o); }
  Vec& operator-=(const Vec& o) { return *this = op_sub(*this, o); }
  Vec& operator*=(const Vec& o) { return *this = op_mul(*this, o); }
  Vec& operator/=(const Vec& o) { return *this = op_div(*this, o); }

 private:
  // Register by register through load16 / store16 (F16C / AVX-512 forms where the level has
  // them, else the scalar conversions of stax_kernel_half.h).
  template <class S>
  static Vec load_storage16(const S* p, int64_t count) {
    Vec v{detail::Uninitialized{}};
    for (int k = 0; k < kRegs; ++k) {
      v.reg[k] = load16(detail::Tag<Reg>{}, p + k * kRegLanes, count - k * kRegLanes);
    }
    return v;
  }
  template <class S>
  void store_storage16(S* p, int64_t count) const {
    for (int k = 0; k < kRegs; ++k) store16(reg[k], p + k * kRegLanes, count - k * kRegLanes);
  }
};

namespace detail {
// Generic registers have no streaming store: an ordinary one.
template <class R>
inline void store_stream_reg(const R& r, typename R::Elem* p) {
  r.store(p);
}
// Lanes [0, count) of a float register from / to 16-bit storage, lane by lane.
template <class R, class S>
inline R load16(Tag<R>, const S* p, int64_t count) {
  alignas(64) float x[R::kLanes];
  for (int l = 0; l < R::kLanes; ++l) x[l] = l < count ? static_cast<float>(p[l]) : 0.0f;
  return R::load(x);
}
template <class R, class S>
inline void store16(const R& r, S* p, int64_t count) {
  alignas(64) float x[R::kLanes];
  r.store(x);
  for (int l = 0; l < R::kLanes && l < count; ++l) p[l] = S(x[l]);
}
// A float register rounded to S and widened back: store16 then load16 (the levels with
// register conversions overload it to stay in the register).
template <class R, class S>
inline R round16(const R& r, Tag<S>) {
  alignas(64) S x[R::kLanes];
  store16(r, x, R::kLanes);
  return load16(Tag<R>{}, x, R::kLanes);
}
}  // namespace detail

template <int N>
template <class I>
inline Vec<bool, N> Vec<bool, N>::gather(const bool* p, const Vec<I, N>& offsets, int64_t count) {
  uint64_t b = 0;
  for (int l = 0; l < N && l < count; ++l) b |= static_cast<uint64_t>(p[offsets[l]]) << l;
  return from_bits(b);
}
template <int N>
template <class I>
inline Vec<bool, N> Vec<bool, N>::gather_masked(const bool* p, const Vec<I, N>& offsets,
                                                const Vec& mask) {
  uint64_t b = 0;
  for (int l = 0; l < N; ++l) {
    if (mask[l]) b |= static_cast<uint64_t>(p[offsets[l]]) << l;
  }
  return from_bits(b);
}
template <int N>
template <class I>
inline void Vec<bool, N>::scatter(bool* p, const Vec<I, N>& offsets, int64_t count) const {
  for (int l = 0; l < N && l < count; ++l) p[offsets[l]] = (bits >> l) & 1;
}

}  // namespace stax
