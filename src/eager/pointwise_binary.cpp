// Eager binary pointwise ops: add/sub (alpha), mul, div (rounding_mode), remainder, fmod,
// floor_divide, pow, maximum/minimum (NaN-propagating), fmax/fmin, atan2, hypot, copysign,
// comparisons, logical and bitwise ops, shifts, where and the dtype casts. Semantics are
// PyTorch's CPU kernels, checked against torch 2.13.0 (tests/eager/test_pointwise_ops.cpp):
//  - alpha is converted to the computation dtype (bf16(0.7) for a bf16 add) and applied with
//    one rounding (a + alpha * b is a fused multiply-add in PyTorch's float kernels);
//  - integer division, remainder and fmod by zero throw ZeroDivisionError; INT_MIN // -1
//    wraps to INT_MIN; remainder takes the divisor's sign, fmod the dividend's;
//  - float floor division is Python's (-0.0 and inf kept: 5 // 0 = inf, inf // 2 = nan);
//  - shifts by a negative count or >= the bit width give 0 for << and the sign for >>;
//  - integers to negative integer powers: 1 -> 1, -1 -> +-1, others 0 (pow.Tensor_Tensor).
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>

#include "eager/elementwise.h"

namespace stax::eager::detail {

namespace {

template <typename T>
constexpr bool kInt = std::is_same_v<T, int64_t>;

template <typename T>
using Tag = std::type_identity<T>;

template <typename T>
T nan_value() {
  return std::numeric_limits<T>::quiet_NaN();
}

// Python's floor division of floats (rounds toward -inf; exact cases stay exact).
template <typename T>
T float_floor_divide(T a, T b) {
  if (b == T(0)) return a / b;
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  if (div == T(0)) return std::copysign(T(0), a / b);
  T floored = std::floor(div);
  if (div - floored > T(0.5)) floored += T(1);
  return floored;
}

// Integer division family; b == 0 throws, b == -1 avoids the INT64_MIN / -1 trap (wrapping).
int64_t int_trunc_div(const ir::Node& node, int64_t a, int64_t b) {
  if (b == 0) throw zero_division(node);
  if (b == -1) return wrapping_sub(0, a);
  return a / b;
}
int64_t int_floor_div(const ir::Node& node, int64_t a, int64_t b) {
  if (b == 0) throw zero_division(node);
  if (b == -1) return wrapping_sub(0, a);
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
int64_t int_remainder(const ir::Node& node, int64_t a, int64_t b) {
  if (b == 0) throw zero_division(node);
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
int64_t int_fmod(const ir::Node& node, int64_t a, int64_t b) {
  if (b == 0) throw zero_division(node);
  if (b == -1) return 0;
  return a % b;
}

template <typename T>
T float_remainder(T a, T b) {
  T mod = std::fmod(a, b);
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) mod += b;
  return mod;
}

int64_t int_power(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent & 1) ? -1 : 1;
    return 0;
  }
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = wrapping_mul(result, base);
    base = wrapping_mul(base, base);
    exponent >>= 1;
  }
  return result;
}

Tensor eval_add_sub(const Env& env, const ir::Node& node) {
  const DType c = compute_dtype(env, node);
  const ir::Scalar alpha = ir::scalar_arg(node, 2);
  const bool negate = node.op == "sub";
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    T al = scalar_param<T>(alpha, c, /*to_dtype=*/true);
    if constexpr (kInt<T>) {
      const int64_t scaled = wrapping_mul(al, b);
      return negate ? wrapping_sub(a, scaled) : wrapping_add(a, scaled);
    } else {
      if (negate) al = -al;
      return al == T(1) ? a + b : std::fma(b, al, a);
    }
  });
}

Tensor eval_mul(const Env& env, const ir::Node& node) {
  return map_elements<2>(
      env, node, {0, 1},
      []<typename T>(Tag<T>, T a, T b) -> T {
        if constexpr (kInt<T>) return wrapping_mul(a, b);
        else return a * b;
      },
      {false, true});
}

Tensor eval_div(const Env& env, const ir::Node& node) {
  const std::optional<std::string> mode = ir::string_arg(node, 2);
  return map_elements<2>(
      env, node, {0, 1},
      [&]<typename T>(Tag<T>, T a, T b) -> T {
        if constexpr (kInt<T>) {
          return *mode == "trunc" ? int_trunc_div(node, a, b) : int_floor_div(node, a, b);
        } else {
          if (!mode) return a / b;
          return *mode == "trunc" ? std::trunc(a / b) : float_floor_divide(a, b);
        }
      },
      {false, true});
}

Tensor eval_floor_divide(const Env& env, const ir::Node& node) {
  return map_elements<2>(
      env, node, {0, 1},
      [&]<typename T>(Tag<T>, T a, T b) -> T {
        if constexpr (kInt<T>) return int_floor_div(node, a, b);
        else return float_floor_divide(a, b);
      },
      {false, true});
}

Tensor eval_remainder(const Env& env, const ir::Node& node) {
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    if constexpr (kInt<T>) return int_remainder(node, a, b);
    else return float_remainder(a, b);
  });
}

Tensor eval_fmod(const Env& env, const ir::Node& node) {
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    if constexpr (kInt<T>) return int_fmod(node, a, b);
    else return std::fmod(a, b);
  });
}

Tensor eval_pow(const Env& env, const ir::Node& node) {
  const bool scalar_exponent = !ir::is_tensor_arg(node, 1);
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    if constexpr (kInt<T>) {
      return int_power(a, b);
    } else {
      if (scalar_exponent) {
        // pow.Tensor_Scalar's special exponents (exact, no call to pow).
        if (b == T(2)) return a * a;
        if (b == T(3)) return a * a * a;
        if (b == T(0.5)) return std::sqrt(a);
        if (b == T(-0.5)) return T(1) / std::sqrt(a);
        if (b == T(-1)) return T(1) / a;
        if (b == T(-2)) return T(1) / (a * a);
      }
      return std::pow(a, b);
    }
  });
}

template <bool kMax>
Tensor eval_extremum(const Env& env, const ir::Node& node) {
  const bool ignore_nan = node.op == "fmax" || node.op == "fmin";
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    if constexpr (!kInt<T>) {
      if (ignore_nan) return kMax ? std::fmax(a, b) : std::fmin(a, b);
      if (std::isnan(a) || std::isnan(b)) return nan_value<T>();
    }
    return kMax ? std::max(a, b) : std::min(a, b);
  });
}

Tensor eval_float_binary(const Env& env, const ir::Node& node) {
  const std::string& op = node.op;
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    if constexpr (kInt<T>) {
      throw std::logic_error("eager: " + op + " computed on integers");
    } else {
      if (op == "atan2") return std::atan2(a, b);
      if (op == "hypot") return std::hypot(a, b);
      return std::copysign(a, b);
    }
  });
}

template <typename Cmp>
Tensor eval_compare(const Env& env, const ir::Node& node, Cmp cmp) {
  return map_elements<2>(env, node, {0, 1},
                         [&]<typename T>(Tag<T>, T a, T b) -> bool { return cmp(a, b); });
}

Tensor eval_logical(const Env& env, const ir::Node& node) {
  const std::string& op = node.op;
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> bool {
    const bool x = a != T(0);
    const bool y = b != T(0);
    if (op == "logical_and") return x && y;
    if (op == "logical_or") return x || y;
    return x != y;
  });
}

Tensor eval_bitwise(const Env& env, const ir::Node& node) {
  const std::string& op = node.op;
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    if constexpr (!kInt<T>) {
      throw std::logic_error("eager: " + op + " computed on floats");
    } else {
      if (op == "bitwise_and") return a & b;
      if (op == "bitwise_or") return a | b;
      if (op == "bitwise_xor") return a ^ b;
      if (op == "bitwise_left_shift") {
        // The low bits of a << b (b < 64) are those of the narrow dtype's shift; counts
        // outside [0, 64) leave no bits.
        if (b < 0 || b >= 64) return 0;
        return static_cast<int64_t>(static_cast<uint64_t>(a) << b);
      }
      if (b < 0 || b >= 64) return a < 0 ? -1 : 0;
      return a >> b;
    }
  });
}

Tensor eval_where(const Env& env, const ir::Node& node) {
  // The bool condition reads as 1 or 0 in the computation type.
  return map_elements<3>(env, node, {0, 1, 2}, []<typename T>(Tag<T>, T cond, T a, T b) -> T {
    return cond != T(0) ? a : b;
  });
}

Tensor eval_cast(const Env& env, const ir::Node& node) {
  const ir::TensorType& type = env.result_type(node);
  const Tensor& in = env.tensor(node, 0);
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  const DType to = type.dtype;
  for (int64_t p = 0; p < out.numel(); ++p) {
    const std::vector<int64_t> index = unravel_index(p, type.sizes);
    if (is_floating(in.dtype())) {
      const double v = in.get(index);
      if (is_floating(to)) {
        out.set(index, float_to_float(v, to));
      } else {
        store_int(out, index, float_to_int(v, to));
      }
    } else {
      const int64_t v = load_int(in, index);
      if (is_floating(to)) {
        out.set(index, int_to_float(v, to));
      } else {
        store_int(out, index, wrap_int(v, to));
      }
    }
  }
  return out;
}

}  // namespace

EvalFn find_binary_eval(std::string_view op) {
  static const std::unordered_map<std::string_view, EvalFn> table = {
      {"add", eval_add_sub},
      {"sub", eval_add_sub},
      {"mul", eval_mul},
      {"div", eval_div},
      {"floor_divide", eval_floor_divide},
      {"remainder", eval_remainder},
      {"fmod", eval_fmod},
      {"pow", eval_pow},
      {"maximum", eval_extremum<true>},
      {"minimum", eval_extremum<false>},
      {"fmax", eval_extremum<true>},
      {"fmin", eval_extremum<false>},
      {"atan2", eval_float_binary},
      {"hypot", eval_float_binary},
      {"copysign", eval_float_binary},
      {"eq", [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a == b; });
       }},
      {"ne", [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a != b; });
       }},
      {"lt", [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a < b; });
       }},
      {"le", [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a <= b; });
       }},
      {"gt", [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a > b; });
       }},
      {"ge", [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a >= b; });
       }},
      {"logical_and", eval_logical},
      {"logical_or", eval_logical},
      {"logical_xor", eval_logical},
      {"bitwise_and", eval_bitwise},
      {"bitwise_or", eval_bitwise},
      {"bitwise_xor", eval_bitwise},
      {"bitwise_left_shift", eval_bitwise},
      {"bitwise_right_shift", eval_bitwise},
      {"where", eval_where},
      {"_to_copy", eval_cast},
      {"convert_element_type", eval_cast},
  };
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

EvalFn find_pointwise_eval(std::string_view op) {
  if (EvalFn f = find_binary_eval(op)) return f;
  return find_unary_eval(op);
}

}  // namespace stax::eager::detail
