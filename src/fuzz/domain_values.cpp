// Deterministic values of each operand domain (see op_catalog.h for the ranges).
#include "fuzz/domain_values.h"

#include <cmath>
#include <limits>

namespace stax::fuzz {

namespace {

double uniform(std::mt19937_64& rng, double low, double high) {
  // rng() / 2^64 is in [0, 1) and the same on every platform (unlike std distributions).
  const double unit = static_cast<double>(rng() >> 11) * std::ldexp(1.0, -53);
  return low + (high - low) * unit;
}

int64_t integer(std::mt19937_64& rng, int64_t low, int64_t high) {
  const uint64_t span = static_cast<uint64_t>(high - low) + 1;
  return low + static_cast<int64_t>(rng() % span);
}

struct IntRange {
  int64_t low;
  int64_t high;
};

// The dtype's range; int64 stays within +-2^62 so that doubles carry the values exactly
// enough (a multiple of 2^10 there) and sums of two do not reach the conversion's edge.
IntRange full_range(DType dtype) {
  switch (dtype) {
    case DType::UInt8:
      return {0, 255};
    case DType::Int8:
      return {-128, 127};
    case DType::Int16:
      return {-32768, 32767};
    case DType::Int32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default:
      return {-(int64_t{1} << 62), int64_t{1} << 62};
  }
}

int bits(DType dtype) {
  return static_cast<int>(dtype_size(dtype)) * 8;
}

double integer_value(Domain domain, DType dtype, std::mt19937_64& rng) {
  const bool is_unsigned = dtype == DType::UInt8;
  const IntRange full = full_range(dtype);
  switch (domain) {
    case Domain::Any:
    case Domain::Finite:
    case Domain::Wide:
      // The extremes, -1 and 0 are where wraparound and sign bugs show.
      if (rng() % 8 == 0) {
        const int64_t edges[] = {full.low, full.high, is_unsigned ? 1 : -1, 0};
        return static_cast<double>(edges[rng() % 4]);
      }
      return static_cast<double>(integer(rng, full.low, full.high));
    case Domain::Small:
      return static_cast<double>(integer(rng, is_unsigned ? 0 : -3, 3));
    case Domain::Unit:
    case Domain::Coarse:
      return static_cast<double>(integer(rng, is_unsigned ? 0 : -1, 1));
    case Domain::Positive:
      return static_cast<double>(integer(rng, 1, 10));
    case Domain::AboveOne:
      return static_cast<double>(integer(rng, 2, 10));
    case Domain::NonZero: {
      const int64_t v = integer(rng, is_unsigned ? 1 : -10, 10);
      return static_cast<double>(v == 0 ? 7 : v);
    }
    case Domain::NearOne:
      return static_cast<double>(integer(rng, is_unsigned ? 0 : -2, 2));
    case Domain::ShiftCount:
      return static_cast<double>(integer(rng, 0, bits(dtype) + 2));
    case Domain::Exponent:
      return static_cast<double>(integer(rng, 0, 3));
  }
  return 0.0;
}

double float_value(Domain domain, std::mt19937_64& rng) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (domain) {
    case Domain::Any:
      if (rng() % 16 == 0) {
        const double specials[] = {std::numeric_limits<double>::quiet_NaN(), kInf, -kInf, -0.0};
        return specials[rng() % 4];
      }
      return uniform(rng, -4, 4);
    case Domain::Finite:
      return uniform(rng, -4, 4);
    case Domain::Small:
    case Domain::Exponent:
      return uniform(rng, -2, 2);
    case Domain::Unit:
      return uniform(rng, -0.9, 0.9);
    case Domain::Positive:
      return uniform(rng, 0.25, 4);
    case Domain::AboveOne:
      return uniform(rng, 1.25, 4);
    case Domain::NonZero:
      return (rng() % 2 ? 1 : -1) * uniform(rng, 0.25, 4);
    case Domain::NearOne:
      return uniform(rng, 0.5, 1.5);
    case Domain::Coarse: {
      const double values[] = {-1, -0.5, 0, 0.5, 1, std::numeric_limits<double>::quiet_NaN()};
      return values[rng() % 6];
    }
    case Domain::Wide:
      return uniform(rng, -300, 300);
    case Domain::ShiftCount:
      return static_cast<double>(rng() % 8);
  }
  return 0.0;
}

}  // namespace

double domain_value(Domain domain, DType dtype, std::mt19937_64& rng) {
  if (dtype == DType::Bool) {
    if (domain == Domain::Positive || domain == Domain::NonZero || domain == Domain::AboveOne) {
      return 1.0;
    }
    return static_cast<double>(rng() % 2);
  }
  if (is_integral(dtype)) return integer_value(domain, dtype, rng);
  return float_value(domain, rng);
}

Tensor domain_tensor(Domain domain, DType dtype, const std::vector<int64_t>& sizes,
                     const std::vector<int64_t>& strides, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor t = Tensor::empty_strided(dtype, sizes, strides);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) t.set_flat(i, domain_value(domain, dtype, rng));
  return t;
}

Tensor index_tensor(const std::vector<int64_t>& sizes, int64_t bound, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor t = Tensor::empty(DType::Int64, sizes);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    t.set_flat(i, static_cast<double>(bound > 0 ? integer(rng, 0, bound - 1) : 0));
  }
  return t;
}

}  // namespace stax::fuzz
