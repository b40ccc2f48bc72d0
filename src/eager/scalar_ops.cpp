// Out-of-line parts of scalar_ops.h.
#include "eager/scalar_ops.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace stax::eager::scalar {

// The inverse error function in double: a closed-form first guess (Winitzki), refined by
// Newton steps on std::erf until it is exact to double precision.
double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1) return std::numeric_limits<double>::infinity();
  if (y == -1) return -std::numeric_limits<double>::infinity();
  if (y == 0) return y;
  constexpr double a = 0.147;
  const double ln = std::log((1 - y) * (1 + y));
  const double t = 2 / (std::numbers::pi * a) + ln / 2;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - ln / a) - t), y);
  for (int i = 0; i < 4; ++i) {
    const double step = (std::erf(x) - y) / (2 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
    if (!std::isfinite(step)) break;
    x -= step;
  }
  return x;
}

}  // namespace stax::eager::scalar
