// Eager binary pointwise ops: add/sub (alpha), mul, div (rounding_mode), remainder, fmod,
// floor_divide, pow, maximum/minimum (NaN-propagating), fmax/fmin, atan2, hypot, copysign,
// comparisons, logical and bitwise ops, shifts, where and the dtype casts. Semantics are
// PyTorch's CPU kernels, checked against torch 2.13.0 (tests/eager/test_pointwise_ops.cpp):
//  - alpha is converted to the computation dtype (bf16(0.7) for a bf16 add); a + alpha * b is
//    a fused multiply-add for f32/f64 and a float multiply then add for f16/bf16 (so
//    bf16 -3e38 + 2 * 3e38 overflows to inf);
//  - f16/bf16 tensor-by-tensor div(rounding_mode='trunc') rounds a / b to the dtype before
//    truncating, and floor division rounds every step (scalar_ops.h), while a scalar divisor is
//    read and used in float (ir::other_read_in_opmath);
//  - pow.Tensor_Scalar computes exponents 2, 3, 0.5, -0.5, -1, -2 without pow (scalar_ops.h),
//    except for f16, whose kernel calls pow for every exponent; bf16 pow with exponent 3 or -2
//    rounds x * x to bf16 first;
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
#include "eager/scalar_ops.h"

namespace stax::eager::detail {

namespace {

template <typename T>
T nan_value() {
  return std::numeric_limits<T>::quiet_NaN();
}

Tensor eval_add_sub(const Env& env, const ir::Node& node) {
  const DType c = compute_dtype(env, node);
  const ir::Scalar alpha = ir::scalar_arg(node, 2);
  const bool negate = node.op == "sub";
  const bool reduced = is_16bit_float(c);
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    T al = scalar_param<T>(alpha, c, /*to_dtype=*/true);
    if constexpr (kInt<T>) {
      const int64_t scaled = wrapping_mul(al, b);
      return negate ? wrapping_sub(a, scaled) : wrapping_add(a, scaled);
    } else {
      if (negate) al = -al;
      if (al == T(1)) return a + b;
      return reduced ? a + al * b : std::fma(b, al, a);
    }
  });
}

Tensor eval_mul(const Env& env, const ir::Node& node) {
  return map_elements<2>(env, node, {0, 1},
                         []<typename T>(Tag<T>, T a, T b) -> T {
                           if constexpr (kInt<T>)
                             return wrapping_mul(a, b);
                           else
                             return a * b;
                         },
                         {false, ir::other_read_in_opmath(env.graph, node)});
}

// div with a rounding mode and floor_divide; `mode` is "trunc" or "floor".
Tensor eval_rounded_division(const Env& env, const ir::Node& node, const std::string& mode) {
  const DType c = compute_dtype(env, node);
  const bool other_opmath = ir::other_read_in_opmath(env.graph, node);
  const bool stepwise = is_16bit_float(c) && !other_opmath;
  return map_elements<2>(env, node, {0, 1},
                         [&]<typename T>(Tag<T>, T a, T b) -> T {
                           if constexpr (kInt<T>) {
                             return mode == "trunc" ? scalar::trunc_divide(a, b, node.op)
                                                    : scalar::floor_divide(a, b, node.op);
                           } else {
                             auto round16 = [c](T v) { return round_as(c, v); };
                             if (mode == "trunc")
                               return std::trunc(stepwise ? round16(a / b) : a / b);
                             return stepwise ? scalar::floor_divide_rounded(a, b, round16)
                                             : scalar::floor_divide(a, b);
                           }
                         },
                         {false, other_opmath});
}

Tensor eval_div(const Env& env, const ir::Node& node) {
  if (std::optional<std::string> mode = ir::string_arg(node, 2)) {
    return eval_rounded_division(env, node, *mode);
  }
  return map_elements<2>(env, node, {0, 1}, []<typename T>(Tag<T>, T a, T b) -> T { return a / b; },
                         {false, ir::other_read_in_opmath(env.graph, node)});
}

Tensor eval_floor_divide(const Env& env, const ir::Node& node) {
  return eval_rounded_division(env, node, "floor");
}

Tensor eval_remainder(const Env& env, const ir::Node& node) {
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    if constexpr (kInt<T>)
      return scalar::remainder(a, b, node.op);
    else
      return scalar::remainder(a, b);
  });
}

Tensor eval_fmod(const Env& env, const ir::Node& node) {
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    if constexpr (kInt<T>)
      return scalar::fmod(a, b, node.op);
    else
      return std::fmod(a, b);
  });
}

Tensor eval_pow(const Env& env, const ir::Node& node) {
  const bool scalar_exponent = !ir::is_tensor_arg(node, 1);
  const DType c = compute_dtype(env, node);
  return map_elements<2>(env, node, {0, 1}, [&]<typename T>(Tag<T>, T a, T b) -> T {
    if constexpr (kInt<T>) {
      return scalar::power(a, b);
    } else {
      // f16's kernel has no special exponents: pow(-0.0, 0.5) is +0, pow(-inf, 0.5) is inf.
      if (!scalar_exponent || c == DType::Float16) return std::pow(a, b);
      if (c == DType::BFloat16 && (b == T(3) || b == T(-2))) {
        const T square = round_as(c, a * a);
        return b == T(3) ? square * a : T(1) / square;
      }
      return scalar::power(a, b);
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
      if (op == "bitwise_left_shift") return scalar::shift_left(a, b);
      return scalar::shift_right(a, b);
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
  return converted(env.tensor(node, 0), env.result_type(node).dtype);
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
      {"eq",
       [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a == b; });
       }},
      {"ne",
       [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a != b; });
       }},
      {"lt",
       [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a < b; });
       }},
      {"le",
       [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a <= b; });
       }},
      {"gt",
       [](const Env& e, const ir::Node& n) {
         return eval_compare(e, n, [](auto a, auto b) { return a > b; });
       }},
      {"ge",
       [](const Env& e, const ir::Node& n) {
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
      {"logical_not",
       [](const Env& e, const ir::Node& n) {
         return map_elements<1>(e, n, {0},
                                []<typename T>(Tag<T>, T x) -> bool { return x == T(0); });
       }},
      {"bitwise_not",
       [](const Env& e, const ir::Node& n) {
         // Bool elements are computed as integers; ~1 would be nonzero (true), but PyTorch's
         // bitwise_not of a bool tensor is the logical not.
         if (e.result_type(n).dtype == DType::Bool) {
           return map_elements<1>(e, n, {0},
                                  []<typename T>(Tag<T>, T x) -> bool { return x == T(0); });
         }
         return map_elements<1>(e, n, {0}, []<typename T>(Tag<T>, T x) -> T {
           if constexpr (kInt<T>)
             return ~x;
           else
             throw std::logic_error("eager: bitwise_not computed on floats");
         });
       }},
      {"where", eval_where},
      {"_to_copy", eval_cast},
      {"convert_element_type", eval_cast},
  };
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

Tensor converted(const Tensor& in, DType to) {
  Tensor out = Tensor::empty(to, in.sizes());
  for (int64_t p = 0; p < out.numel(); ++p) {
    const std::vector<int64_t> index = unravel_index(p, in.sizes());
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

EvalFn find_pointwise_eval(std::string_view op) {
  if (EvalFn f = find_binary_eval(op)) return f;
  return find_unary_eval(op);
}

}  // namespace stax::eager::detail
