// Relative condition numbers of the pointwise ops that can magnify an operand's error,
// measured on the oracle's values (condition_number.h).
#include "driver/condition_number.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <string>
#include <unordered_map>

#include "ir/op_schema.h"

namespace stax {

namespace {

// The exact result f(x) and |x f'(x)| (the condition number times |f(x)|, finite where f(x)
// is 0) at one element.
struct Sensitivity {
  double result;
  double magnified;  // |x f'(x)|
};

using SensitivityFn = std::function<Sensitivity(double)>;

// One operand ops, by the name of the op.
const std::unordered_map<std::string, SensitivityFn>& unary_sensitivities() {
  static const std::unordered_map<std::string, SensitivityFn> table = {
      {"exp", [](double x) { return Sensitivity{std::exp(x), std::fabs(x * std::exp(x))}; }},
      {"exp2",
       [](double x) {
         return Sensitivity{std::exp2(x), std::fabs(x * std::numbers::ln2 * std::exp2(x))};
       }},
      {"expm1", [](double x) { return Sensitivity{std::expm1(x), std::fabs(x * std::exp(x))}; }},
      {"log", [](double x) { return Sensitivity{std::log(x), 1.0}; }},
      {"log2", [](double x) { return Sensitivity{std::log2(x), 1.0 / std::numbers::ln2}; }},
      {"log10", [](double x) { return Sensitivity{std::log10(x), 1.0 / std::numbers::ln10}; }},
      {"log1p", [](double x) { return Sensitivity{std::log1p(x), std::fabs(x / (1.0 + x))}; }},
      {"sin", [](double x) { return Sensitivity{std::sin(x), std::fabs(x * std::cos(x))}; }},
      {"cos", [](double x) { return Sensitivity{std::cos(x), std::fabs(x * std::sin(x))}; }},
      {"tan",
       [](double x) {
         const double t = std::tan(x);
         return Sensitivity{t, std::fabs(x * (1.0 + t * t))};
       }},
      {"sinh", [](double x) { return Sensitivity{std::sinh(x), std::fabs(x * std::cosh(x))}; }},
      {"cosh", [](double x) { return Sensitivity{std::cosh(x), std::fabs(x * std::sinh(x))}; }},
      {"asin",
       [](double x) { return Sensitivity{std::asin(x), std::fabs(x / std::sqrt(1.0 - x * x))}; }},
      {"acos",
       [](double x) { return Sensitivity{std::acos(x), std::fabs(x / std::sqrt(1.0 - x * x))}; }},
      {"acosh",
       [](double x) { return Sensitivity{std::acosh(x), std::fabs(x / std::sqrt(x * x - 1.0))}; }},
      {"atanh", [](double x) { return Sensitivity{std::atanh(x), std::fabs(x / (1.0 - x * x))}; }},
      {"erfc",
       [](double x) {
         return Sensitivity{std::erfc(x),
                            std::fabs(x * std::numbers::inv_sqrtpi * 2.0 * std::exp(-x * x))};
       }},
      {"sigmoid",
       [](double x) {
         const double s = 1.0 / (1.0 + std::exp(-x));
         return Sensitivity{s, std::fabs(x * s * (1.0 - s))};
       }},
      {"silu",
       [](double x) {
         const double s = 1.0 / (1.0 + std::exp(-x));
         return Sensitivity{x * s, std::fabs(x * (s + x * s * (1.0 - s)))};
       }},
  };
  return table;
}

// The sensitivity of `node` to its argument `arg` at one element, where known.
std::optional<SensitivityFn> sensitivity_of(const ir::Node& node, size_t arg) {
  if (arg == 0) {
    if (auto it = unary_sensitivities().find(node.op); it != unary_sensitivities().end()) {
      return it->second;
    }
  }
  // x ** p with a number p: the condition number is |p| (x ** 0.5 halves errors, x ** 8
  // multiplies them by 8). A tensor exponent is not measured (its pairing with the base
  // follows broadcasting); its errors pass unchanged.
  if (node.op == "pow" && arg == 0 && !ir::is_tensor_arg(node, 1)) {
    const double p = ir::scalar_arg(node, 1).as_double();
    return SensitivityFn([p](double x) {
      const double result = std::pow(x, p);
      return Sensitivity{result, std::fabs(p * result)};
    });
  }
  return std::nullopt;
}

}  // namespace

bool may_magnify_error(const ir::Node& node, size_t arg) {
  return sensitivity_of(node, arg).has_value();
}

double error_amplification(const ir::Node& node, size_t arg, const Tensor& operand,
                           double operand_rtol, double result_atol) {
  const std::optional<SensitivityFn> sensitivity = sensitivity_of(node, arg);
  if (!sensitivity || operand_rtol <= 0) return 1.0;
  double amplification = 1.0;
  const int64_t n = operand.numel();
  for (int64_t p = 0; p < n; ++p) {
    const double x = operand.get_flat(p);
    const auto [result, magnified] = (*sensitivity)(x);
    // No rtol covers an exact 0 or an infinite condition number (asin at 1): left to atol.
    if (!std::isfinite(x) || !std::isfinite(result) || result == 0.0) continue;
    // The magnified error kappa e |f(x)| = magnified * e must fit atol + rtol |f(x)|.
    const double needed = (magnified * operand_rtol - result_atol) / std::fabs(result);
    if (std::isfinite(needed)) amplification = std::max(amplification, needed / operand_rtol);
  }
  return amplification;
}

}  // namespace stax
