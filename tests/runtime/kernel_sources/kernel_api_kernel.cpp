// Test kernel for the kernel-header API (docs/kernel_header_api.md). Not built by CMake: the
// runtime tests JIT-compile it at every SIMD level. For each element type and two vector
// widths (16 and the level's native width) every op runs in vector form (full vectors, then
// one counted tail) and in scalar form, so the host can require equal bits and check known
// PyTorch values; plus conversions, reductions, data movement and error checks.
#include "stax_kernel.h"

using namespace stax;

namespace {

// Op lists by operand kind (pointwise_ops.cpp); the host mirrors the order.
#define FLOAT_UNARY(X)                                                                            \
  X(reciprocal)                                                                                   \
  X(exp)                                                                                          \
  X(exp2)                                                                                         \
  X(expm1) X(log) X(log2) X(log10) X(log1p) X(sqrt) X(rsqrt) X(sin) X(cos) X(tan) X(asin) X(acos) \
      X(atan) X(sinh) X(cosh) X(tanh) X(asinh) X(acosh) X(atanh) X(erf) X(erfc) X(erfinv)         \
          X(sigmoid)
#define NUMERIC_UNARY(X) X(neg) X(abs) X(sign) X(relu) X(floor) X(ceil) X(round) X(trunc)
#define INTBOOL_UNARY(X) X(bitwise_not)
#define FLOAT_BINARY(X) X(div) X(atan2) X(hypot) X(copysign)
#define NUMERIC_BINARY(X) \
  X(add) X(sub) X(mul) X(truncdiv) X(floordiv) X(remainder) X(fmod) X(pow) X(fmax) X(fmin)
#define ANY_BINARY(X) X(maximum) X(minimum)
#define INTBOOL_BINARY(X) X(bitwise_and) X(bitwise_or) X(bitwise_xor)
#define INT_BINARY(X) X(shift_left) X(shift_right)
#define BOOL_BINARY(X) \
  X(logical_and) X(logical_or) X(logical_xor) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)
#define BOOL_UNARY(X) X(logical_not) X(isnan) X(isinf)

template <class T>
constexpr bool kFloat = detail::kIsFloat<T>;
template <class T>
constexpr bool kBool = detail::kSame<T, bool>;
template <class T>
constexpr bool kInt = detail::kIsInt<T>;

bool same(const char* a, const char* b) {
  return __builtin_strcmp(a, b) == 0;
}

// Runs `vec_op` over x, y [0..n) in vectors of N with a counted tail, and `scalar_op` per
// element. The condition c feeds where.
template <class T, int N, class R, class VecOp, class ScalarOp>
void run(const T* x, const T* y, const bool* c, R* vec_out, R* scalar_out, int64_t n, VecOp vec_op,
         ScalarOp scalar_op) {
  using V = Vec<T, N>;
  using M = Vec<bool, N>;
  int64_t i = 0;
  for (; i + N <= n; i += N)
    vec_op(V::load(x + i), V::load(y + i), M::load(c + i)).store(vec_out + i);
  if (i < n) {
    const int64_t k = n - i;
    vec_op(V::load(x + i, k), V::load(y + i, k), M::load(c + i, k)).store(vec_out + i, k);
  }
  for (int64_t j = 0; j < n; ++j) scalar_out[j] = scalar_op(x[j], y[j], c[j]);
}

// Op `op` on T at width N; 0 when the kernel has no such op for T.
template <class T, int N>
int apply(const char* op, const T* x, const T* y, const bool* c, void* vo, void* so, int64_t n) {
#define UN(name)                                                              \
  if (same(op, #name)) {                                                      \
    run<T, N>(                                                                \
        x, y, c, static_cast<T*>(vo), static_cast<T*>(so), n,                 \
        [](const auto& a, const auto&, const auto&) { return op_##name(a); }, \
        [](T a, T, bool) { return op_##name(a); });                           \
    return 1;                                                                 \
  }
#define BIN(name)                                                                  \
  if (same(op, #name)) {                                                           \
    run<T, N>(                                                                     \
        x, y, c, static_cast<T*>(vo), static_cast<T*>(so), n,                      \
        [](const auto& a, const auto& b, const auto&) { return op_##name(a, b); }, \
        [](T a, T b, bool) { return op_##name(a, b); });                           \
    return 1;                                                                      \
  }
#define UN_BOOL(name)                                                         \
  if (same(op, #name)) {                                                      \
    run<T, N>(                                                                \
        x, y, c, static_cast<bool*>(vo), static_cast<bool*>(so), n,           \
        [](const auto& a, const auto&, const auto&) { return op_##name(a); }, \
        [](T a, T, bool) { return op_##name(a); });                           \
    return 1;                                                                 \
  }
#define BIN_BOOL(name)                                                             \
  if (same(op, #name)) {                                                           \
    run<T, N>(                                                                     \
        x, y, c, static_cast<bool*>(vo), static_cast<bool*>(so), n,                \
        [](const auto& a, const auto& b, const auto&) { return op_##name(a, b); }, \
        [](T a, T b, bool) { return op_##name(a, b); });                           \
    return 1;                                                                      \
  }
  if constexpr (kFloat<T>) {
    FLOAT_UNARY(UN)
    FLOAT_BINARY(BIN)
  }
  if constexpr (!kBool<T>) {
    NUMERIC_UNARY(UN)
    NUMERIC_BINARY(BIN)
  }
  if constexpr (kBool<T> || kInt<T>) {
    INTBOOL_UNARY(UN)
    INTBOOL_BINARY(BIN)
  }
  if constexpr (kInt<T>) {
    INT_BINARY(BIN)
  }
  ANY_BINARY(BIN)
  BOOL_BINARY(BIN_BOOL)
  BOOL_UNARY(UN_BOOL)
  if (same(op, "where")) {
    run<T, N>(
        x, y, c, static_cast<T*>(vo), static_cast<T*>(so), n,
        [](const auto& a, const auto& b, const auto& m) { return op_where(m, a, b); },
        [](T a, T b, bool m) { return op_where(m, a, b); });
    return 1;
  }
  return 0;
#undef UN
#undef BIN
#undef UN_BOOL
#undef BIN_BOOL
}

// Element types in the host's order.
#define DTYPES(X) X(bool) X(int8_t) X(uint8_t) X(int16_t) X(int32_t) X(int64_t) X(float) X(double)

// convert<U> from T over n elements, vector (width N, counted tail) and scalar.
template <class T, class U, int N>
void convert_pair(const T* x, U* vo, U* so, int64_t n) {
  int64_t i = 0;
  for (; i + N <= n; i += N) convert<U>(Vec<T, N>::load(x + i)).store(vo + i);
  if (i < n) convert<U>(Vec<T, N>::load(x + i, n - i)).store(vo + i, n - i);
  for (int64_t j = 0; j < n; ++j) so[j] = convert<U>(x[j]);
}

template <class T, int N>
int convert_from(int to, const T* x, void* vo, void* so, int64_t n) {
  int k = 0;
#define TO(U)                                                              \
  if (to == k++) {                                                         \
    convert_pair<T, U, N>(x, static_cast<U*>(vo), static_cast<U*>(so), n); \
    return 1;                                                              \
  }
  DTYPES(TO)
#undef TO
  return 0;
}

}  // namespace

// Vector width kind: 0 = 16 lanes, 1 = the native width of the element type, 2 = 64, 3 = 1,
// 4 = 8.
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

STAX_KERNEL_EXPORT int stax_api_native_lanes(int dtype) {
  int k = 0;
#define LANES(T) \
  if (dtype == k++) return native_lanes<T>();
  DTYPES(LANES)
#undef LANES
  return 0;
}

STAX_KERNEL_EXPORT int stax_api_op(const char* op, int dtype, int width_kind, const void* x,
                                   const void* y, const bool* c, void* vo, void* so, int64_t n) {
  int k = 0;
#define APPLY(T, W) \
  apply<T, W>(op, static_cast<const T*>(x), static_cast<const T*>(y), c, vo, so, n)
#define DTYPE(T) \
  if (dtype == k++) WIDTHS(T, APPLY)
  DTYPES(DTYPE)
#undef DTYPE
#undef APPLY
  return -1;
}

STAX_KERNEL_EXPORT int stax_api_convert(int from, int to, int width_kind, const void* x, void* vo,
                                        void* so, int64_t n) {
  int k = 0;
#define CONVERT(T, W) convert_from<T, W>(to, static_cast<const T*>(x), vo, so, n)
#define DTYPE(T) \
  if (from == k++) WIDTHS(T, CONVERT)
  DTYPES(DTYPE)
#undef DTYPE
#undef CONVERT
  return -1;
}
