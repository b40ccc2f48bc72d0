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
  switch (s.kind()) {
    case Scalar::Kind::Bool:
      return DType::Bool;
    case Scalar::Kind::Int:
      return DType::Int64;
    case Scalar::Kind::Float:
      break;
  }
  return DType::Float32;
}

// PyTorch refuses a fill value that overflows the dtype (ir::scalar_overflow_problem: an int
// outside the dtype's range, uint8 also taking -255..-1; a float outside it as a double, NaN
// and infinities never; a finite float beyond a floating dtype's largest finite value). A
// one-element f16/bf16 result is the exception: torch fills it through a path without the
// check, rounding (65520 -> inf).
void check_fill_fits(const Node& n, const std::string& arg, const Scalar& s, DType dtype,
                     int64_t numel) {
  if (numel == 1 && (dtype == DType::Float16 || dtype == DType::BFloat16)) return;
  if (std::optional<std::string> range = scalar_overflow_problem(s, dtype)) {
    throw GraphError(prefix(n, arg) + "value " + scalar_text(s) + " cannot be converted to " +
                     std::string(dtype_name(dtype)) + " without overflow (" + *range + ")");
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
  if (!s.is_float()) return *s.as_exact_int64();
  if (!(s.float_value() >= -9223372036854775808.0 && s.float_value() < 9223372036854775808.0)) {
    throw GraphError(prefix(n, arg) + "value " + scalar_text(s) +
                     " cannot be converted to i64 without overflow");
  }
  return static_cast<int64_t>(s.float_value());
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
  const bool integral_args = !start.is_float() && !end.is_float() && !step.is_float();
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
    // torch checks the bounds as doubles (2^53 + 1 -> 2^53 passes) and then finds a negative
    // length below.
    check(static_cast<double>(s), static_cast<double>(e), static_cast<double>(d));
    // torch's int64 formula (end - start + step - sign(step)) / step, whose int64 arithmetic
    // wraps: arange(-5, 2**63 - 1, 2**62) is empty in torch 2.13.0, and Stax follows it.
    const int64_t sign = d > 0 ? 1 : -1;
    const int64_t numerator =
        static_cast<int64_t>(static_cast<uint64_t>(e) - static_cast<uint64_t>(s) +
                             static_cast<uint64_t>(d) - static_cast<uint64_t>(sign));
    // INT64_MIN / -1 is 2^63 elements: too many, like any negative count.
    const int64_t count = numerator == std::numeric_limits<int64_t>::min() && d == -1
                              ? std::numeric_limits<int64_t>::min()
                              : numerator / d;
    if (count < 0) {
      throw GraphError(n.op + ": invalid size " + std::to_string(count) + ", possible overflow" +
                       range);
    }
    length = static_cast<int64_t>(count);
    out.arithmetic = RangeArithmetic::Int64;
    out.int_start = s;
    out.int_step = d;
  } else {
    // The range arithmetic of these dtypes is double (an int above 2^53 rounds, as in torch).
    const double start_value = start.as_double();
    const double end_value = end.as_double();
    const double step_value = step.as_double();
    if (is_integral(out.dtype)) {
      check(start_value, end_value, step_value);
      out.arithmetic = RangeArithmetic::Int64;
      out.int_start = to_int64(n, "start", start);
      out.int_step = to_int64(n, "step", step);
    } else if (out.dtype == DType::Float16 || out.dtype == DType::BFloat16) {
      const auto as_float = [](double v) { return static_cast<double>(static_cast<float>(v)); };
      check(as_float(start_value), as_float(end_value), as_float(step_value));
      out.arithmetic = RangeArithmetic::Float32;
      out.float_start = as_float(start_value);
      out.float_step = as_float(step_value);
    } else {
      check(start_value, end_value, step_value);
      out.arithmetic = RangeArithmetic::Float64;
      out.float_start = start_value;
      out.float_step = step_value;
    }
    const double count = std::ceil((end_value - start_value) / step_value);
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

const Scalar kZero(int64_t{0});
const Scalar kOne(int64_t{1});

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
