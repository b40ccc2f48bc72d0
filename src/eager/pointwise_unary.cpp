// Eager unary pointwise ops: floating math, neg/abs/sign/reciprocal/relu, rounding (round with
// decimals), frac, classification, nan_to_num, the activations (gelu both ways, silu, softplus,
// mish, hardtanh, hardsigmoid, hardswish, leaky_relu, elu), clamp/clamp_min/clamp_max and lerp.
// Formulas are those of PyTorch's CPU kernels, computed in the opmath type (float for f32, f16
// and bf16, double for f64) with one rounding of the result to its dtype; checked against
// torch 2.13.0 in tests/eager/test_pointwise_ops.cpp. Notable cases:
//  - sign(NaN) is 0 and sign(-0.0) is +0.0 ((0 < x) - (x < 0));
//  - clamp propagates NaN from the input and from a bound, and max wins when min > max;
//  - round(x, decimals=d) is nearbyint(x * 10^d) / 10^d (d < 0: nearbyint(x / 10^-d) * 10^-d);
//  - nan_to_num's default replacements are the dtype's largest and lowest finite values;
//  - Scalar parameters of activations (negative_slope, alpha, beta, ...) are opmath values,
//    while clamp's and hardtanh's bounds are converted to the dtype.
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <unordered_map>

#include "eager/elementwise.h"
#include "eager/scalar_ops.h"

namespace stax::eager::detail {

namespace {

template <typename T>
T float_unary(const std::string& op, T x) {
  if (op == "exp") return std::exp(x);
  if (op == "exp2") return std::exp2(x);
  if (op == "expm1") return std::expm1(x);
  if (op == "log") return std::log(x);
  if (op == "log2") return std::log2(x);
  if (op == "log10") return std::log10(x);
  if (op == "log1p") return std::log1p(x);
  if (op == "sqrt") return std::sqrt(x);
  if (op == "rsqrt") return T(1) / std::sqrt(x);
  if (op == "sin") return std::sin(x);
  if (op == "cos") return std::cos(x);
  if (op == "tan") return std::tan(x);
  if (op == "asin") return std::asin(x);
  if (op == "acos") return std::acos(x);
  if (op == "atan") return std::atan(x);
  if (op == "sinh") return std::sinh(x);
  if (op == "cosh") return std::cosh(x);
  if (op == "tanh") return std::tanh(x);
  if (op == "asinh") return std::asinh(x);
  if (op == "acosh") return std::acosh(x);
  if (op == "atanh") return std::atanh(x);
  if (op == "erf") return std::erf(x);
  if (op == "erfc") return std::erfc(x);
  if (op == "erfinv") return static_cast<T>(scalar::erfinv(static_cast<double>(x)));
  if (op == "sigmoid") return T(1) / (T(1) + std::exp(-x));
  if (op == "reciprocal") return T(1) / x;
  throw std::logic_error("eager: unknown unary op " + op);
}

Tensor eval_float_unary(const Env& env, const ir::Node& node) {
  const std::string& op = node.op;
  return map_elements<1>(env, node, {0}, [&]<typename T>(Tag<T>, T x) -> T {
    if constexpr (kInt<T>)
      throw std::logic_error("eager: " + op + " computed on integers");
    else
      return float_unary<T>(op, x);
  });
}

Tensor eval_numeric_unary(const Env& env, const ir::Node& node) {
  const std::string& op = node.op;
  return map_elements<1>(env, node, {0}, [&]<typename T>(Tag<T>, T x) -> T {
    if (op == "neg") {
      if constexpr (kInt<T>)
        return wrapping_sub(0, x);
      else
        return -x;
    }
    if (op == "abs") {
      if constexpr (kInt<T>)
        return x < 0 ? wrapping_sub(0, x) : x;
      else
        return std::abs(x);
    }
    if (op == "sign") return scalar::sign(x);
    if (op == "relu") return x < T(0) ? T(0) : x;  // keeps -0.0 and NaN, as PyTorch
    if constexpr (kInt<T>) {
      return x;  // floor, ceil, trunc, round of integers
    } else {
      if (op == "floor") return std::floor(x);
      if (op == "ceil") return std::ceil(x);
      if (op == "trunc") return std::trunc(x);
      if (op == "frac") return x - std::trunc(x);
      throw std::logic_error("eager: unknown unary op " + op);
    }
  });
}

Tensor eval_round(const Env& env, const ir::Node& node) {
  int64_t decimals = ir::int_arg(node, 1);
  const bool negative = decimals < 0;
  if (negative) decimals = -decimals;
  return map_elements<1>(env, node, {0}, [&]<typename T>(Tag<T>, T x) -> T {
    if constexpr (kInt<T>) {
      return x;
    } else {
      if (decimals == 0) return std::nearbyint(x);
      const T ten_pow = static_cast<T>(std::pow(10.0, static_cast<double>(decimals)));
      return negative ? std::nearbyint(x / ten_pow) * ten_pow
                      : std::nearbyint(x * ten_pow) / ten_pow;
    }
  });
}

Tensor eval_classify(const Env& env, const ir::Node& node) {
  const std::string& op = node.op;
  return map_elements<1>(env, node, {0}, [&]<typename T>(Tag<T>, T x) -> bool {
    if constexpr (kInt<T>) {
      return op == "isfinite";
    } else {
      if (op == "isnan") return std::isnan(x);
      if (op == "isinf") return std::isinf(x);
      return std::isfinite(x);
    }
  });
}

std::optional<ir::Scalar> optional_scalar(const ir::Node& node, size_t position) {
  if (std::holds_alternative<ir::None>(node.args.at(position))) return std::nullopt;
  return ir::scalar_arg(node, position);
}

Tensor eval_nan_to_num(const Env& env, const ir::Node& node) {
  const DType c = compute_dtype(env, node);
  const std::optional<ir::Scalar> nan = optional_scalar(node, 1);
  const std::optional<ir::Scalar> posinf = optional_scalar(node, 2);
  const std::optional<ir::Scalar> neginf = optional_scalar(node, 3);
  return map_elements<1>(env, node, {0}, [&]<typename T>(Tag<T>, T x) -> T {
    if constexpr (kInt<T>) {
      return x;
    } else {
      // The defaults are the dtype's own extremes (65504 for f16), not float's.
      const double largest = c == DType::Float64   ? std::numeric_limits<double>::max()
                             : c == DType::Float32 ? std::numeric_limits<float>::max()
                             : c == DType::Float16 ? 65504.0
                                                   : 3.3895313892515355e38;
      auto replacement = [&](const std::optional<ir::Scalar>& s, double fallback) {
        return s ? scalar_param<T>(*s, c, /*to_dtype=*/true) : static_cast<T>(fallback);
      };
      if (std::isnan(x)) return replacement(nan, 0.0);
      if (std::isinf(x))
        return x > 0 ? replacement(posinf, largest) : replacement(neginf, -largest);
      return x;
    }
  });
}

// Activations with their ATen Scalar parameters (read in the opmath type).
Tensor eval_activation(const Env& env, const ir::Node& node) {
  const std::string& op = node.op;
  const DType c = compute_dtype(env, node);
  auto param = [&]<typename T>(Tag<T>, size_t position) {
    return scalar_param<T>(ir::scalar_arg(node, position), c, /*to_dtype=*/false);
  };
  const std::string approximate =
      op == "gelu" ? ir::string_arg(node, 1).value_or("none") : std::string();
  return map_elements<1>(env, node, {0}, [&]<typename T>(Tag<T> tag, T x) -> T {
    if constexpr (kInt<T>) {
      throw std::logic_error("eager: " + op + " computed on integers");
    } else {
      if (op == "gelu") {
        if (approximate == "tanh") {
          const T beta =
              static_cast<T>(std::numbers::sqrt2 * (2 / std::sqrt(std::numbers::pi)) * 0.5);
          const T kappa = static_cast<T>(0.044715);
          const T inner = beta * (x + kappa * (x * x * x));
          return T(0.5) * x * (T(1) + std::tanh(inner));
        }
        return x * T(0.5) * (T(1) + std::erf(x * static_cast<T>(1 / std::numbers::sqrt2)));
      }
      if (op == "silu") return x / (T(1) + std::exp(-x));
      if (op == "mish") return x * std::tanh(std::log1p(std::exp(x)));
      if (op == "hardsigmoid") return std::min(std::max(x + T(3), T(0)), T(6)) / T(6);
      if (op == "hardswish") return x * std::min(std::max(x + T(3), T(0)), T(6)) / T(6);
      if (op == "softplus") {
        const T beta = param(tag, 1);
        const T threshold = param(tag, 2);
        return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
      }
      if (op == "leaky_relu") return x > T(0) ? x : x * param(tag, 1);
      if (op == "elu") {
        const T alpha = param(tag, 1);
        const T scale = param(tag, 2);
        const T input_scale = param(tag, 3);
        return x > T(0) ? x * scale : std::expm1(x * input_scale) * (alpha * scale);
      }
      throw std::logic_error("eager: unknown activation " + op);
    }
  });
}

// max(x, lo) and min(x, hi) that propagate NaN from either side.
template <typename T>
T clamp_below(T x, T lo) {
  if constexpr (!kInt<T>) {
    if (std::isnan(x) || std::isnan(lo)) return std::numeric_limits<T>::quiet_NaN();
  }
  return x < lo ? lo : x;
}
template <typename T>
T clamp_above(T x, T hi) {
  if constexpr (!kInt<T>) {
    if (std::isnan(x) || std::isnan(hi)) return std::numeric_limits<T>::quiet_NaN();
  }
  return x > hi ? hi : x;
}

Tensor eval_hardtanh(const Env& env, const ir::Node& node) {
  const DType c = compute_dtype(env, node);
  return map_elements<1>(env, node, {0}, [&]<typename T>(Tag<T>, T x) -> T {
    const T lo = scalar_param<T>(ir::scalar_arg(node, 1), c, /*to_dtype=*/true);
    const T hi = scalar_param<T>(ir::scalar_arg(node, 2), c, /*to_dtype=*/true);
    return clamp_above(clamp_below(x, lo), hi);
  });
}

Tensor eval_clamp(const Env& env, const ir::Node& node) {
  const bool has_min = node.op == "clamp_min" ||
                       (node.op == "clamp" && !std::holds_alternative<ir::None>(node.args[1]));
  const bool has_max = node.op == "clamp_max" ||
                       (node.op == "clamp" && !std::holds_alternative<ir::None>(node.args[2]));
  if (has_min && has_max) {
    return map_elements<3>(env, node, {0, 1, 2}, []<typename T>(Tag<T>, T x, T lo, T hi) -> T {
      return clamp_above(clamp_below(x, lo), hi);
    });
  }
  const size_t bound = node.op == "clamp" ? (has_min ? 1 : 2) : 1;
  return map_elements<2>(env, node, {0, bound}, [&]<typename T>(Tag<T>, T x, T b) -> T {
    return has_min ? clamp_below(x, b) : clamp_above(x, b);
  });
}

Tensor eval_lerp(const Env& env, const ir::Node& node) {
  // A Scalar weight is an opmath value (float(0.3) for bf16), a tensor weight has the dtype.
  return map_elements<3>(env, node, {0, 1, 2},
                         []<typename T>(Tag<T>, T start, T end, T weight) -> T {
                           if constexpr (kInt<T>) {
                             throw std::logic_error("eager: lerp computed on integers");
                           } else {
                             const T diff = end - start;
                             return std::abs(weight) < T(0.5) ? std::fma(weight, diff, start)
                                                              : std::fma(weight - T(1), diff, end);
                           }
                         },
                         {false, false, !ir::is_tensor_arg(node, 2)});
}

}  // namespace

EvalFn find_unary_eval(std::string_view op) {
  static const std::unordered_map<std::string_view, EvalFn> table = [] {
    std::unordered_map<std::string_view, EvalFn> t;
    for (const char* name :
         {"exp",   "exp2",  "expm1", "log",  "log2", "log10",  "log1p",   "sqrt",      "rsqrt",
          "sin",   "cos",   "tan",   "asin", "acos", "atan",   "sinh",    "cosh",      "tanh",
          "asinh", "acosh", "atanh", "erf",  "erfc", "erfinv", "sigmoid", "reciprocal"}) {
      t.emplace(name, eval_float_unary);
    }
    for (const char* name : {"neg", "abs", "sign", "relu", "floor", "ceil", "trunc", "frac"}) {
      t.emplace(name, eval_numeric_unary);
    }
    for (const char* name : {"isnan", "isinf", "isfinite"}) t.emplace(name, eval_classify);
    for (const char* name :
         {"gelu", "silu", "mish", "hardsigmoid", "hardswish", "softplus", "leaky_relu", "elu"}) {
      t.emplace(name, eval_activation);
    }
    for (const char* name : {"clamp", "clamp_min", "clamp_max"}) t.emplace(name, eval_clamp);
    t.emplace("round", eval_round);
    t.emplace("nan_to_num", eval_nan_to_num);
    t.emplace("hardtanh", eval_hardtanh);
    t.emplace("lerp", eval_lerp);
    return t;
  }();
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace stax::eager::detail
