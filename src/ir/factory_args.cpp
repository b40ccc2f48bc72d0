// The meaning of a factory node's arguments (see factory_args.h): default dtypes, the sizes,
// the checked fill value and the arange/iota parameters, with the rules torch 2.13.0 applies
// (each verified there; the cases are in tests/ir/test_factory_schemas.cpp).
#include "ir/factory_args.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "ir/checked_arith.h"
#include "ir/op_schema.h"
#include "ir/op_schemas_internal.h"
#include "ir/text_format.h"

namespace stax::ir {

namespace {

std::string prefix(const Node& n, const std::string& arg) {
  return detail::arg_prefix(n.op, arg);
}

std::string scalar_text(const Scalar& s) {
  static const Graph no_values("scalars");
  return format_arg(no_values, Arg(s));
}

std::optional<DType> dtype_arg(const Node& n, size_t position) {
  std::optional<std::string> name = string_arg(n, position);
  if (!name) return std::nullopt;
  std::optional<DType> dtype = parse_dtype(*name);
  if (!dtype) throw GraphError(prefix(n, "dtype") + "unknown dtype '" + *name + "'");
  return dtype;
}

// PyTorch's dtype of a fill without dtype=: bool for bool, int64 for int, the default float
// dtype (float32) for float fill values.
DType default_fill_dtype(const Scalar& s) {
  switch (s.kind) {
    case Scalar::Kind::Bool:
      return DType::Bool;
    case Scalar::Kind::Int:
      return DType::Int64;
    case Scalar::Kind::Float:
      break;
  }
  return DType::Float32;
}

// As doubles, int64's limits are -2^63 and 2^63 (its maximum rounds up), so a float fill
// of 2^63 passes, as in PyTorch, and converts like every float to int64 on x86.
struct IntegerLimits {
  double lowest;
  double highest;
};

IntegerLimits integer_limits(DType dtype) {
  const IntegerRange r = integer_range(dtype);
  return {static_cast<double>(r.lowest), static_cast<double>(r.highest)};
}

double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.3895313892515355e38;
    case DType::Float32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

// PyTorch refuses a fill value that overflows the dtype, in torch 2.13.0's terms:
//  - integers: an int must lie in the dtype's range, except that uint8 also takes -255..-1
//    (wrapping: -1 fills 255); a float must lie in the range as a double (uint8: [0, 255], so
//    -0.5 and 255.9 are refused while 254.5 fills 254), NaN and infinities never;
//  - floats: a finite value beyond the largest finite one is refused (f16 65504.5 and 70000,
//    f32 1e39); infinities and NaN are kept. A one-element f16/bf16 result is the exception:
//    torch fills it through a path without the check, rounding (65520 -> inf);
//  - bool: every value (nonzero is true).
void check_fill_fits(const Node& n, const std::string& arg, const Scalar& s, DType dtype,
                     int64_t numel) {
  if (dtype == DType::Bool || s.kind == Scalar::Kind::Bool) return;
  bool fits = true;
  std::string range;
  if (is_integral(dtype)) {
    const IntegerLimits limits = integer_limits(dtype);
    if (s.kind == Scalar::Kind::Int) {
      const double lowest = dtype == DType::UInt8 ? -255.0 : limits.lowest;
      fits = s.value >= lowest && s.value <= limits.highest;
    } else {
      fits = s.value >= limits.lowest && s.value <= limits.highest;  // false for NaN
    }
    range = "[" + format_float(limits.lowest) + ", " + format_float(limits.highest) + "]";
  } else {
    const bool unchecked_16bit =
        numel == 1 && (dtype == DType::Float16 || dtype == DType::BFloat16);
    fits =
        unchecked_16bit || !std::isfinite(s.value) || std::fabs(s.value) <= largest_finite(dtype);
    range = "largest finite value " + format_float(largest_finite(dtype));
  }
  if (!fits) {
    throw GraphError(prefix(n, arg) + "value " + scalar_text(s) + " cannot be converted to " +
                     std::string(dtype_name(dtype)) + " without overflow (" + range + ")");
  }
}

std::vector<int64_t> checked_sizes(const Node& n, std::vector<int64_t> sizes) {
  for (int64_t s : sizes) {
    if (s < 0) {
      throw GraphError(prefix(n, "size") + "negative dimension " + std::to_string(s) + " in " +
                       format_sizes(sizes));
    }
  }
  if (!checked_numel(sizes)) {
    throw GraphError(prefix(n, "size") + format_sizes(sizes) +
                     " has an element count that overflows int64");
  }
  return sizes;
}

FactoryArgs fill_args(DType dtype, std::vector<int64_t> sizes, Scalar fill) {
  FactoryArgs out;
  out.dtype = dtype;
  out.sizes = std::move(sizes);
  out.fill = fill;
  return out;
}

// A Scalar as torch's int64 conversion of arange arguments takes it: floats truncated toward
// zero, refused when not finite or outside int64.
int64_t to_int64(const Node& n, const std::string& arg, const Scalar& s) {
  if (s.kind != Scalar::Kind::Float) return static_cast<int64_t>(s.value);
  if (!(s.value >= -9223372036854775808.0 && s.value < 9223372036854775808.0)) {
    throw GraphError(prefix(n, arg) + "value " + scalar_text(s) +
                     " cannot be converted to i64 without overflow");
  }
  return static_cast<int64_t>(s.value);
}

// arange(start, end, step): the checks and the length torch 2.13.0 computes. For an int64
// result the arguments are truncated to int64 first and the length is exact integer
// arithmetic; for every other dtype the checks see the arguments in the range arithmetic
// (double for integral results other than int64) and the length is
// ceil((end - start) / step) in double. Integral values use the truncated start and step, so
// arange(0, 5, 0.5, dtype=i32) is ten zeros, as in torch.
FactoryArgs arange_args(const Node& n) {
  const Scalar start = scalar_arg(n, 0);
  const Scalar end = scalar_arg(n, 1);
  const Scalar step = scalar_arg(n, 2);
  const bool integral_args = start.kind != Scalar::Kind::Float && end.kind != Scalar::Kind::Float &&
                             step.kind != Scalar::Kind::Float;
  FactoryArgs out;
  out.is_range = true;
  out.dtype = dtype_arg(n, 3).value_or(integral_args ? DType::Int64 : DType::Float32);
  if (out.dtype == DType::Bool) {
    throw GraphError(prefix(n, "dtype") + "bool is not supported (PyTorch has no bool arange)");
  }
  const std::string range = " (start " + scalar_text(start) + ", end " + scalar_text(end) +
                            ", step " + scalar_text(step) + ")";
  auto check = [&](double s, double e, double d) {
    if (!(d > 0 || d < 0)) throw GraphError(n.op + ": step must be nonzero" + range);
    if (!std::isfinite(s) || !std::isfinite(e)) {
      throw GraphError(n.op + ": unsupported range " + format_float(s) + " -> " + format_float(e) +
                       range);
    }
    if (!((d > 0 && e >= s) || (d < 0 && e <= s))) {
      throw GraphError(n.op + ": upper bound and lower bound inconsistent with step sign" + range);
    }
  };
  int64_t length = 0;
  if (out.dtype == DType::Int64) {
    const int64_t s = to_int64(n, "start", start);
    const int64_t e = to_int64(n, "end", end);
    const int64_t d = to_int64(n, "step", step);
    check(static_cast<double>(s), static_cast<double>(e), static_cast<double>(d));
    // ceil(|e - s| / |d|) exactly: torch's int64 formula, without its overflow.
    const __int128 distance = d > 0 ? static_cast<__int128>(e) - s : static_cast<__int128>(s) - e;
    const __int128 stride = d > 0 ? static_cast<__int128>(d) : -static_cast<__int128>(d);
    const __int128 count = (distance + stride - 1) / stride;
    if (count > std::numeric_limits<int64_t>::max()) {
      throw GraphError(n.op + ": invalid size " + format_float(static_cast<double>(count)) +
                       ", possible overflow" + range);
    }
    length = static_cast<int64_t>(count);
    out.arithmetic = RangeArithmetic::Int64;
    out.int_start = s;
    out.int_step = d;
  } else {
    if (is_integral(out.dtype)) {
      check(start.value, end.value, step.value);
      out.arithmetic = RangeArithmetic::Int64;
      out.int_start = to_int64(n, "start", start);
      out.int_step = to_int64(n, "step", step);
    } else if (out.dtype == DType::Float16 || out.dtype == DType::BFloat16) {
      const auto as_float = [](double v) { return static_cast<double>(static_cast<float>(v)); };
      check(as_float(start.value), as_float(end.value), as_float(step.value));
      out.arithmetic = RangeArithmetic::Float32;
      out.float_start = as_float(start.value);
      out.float_step = as_float(step.value);
    } else {
      check(start.value, end.value, step.value);
      out.arithmetic = RangeArithmetic::Float64;
      out.float_start = start.value;
      out.float_step = step.value;
    }
    const double count = std::ceil((end.value - start.value) / step.value);
    if (!(count >= 0 && count < 9223372036854775808.0)) {
      throw GraphError(n.op + ": invalid size " + format_float(count) + ", possible overflow" +
                       range);
    }
    length = static_cast<int64_t>(count);
  }
  out.sizes = {length};
  return out;
}

// prims.iota(length, *, start, step, dtype): start + step * i, integral dtypes only.
FactoryArgs iota_args(const Node& n) {
  const std::optional<DType> dtype = dtype_arg(n, 3);
  if (!dtype) throw GraphError(prefix(n, "dtype") + "is required (an integer dtype), got None");
  if (!is_integral(*dtype)) {
    throw GraphError(prefix(n, "dtype") + "iota only supports integer dtypes, got " +
                     std::string(dtype_name(*dtype)));
  }
  const int64_t length = int_arg(n, 0);
  if (length < 0) {
    throw GraphError(prefix(n, "length") + "negative length " + std::to_string(length));
  }
  const int64_t step = int_arg(n, 2);
  if (step == 0) throw GraphError(prefix(n, "step") + "step must be nonzero");
  FactoryArgs out;
  out.is_range = true;
  out.dtype = *dtype;
  out.sizes = {length};
  out.arithmetic = RangeArithmetic::Int64;
  out.int_start = int_arg(n, 1);
  out.int_step = step;
  return out;
}

const Scalar kZero{Scalar::Kind::Int, 0.0};
const Scalar kOne{Scalar::Kind::Int, 1.0};

}  // namespace

FactoryArgs factory_args(const Graph& graph, const Node& n) {
  const std::string& op = n.op;
  FactoryArgs out;
  std::string fill_arg;
  if (op == "full") {
    const Scalar fill = scalar_arg(n, 1);
    out = fill_args(dtype_arg(n, 2).value_or(default_fill_dtype(fill)),
                    checked_sizes(n, *int_list_arg(n, 0)), fill);
    fill_arg = "fill_value";
  } else if (op == "zeros" || op == "ones") {
    out = fill_args(dtype_arg(n, 1).value_or(DType::Float32), checked_sizes(n, *int_list_arg(n, 0)),
                    op == "zeros" ? kZero : kOne);
  } else if (op == "full_like" || op == "zeros_like" || op == "ones_like") {
    const TensorType& self = tensor_arg(graph, n, 0).type;
    const bool full = op == "full_like";
    out = fill_args(dtype_arg(n, full ? 2 : 1).value_or(self.dtype), self.sizes,
                    full                 ? scalar_arg(n, 1)
                    : op == "zeros_like" ? kZero
                                         : kOne);
    if (full) fill_arg = "fill_value";
  } else if (op == "fill") {
    const TensorType& self = tensor_arg(graph, n, 0).type;
    out = fill_args(self.dtype, self.sizes, scalar_arg(n, 1));
    fill_arg = "value";
  } else if (op == "scalar_tensor") {
    // Float32 without dtype= whatever the literal's kind: scalar_tensor(3) is tensor(3.).
    out = fill_args(dtype_arg(n, 1).value_or(DType::Float32), {}, scalar_arg(n, 0));
    fill_arg = "s";
  } else if (op == "arange") {
    return arange_args(n);
  } else if (op == "iota") {
    return iota_args(n);
  } else {
    throw GraphError(op + ": is not a factory op");
  }
  if (!fill_arg.empty())
    check_fill_fits(n, fill_arg, out.fill, out.dtype, *checked_numel(out.sizes));
  return out;
}

}  // namespace stax::ir
