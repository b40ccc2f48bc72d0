// Out-of-line parts of scalar_ops.h.
#include "eager/scalar_ops.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace stax::eager::scalar {

// The inverse error function in double: a closed-form first guess (Winitzki), refined by
// Newton steps until it is exact to double precision. For |y| >= 0.5 the steps solve
// erfc(x) = 1 - |y| (exact there) instead of erf(x) = |y|, whose difference cancels to
// nothing near 1 (erf(5.86) rounds to 1 while erfinv(1 - 2^-53) = 5.8636).
double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1) return std::numeric_limits<double>::infinity();
  if (y == -1) return -std::numeric_limits<double>::infinity();
  if (y == 0) return y;
  constexpr double a = 0.147;
  const double ln = std::log((1 - y) * (1 + y));
  const double t = 2 / (std::numbers::pi * a) + ln / 2;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - ln / a) - t), y);
  const double tail = 1 - std::fabs(y);  // exact for |y| >= 0.5
  for (int i = 0; i < 4; ++i) {
    const double slope = 2 / std::sqrt(std::numbers::pi) * std::exp(-x * x);
    // erf(x) - y, for x of y's sign: sign(y) (1 - |y| - erfc(|x|)) in the tail.
    const double residual = std::fabs(y) >= 0.5
                                ? (y < 0 ? -1.0 : 1.0) * (tail - std::erfc(std::fabs(x)))
                                : std::erf(x) - y;
    const double step = residual / slope;
    if (!std::isfinite(step)) break;
    x -= step;
  }
  return x;
}

}  // namespace stax::eager::scalar
