// The op catalogue: one entry per case of every op of issue 6. The dtype sets are those
// PyTorch 2.13 accepts (checked op by op with torch.ops.aten); calls use the ATen argument
// names.
#include "fuzz/op_catalog.h"

#include <algorithm>
#include <set>

#include "ir/op_schema.h"

namespace stax::fuzz {

namespace {

using D = Domain;
using R = Reference;

constexpr DTypeSet kBool = dtype_bit(DType::Bool);
constexpr DTypeSet kInts = dtype_bit(DType::UInt8) | dtype_bit(DType::Int8) |
                           dtype_bit(DType::Int16) | dtype_bit(DType::Int32) |
                           dtype_bit(DType::Int64);
constexpr DTypeSet kFloats = dtype_bit(DType::Float16) | dtype_bit(DType::BFloat16) |
                             dtype_bit(DType::Float32) | dtype_bit(DType::Float64);
constexpr DTypeSet kAll = kBool | kInts | kFloats;
constexpr DTypeSet kNoBool = kInts | kFloats;
constexpr DTypeSet kIntBool = kInts | kBool;
// hardtanh: signed integers and floats (PyTorch refuses uint8 and bool).
constexpr DTypeSet kSignedFloats = kNoBool & ~dtype_bit(DType::UInt8);

using Call = std::function<std::optional<std::string>(const CallSite&)>;

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int64_t last_size(const CallSite& s) {
  return s.sizes.back();
}
int rank(const CallSite& s) {
  return static_cast<int>(s.sizes.size());
}

// "op(a, b, ..., extra)" over the operands.
Call call_on(const std::string& op, const std::string& extra = "") {
  return [op, extra](const CallSite& s) -> std::optional<std::string> {
    std::string text = op + "(";
    for (size_t i = 0; i < s.operands.size(); ++i) text += (i ? ", " : "") + s.operands[i];
    if (!extra.empty()) text += ", " + extra;
    return text + ")";
  };
}

struct Builder {
  std::vector<CatalogEntry> entries;

  void add(std::string op, std::string name, std::vector<Domain> operands, DTypeSet dtypes,
           Reference reference, bool exact, Call call, bool bool_condition = false) {
    CatalogEntry e;
    e.op = std::move(op);
    e.name = std::move(name);
    e.operands = std::move(operands);
    e.bool_condition = bool_condition;
    e.dtypes = dtypes;
    e.reference = reference;
    e.exact = exact;
    e.call = std::move(call);
    entries.push_back(std::move(e));
  }
  // An op whose one case calls it on its operands.
  void simple(const std::string& op, std::vector<Domain> operands, DTypeSet dtypes,
              Reference reference = R::Float64, bool exact = false) {
    add(op, op, std::move(operands), dtypes, reference, exact, call_on(op));
  }
};

void add_arithmetic(Builder& b) {
  b.simple("add", {D::Any, D::Any}, kAll);
  b.add("add", "add.alpha", {D::Finite, D::Finite}, kAll, R::Float64, false,
        call_on("add", "alpha=2"));
  // A scalar is converted to the computation dtype first (bf16 - 1.7 subtracts bf16(1.7)).
  b.add("sub", "sub.scalar", {D::Finite}, kNoBool, R::SameDtype, false, call_on("sub", "1.7"));
  b.simple("sub", {D::Any, D::Any}, kNoBool);
  b.add("sub", "sub.alpha", {D::Finite, D::Finite}, kNoBool, R::Float64, false,
        call_on("sub", "alpha=3"));
  b.simple("mul", {D::Any, D::Any}, kAll);
  b.add("mul", "mul.scalar", {D::Finite}, kAll, R::Float64, false, call_on("mul", "3"));
  b.simple("div", {D::Any, D::NonZero}, kAll);
  // floor/trunc of a quotient rounded to the dtype: the quotient's rounding decides.
  b.add("div", "div.trunc", {D::Finite, D::NonZero}, kNoBool, R::SameDtype, false,
        call_on("div", "rounding_mode='trunc'"));
  b.add("div", "div.floor", {D::Finite, D::NonZero}, kNoBool, R::SameDtype, false,
        call_on("div", "rounding_mode='floor'"));
  b.simple("remainder", {D::Finite, D::NonZero}, kNoBool, R::SameDtype);
  b.simple("fmod", {D::Finite, D::NonZero}, kNoBool, R::SameDtype);
  b.simple("floor_divide", {D::Finite, D::NonZero}, kNoBool, R::SameDtype);
  b.add("pow", "pow.tensor", {D::Positive, D::Exponent}, kNoBool, R::Float64, false,
        call_on("pow"));
  b.add("pow", "pow.square", {D::Small}, kNoBool, R::Float64, false, call_on("pow", "2"));
  b.add("pow", "pow.cube", {D::Small}, kNoBool, R::Float64, false, call_on("pow", "3"));
  b.add("pow", "pow.half", {D::Positive}, kFloats, R::Float64, false, call_on("pow", "0.5"));
  b.simple("neg", {D::Any}, kNoBool, R::Float64, true);
  b.simple("abs", {D::Any}, kNoBool, R::Float64, true);
  b.simple("sign", {D::Any}, kAll, R::Float64, true);
  b.simple("reciprocal", {D::NonZero}, kAll);
}

void add_comparisons_and_logic(Builder& b) {
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    b.simple(op, {D::Coarse, D::Coarse}, kAll, R::Float64, true);
  }
  b.add("lt", "lt.scalar", {D::Coarse}, kAll, R::Float64, true, call_on("lt", "0.5"));
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) {
    b.simple(op, {D::Coarse, D::Coarse}, kAll, R::Float64, true);
  }
  b.simple("logical_not", {D::Coarse}, kAll, R::Float64, true);
  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    b.simple(op, {D::Any, D::Any}, kIntBool, R::Float64, true);
  }
  b.simple("bitwise_not", {D::Any}, kIntBool, R::Float64, true);
  b.simple("bitwise_left_shift", {D::Any, D::ShiftCount}, kInts, R::Float64, true);
  b.simple("bitwise_right_shift", {D::Any, D::ShiftCount}, kInts, R::Float64, true);
}

void add_math(Builder& b) {
  struct Unary {
    const char* op;
    Domain domain;
  };
  // Integer and bool inputs are promoted to float32 (PyTorch accepts every dtype).
  for (Unary u :
       {Unary{"exp", D::Small},      Unary{"exp2", D::Small},     Unary{"expm1", D::Small},
        Unary{"log", D::Positive},   Unary{"log2", D::Positive},  Unary{"log10", D::Positive},
        Unary{"log1p", D::Positive}, Unary{"sqrt", D::Positive},  Unary{"rsqrt", D::Positive},
        Unary{"sin", D::Finite},     Unary{"cos", D::Finite},     Unary{"tan", D::Unit},
        Unary{"asin", D::Unit},      Unary{"acos", D::Unit},      Unary{"atan", D::Any},
        Unary{"sinh", D::Small},     Unary{"cosh", D::Small},     Unary{"tanh", D::Any},
        Unary{"asinh", D::Any},      Unary{"acosh", D::AboveOne}, Unary{"atanh", D::Unit},
        Unary{"erf", D::Small},      Unary{"erfc", D::Small},     Unary{"erfinv", D::Unit},
        Unary{"sigmoid", D::Any}}) {
    b.simple(u.op, {u.domain}, kAll);
  }
  b.simple("relu", {D::Any}, kNoBool, R::Float64, true);
  b.simple("gelu", {D::Any}, kFloats);
  b.add("gelu", "gelu.tanh", {D::Any}, kFloats, R::Float64, false,
        call_on("gelu", "approximate='tanh'"));
  for (const char* op : {"silu", "softplus", "mish", "hardsigmoid", "hardswish", "elu"}) {
    b.simple(op, {D::Any}, kFloats);
  }
  b.simple("leaky_relu", {D::Any}, kFloats);
  b.simple("hardtanh", {D::Any}, kSignedFloats, R::Float64, true);
}

void add_clamp_rounding_classification(Builder& b) {
  // uint8 bounds stay in range (a negative bound of a uint8 clamp wraps in PyTorch).
  auto bounds = [](const std::string& op, const char* low_high) -> Call {
    return [op, low_high](const CallSite& s) -> std::optional<std::string> {
      const std::string x = s.operands[0];
      if (s.dtype == DType::UInt8)
        return op + "(" + x + ", " + (op == "clamp" ? "3, 200" : "100") + ")";
      return op + "(" + x + ", " + low_high + ")";
    };
  };
  const DTypeSet clamp_dtypes = kNoBool;
  b.add("clamp", "clamp", {D::Any}, clamp_dtypes, R::Float64, true, bounds("clamp", "-1, 1"));
  b.add("clamp_min", "clamp_min", {D::Any}, clamp_dtypes, R::Float64, true,
        bounds("clamp_min", "0"));
  b.add("clamp_max", "clamp_max", {D::Any}, clamp_dtypes, R::Float64, true,
        bounds("clamp_max", "0"));
  for (const char* op : {"floor", "ceil", "round", "trunc"}) {
    b.simple(op, {D::Any}, kNoBool, R::Float64, true);
  }
  // round(x * 10) / 10 with x * 10 rounded to the dtype.
  b.add("round", "round.decimals", {D::Finite}, kFloats, R::SameDtype, false,
        call_on("round", "decimals=1"));
  b.simple("frac", {D::Any}, kFloats, R::Float64, true);
  for (const char* op : {"isnan", "isinf", "isfinite"}) {
    b.simple(op, {D::Any}, kAll, R::Float64, true);
  }
  // Infinities become the dtype's largest finite value.
  b.simple("nan_to_num", {D::Any}, kAll, R::SameDtype, true);
}

void add_binary_math(Builder& b) {
  b.add("where", "where", {D::Coarse, D::Any, D::Any}, kAll, R::Float64, true, call_on("where"),
        /*bool_condition=*/true);
  b.add("where", "where.scalar", {D::Coarse, D::Any}, kAll, R::SameDtype, true,
        call_on("where", "0"),
        /*bool_condition=*/true);
  for (const char* op : {"maximum", "minimum", "fmax", "fmin"}) {
    b.simple(op, {D::Any, D::Any}, kAll, R::Float64, true);
  }
  b.simple("atan2", {D::Finite, D::Finite}, kAll);
  b.simple("hypot", {D::Finite, D::Finite}, kFloats);
  b.add("lerp", "lerp.scalar", {D::Finite, D::Finite}, kFloats, R::Float64, false,
        call_on("lerp", "0.25"));
  b.add("lerp", "lerp.tensor", {D::Finite, D::Finite, D::Unit}, kFloats, R::Float64, false,
        call_on("lerp"));
  b.simple("copysign", {D::Any, D::Any}, kAll);
  // Casts: float -> integer truncates toward zero; out-of-range values as PyTorch on x86.
  for (DType to : all_dtypes()) {
    const std::string target(dtype_name(to));
    b.add("_to_copy", "_to_copy." + target, {D::Wide}, kAll, R::SameDtype, true,
          call_on("_to_copy", "dtype='" + target + "'"));
  }
  for (const char* target : {"bool", "u8", "i32", "bf16", "f64"}) {
    b.add("convert_element_type", std::string("convert_element_type.") + target, {D::Wide}, kAll,
          R::SameDtype, true, call_on("convert_element_type", "'" + std::string(target) + "'"));
  }
}

// Reductions over the last dim, the first dim (with keepdim) and all dims.
void add_reductions(Builder& b) {
  auto variants = [&b](const std::string& op, Domain domain, DTypeSet dtypes, bool exact,
                       const std::string& extra = "") {
    const std::string tail = extra.empty() ? "" : ", " + extra;
    b.add(op, op + ".last", {domain}, dtypes, R::Float64, exact,
          [op, tail](const CallSite& s) -> std::optional<std::string> {
            return op + "(" + s.operands[0] + ", dim=-1" + tail + ")";
          });
    b.add(op, op + ".first_keepdim", {domain}, dtypes, R::Float64, exact,
          [op, tail](const CallSite& s) -> std::optional<std::string> {
            return op + "(" + s.operands[0] + ", dim=0, keepdim=True" + tail + ")";
          });
    b.add(op, op + ".all", {domain}, dtypes, R::Float64, exact,
          [op, tail](const CallSite& s) -> std::optional<std::string> {
            return op + "(" + s.operands[0] + tail + ")";
          });
  };
  variants("sum", D::Any, kAll, false);
  variants("prod", D::NearOne, kAll, false);
  variants("amax", D::Any, kAll, true);
  variants("amin", D::Any, kAll, true);
  variants("argmax", D::Coarse, kNoBool, true);
  variants("argmin", D::Coarse, kNoBool, true);
  variants("any", D::Coarse, kAll, true);
  variants("all", D::Coarse, kAll, true);
  variants("mean", D::Finite, kFloats, false);
  variants("var", D::Finite, kFloats, false, "correction=1");
  variants("std", D::Finite, kFloats, false, "correction=0");
  variants("var_mean", D::Finite, kFloats, false, "correction=1");
  for (size_t i = b.entries.size() - 3; i < b.entries.size(); ++i) {
    b.entries[i].result_count = [](const CallSite&) { return 2; };  // the var and the mean
  }
  // logsumexp has no all-dims default: its dim is required.
  b.add("logsumexp", "logsumexp.last", {D::Finite}, kAll, R::Float64, false,
        call_on("logsumexp", "-1"));
  b.add("logsumexp", "logsumexp.all_keepdim", {D::Finite}, kAll, R::Float64, false,
        [](const CallSite& s) -> std::optional<std::string> {
          std::vector<int64_t> dims;
          for (int d = 0; d < rank(s); ++d) dims.push_back(d);
          return "logsumexp(" + s.operands[0] + ", " + list(dims) + ", keepdim=True)";
        });
}

void add_views(Builder& b) {
  auto view = [&b](const std::string& op, const std::string& name, Call call) {
    b.add(op, name, {D::Any}, kAll, R::Float64, true, std::move(call));
  };
  view("slice", "slice.step", [](const CallSite& s) -> std::optional<std::string> {
    return "slice(" + s.operands[0] + ", dim=-1, start=" + (last_size(s) > 1 ? "1" : "0") +
           ", step=2)";
  });
  view("select", "select", [](const CallSite& s) -> std::optional<std::string> {
    return "select(" + s.operands[0] + ", 0, -1)";
  });
  view("narrow", "narrow", [](const CallSite& s) -> std::optional<std::string> {
    return "narrow(" + s.operands[0] + ", -1, " + std::to_string(last_size(s) / 3) + ", " +
           std::to_string(std::max<int64_t>(1, last_size(s) / 2)) + ")";
  });
  view("expand", "expand", [](const CallSite& s) -> std::optional<std::string> {
    std::vector<int64_t> target = s.sizes;
    target.insert(target.begin(), 3);
    return "expand(" + s.temp("unsqueeze(" + s.operands[0] + ", 0)") + ", " + list(target) + ")";
  });
  view("permute", "permute", [](const CallSite& s) -> std::optional<std::string> {
    std::vector<int64_t> dims;
    for (int d = rank(s); d-- > 0;) dims.push_back(d);
    return "permute(" + s.operands[0] + ", " + list(dims) + ")";
  });
  view("transpose", "transpose", [](const CallSite& s) -> std::optional<std::string> {
    return "transpose(" + s.operands[0] + ", 0, -1)";
  });
  view("unsqueeze", "unsqueeze", [](const CallSite& s) -> std::optional<std::string> {
    return "unsqueeze(" + s.operands[0] + ", -1)";
  });
  view("squeeze", "squeeze", [](const CallSite& s) -> std::optional<std::string> {
    return "squeeze(" + s.temp("unsqueeze(" + s.operands[0] + ", 1)") + ", dim=[1])";
  });
  view("reshape", "reshape.flat", [](const CallSite& s) -> std::optional<std::string> {
    return "reshape(" + s.operands[0] + ", [-1])";
  });
  // Splitting a dim is a view of any layout (torch.Tensor.view's stride rule).
  view("view", "view.split", [](const CallSite& s) -> std::optional<std::string> {
    std::vector<int64_t> sizes = s.sizes;
    for (size_t d = sizes.size(); d-- > 0;) {
      for (int64_t f : {2, 3, 5, 7}) {
        if (sizes[d] % f == 0 && sizes[d] > f) {
          sizes[d] /= f;
          sizes.insert(sizes.begin() + static_cast<int64_t>(d) + 1, f);
          return "view(" + s.operands[0] + ", " + list(sizes) + ")";
        }
      }
    }
    return "view(" + s.operands[0] + ", " + list(sizes) + ")";
  });
  b.add("cat", "cat", {D::Any, D::Any}, kAll, R::Float64, true,
        [](const CallSite& s) -> std::optional<std::string> {
          return "cat([" + s.operands[0] + ", " + s.operands[1] + "], -1)";
        });
  b.add("stack", "stack", {D::Any, D::Any}, kAll, R::Float64, true,
        [](const CallSite& s) -> std::optional<std::string> {
          return "stack([" + s.operands[0] + ", " + s.operands[1] + "], 1)";
        });
  // src is a slice (a select) of the second operand, so it has the window's sizes.
  b.add("slice_scatter", "slice_scatter", {D::Any, D::Any}, kAll, R::Float64, true,
        [](const CallSite& s) -> std::optional<std::string> {
          const std::string src = s.temp("slice(" + s.operands[1] + ", -1, 1, None, 2)");
          return "slice_scatter(" + s.operands[0] + ", " + src + ", -1, 1, None, 2)";
        });
  b.add("select_scatter", "select_scatter", {D::Any, D::Any}, kAll, R::Float64, true,
        [](const CallSite& s) -> std::optional<std::string> {
          const std::string src = s.temp("select(" + s.operands[1] + ", 0, -1)");
          return "select_scatter(" + s.operands[0] + ", " + src + ", 0, -1)";
        });
  view("split", "split", [](const CallSite& s) -> std::optional<std::string> {
    return "split(" + s.operands[0] + ", 2, -1)";
  });
  b.entries.back().result_count = [](const CallSite& s) {
    return static_cast<int>((last_size(s) + 1) / 2);
  };
  view("split_with_sizes", "split_with_sizes", [](const CallSite& s) -> std::optional<std::string> {
    if (last_size(s) < 2) return std::nullopt;
    return "split_with_sizes(" + s.operands[0] + ", " + list({1, last_size(s) - 1}) + ", -1)";
  });
  b.entries.back().result_count = [](const CallSite&) { return 2; };
  view("constant_pad_nd", "constant_pad_nd", [](const CallSite& s) -> std::optional<std::string> {
    return "constant_pad_nd(" + s.operands[0] + ", [1, 2, 0, 1], 1)";
  });
  // Negative pads slice.
  view("constant_pad_nd", "constant_pad_nd.negative",
       [](const CallSite& s) -> std::optional<std::string> {
         if (last_size(s) < 2) return std::nullopt;
         return "constant_pad_nd(" + s.operands[0] + ", [-1, 1])";
       });
  view("flip", "flip", [](const CallSite& s) -> std::optional<std::string> {
    return "flip(" + s.operands[0] + ", [0, -1])";
  });
  view("roll", "roll", [](const CallSite& s) -> std::optional<std::string> {
    return "roll(" + s.operands[0] + ", [2], [-1])";
  });
  view("roll", "roll.flat", [](const CallSite& s) -> std::optional<std::string> {
    return "roll(" + s.operands[0] + ", [-3])";
  });
  view("index_select", "index_select", [](const CallSite& s) -> std::optional<std::string> {
    return "index_select(" + s.operands[0] + ", -1, " + s.index_input({5}, last_size(s)) + ")";
  });
  view("gather", "gather", [](const CallSite& s) -> std::optional<std::string> {
    std::vector<int64_t> sizes = s.sizes;
    sizes.back() = 4;
    return "gather(" + s.operands[0] + ", -1, " + s.index_input(sizes, last_size(s)) + ")";
  });
  view("embedding", "embedding", [](const CallSite& s) -> std::optional<std::string> {
    if (rank(s) != 2) return std::nullopt;
    return "embedding(" + s.operands[0] + ", " + s.index_input({2, 3}, s.sizes[0]) + ")";
  });
  view("index", "index.tensor", [](const CallSite& s) -> std::optional<std::string> {
    return "index(" + s.operands[0] + ", [" + s.index_input({6}, s.sizes[0]) + "])";
  });
  view("clone", "clone", call_on("clone"));
  view("clone", "clone.preserve", call_on("clone", "memory_format='preserve_format'"));
  view("contiguous", "contiguous", call_on("contiguous"));
  // Overlapping windows over a dense copy: element (i, j) is element i + j of the storage.
  view("as_strided", "as_strided.overlapping", [](const CallSite& s) -> std::optional<std::string> {
    int64_t n = 1;
    for (int64_t d : s.sizes) n *= d;
    if (n < 2) return std::nullopt;
    // A contiguous copy: the storage order must not depend on the input's layout (the float64
    // reference converts inputs to dense tensors of their own).
    return "as_strided(" +
           s.temp("clone(" + s.operands[0] + ", memory_format='contiguous_format')") + ", " +
           list({n - 1, 2}) + ", [1, 1])";
  });
}

// Issue 7, point 3: the factory ops. Their results do not depend on the operand's values
// (only on its sizes and dtype), so they are exact and compared in the dtype itself.
void add_factories(Builder& b) {
  auto factory = [&b](const std::string& op, const std::string& name, DTypeSet dtypes, Call call) {
    b.add(op, name, {D::Any}, dtypes, R::SameDtype, true, call);
  };
  auto dtype = [](const CallSite& s) { return "dtype='" + std::string(dtype_name(s.dtype)) + "'"; };
  factory("full", "full", kAll, [dtype](const CallSite& s) -> std::optional<std::string> {
    return "full(" + list(s.sizes) + ", 1, " + dtype(s) + ")";
  });
  factory("zeros", "zeros", kAll, [dtype](const CallSite& s) -> std::optional<std::string> {
    return "zeros(" + list(s.sizes) + ", " + dtype(s) + ")";
  });
  factory("ones", "ones", kAll, [dtype](const CallSite& s) -> std::optional<std::string> {
    return "ones(" + list(s.sizes) + ", " + dtype(s) + ")";
  });
  factory("full_like", "full_like", kAll, call_on("full_like", "1"));
  factory("zeros_like", "zeros_like", kAll, call_on("zeros_like"));
  factory("ones_like", "ones_like", kAll, call_on("ones_like"));
  factory("fill", "fill", kAll, call_on("fill", "-1"));
  factory("scalar_tensor", "scalar_tensor", kAll,
          [dtype](const CallSite& s) -> std::optional<std::string> {
            return "scalar_tensor(1, " + dtype(s) + ")";
          });
  factory("arange", "arange", kNoBool, [dtype](const CallSite& s) -> std::optional<std::string> {
    return "arange(0, " + std::to_string(last_size(s)) + ", " + dtype(s) + ")";
  });
  factory("arange", "arange.float_step", kFloats,
          [dtype](const CallSite& s) -> std::optional<std::string> {
            return "arange(-0.5, " + std::to_string(last_size(s)) + ", 0.75, " + dtype(s) + ")";
          });
  factory("iota", "iota", kInts, [dtype](const CallSite& s) -> std::optional<std::string> {
    return "iota(" + std::to_string(last_size(s)) + ", start=-2, step=3, " + dtype(s) + ")";
  });
}

// Issue 14, point 3: the matrix products. The operands share their sizes, so the second
// factor is the first's shape transposed ([m, k] x [k, m]); addmm's and baddbmm's bias is a
// column of the third operand, expanded over the result's columns. Positive values keep the
// long sums of one sign, where the comparison tolerance's model holds (driver/tolerance.h).
// Lowering refuses them until it lands, so their cases x dtypes are known failures of the
// sweep (tests/sweep/KNOWN_FAILURES.md), which the CI fuzz run leaves out.
void add_contractions(Builder& b) {
  const DTypeSet numbers = kNoBool;  // torch has no bool matrix product
  // `name` transposed in its last two dims, as a new value.
  const auto transposed = [](const CallSite& s, const std::string& name) {
    return s.temp("transpose(" + name + ", -2, -1)");
  };
  b.add("mm", "mm", {D::Positive, D::Positive}, numbers, R::Float64, false,
        [transposed](const CallSite& s) -> std::optional<std::string> {
          if (rank(s) != 2) return std::nullopt;
          return "mm(" + s.operands[0] + ", " + transposed(s, s.operands[1]) + ")";
        });
  // bmm and baddbmm of rank-2 operands add a batch dim of 1.
  const auto batched = [transposed](const CallSite& s) {
    std::vector<std::string> factors = {s.operands[0], transposed(s, s.operands[1])};
    if (rank(s) == 2) {
      for (std::string& f : factors) f = s.temp("unsqueeze(" + f + ", 0)");
    }
    return factors[0] + ", " + factors[1];
  };
  b.add("bmm", "bmm", {D::Positive, D::Positive}, numbers, R::Float64, false,
        [batched](const CallSite& s) -> std::optional<std::string> {
          if (rank(s) != 2 && rank(s) != 3) return std::nullopt;
          return "bmm(" + batched(s) + ")";
        });
  b.add("addmm", "addmm", {D::Positive, D::Positive, D::Positive}, numbers, R::Float64, false,
        [transposed](const CallSite& s) -> std::optional<std::string> {
          if (rank(s) != 2) return std::nullopt;
          const std::string bias = s.temp("narrow(" + s.operands[2] + ", 1, 0, 1)");
          return "addmm(" + bias + ", " + s.operands[0] + ", " + transposed(s, s.operands[1]) +
                 ", beta=2, alpha=3)";
        });
  b.add("baddbmm", "baddbmm", {D::Positive, D::Positive, D::Positive}, numbers, R::Float64, false,
        [batched](const CallSite& s) -> std::optional<std::string> {
          if (rank(s) != 2 && rank(s) != 3) return std::nullopt;
          // A column of the third operand: [m, 1] or [batch, m, 1], expanded over the columns.
          const std::string bias =
              s.temp("narrow(" + s.operands[2] + ", " + std::to_string(rank(s) - 1) + ", 0, 1)");
          return "baddbmm(" + bias + ", " + batched(s) + ", beta=2, alpha=3)";
        });
}

// Issue 15, point 2: convolution. The first operand is the input [N, C, spatial...] (rank 3
// to 5); the weight is the second operand's leading window [N, C, min(3, size)...], so C_out
// is N; a padding of 1 keeps every window inside the padded input, and every other spatial
// dim is strided by 2. Positive values keep the sums of one sign (driver/tolerance.h).
void add_convolutions(Builder& b) {
  b.add("convolution", "convolution", {D::Positive, D::Positive}, kNoBool, R::Float64, false,
        [](const CallSite& s) -> std::optional<std::string> {
          const int r = rank(s);
          if (r < 3 || r > 5) return std::nullopt;
          for (int64_t size : s.sizes) {
            if (size == 0) return std::nullopt;  // eager refuses C_out == 0 and empty windows
          }
          std::string weight = s.operands[1];
          std::string stride, padding, dilation, output_padding;
          for (int d = 2; d < r; ++d) {
            const int64_t k = std::min<int64_t>(3, s.sizes[static_cast<size_t>(d)]);
            weight = s.temp("narrow(" + weight + ", " + std::to_string(d) + ", 0, " +
                            std::to_string(k) + ")");
            const std::string sep = d == 2 ? "" : ", ";
            stride += sep + (d % 2 == 0 ? "1" : "2");
            padding += sep + "1";
            dilation += sep + "1";
            output_padding += sep + "0";
          }
          return "convolution(" + s.operands[0] + ", " + weight + ", None, [" + stride + "], [" +
                 padding + "], [" + dilation + "], False, [" + output_padding + "], 1)";
        });
  // Its gradients: the input is the first operand [N, C, spatial...], the weight the second's
  // window [C_out, C, k...] with C_out = min(N, C) and k = 3 (1 for dims under 3) padded to
  // keep the spatial sizes, so grad_output is the third operand's first C_out channels.
  b.add("convolution_backward", "convolution_backward", {D::Positive, D::Positive, D::Positive},
        kFloats, R::Float64, false, [](const CallSite& s) -> std::optional<std::string> {
          const int r = rank(s);
          if (r < 3 || r > 5) return std::nullopt;
          for (int64_t size : s.sizes) {
            if (size == 0) return std::nullopt;
          }
          const int64_t out_channels = std::min(s.sizes[0], s.sizes[1]);
          std::string weight =
              s.temp("narrow(" + s.operands[1] + ", 0, 0, " + std::to_string(out_channels) + ")");
          const std::string grad =
              s.temp("narrow(" + s.operands[2] + ", 1, 0, " + std::to_string(out_channels) + ")");
          std::string ones, padding, zeros;
          for (int d = 2; d < r; ++d) {
            const int64_t k = s.sizes[static_cast<size_t>(d)] < 3 ? 1 : 3;
            weight = s.temp("narrow(" + weight + ", " + std::to_string(d) + ", 0, " +
                            std::to_string(k) + ")");
            const std::string sep = d == 2 ? "" : ", ";
            ones += sep + "1";
            padding += sep + std::to_string(k / 2);
            zeros += sep + "0";
          }
          return "convolution_backward(" + grad + ", " + s.operands[0] + ", " + weight +
                 ", None, [" + ones + "], [" + padding + "], [" + ones + "], False, [" + zeros +
                 "], 1, [True, True, True])";
        });
  b.entries.back().result_count = [](const CallSite&) { return 3; };
}

// Pooling over the last two dims of an operand of rank 3 ([C, H, W]) or 4 ([N, C, H, W]).
// Max and average pooling: a window of min(3, size) per dim, stride 2, padding 1 where the
// kernel allows it (up to half the kernel), ceil_mode; max pooling dilates a dim of 5 or more
// by 2. Max pooling of coarse values meets ties and NaNs (eager takes the first maximum and
// the last NaN); eager refuses a dim of size 0 other than the batch. Adaptive pooling halves
// H and widens W by one (windows of several lengths, overlapping). The backward ops take the
// forward's result over the same operand as grad_output (max pooling's backward also the
// forward's indices, so tied and NaN maxima route gradients as eager's do).
void add_pooling(Builder& b) {
  // The spatial sizes (H, W), or nullopt when the call does not apply.
  auto spatial = [](const CallSite& s, bool empty_batch_ok) -> std::optional<std::vector<int64_t>> {
    const int r = rank(s);
    if (r != 3 && r != 4) return std::nullopt;
    for (int d = 0; d < r; ++d) {
      if (s.sizes[static_cast<size_t>(d)] == 0 && !(empty_batch_ok && r == 4 && d == 0)) {
        return std::nullopt;
      }
    }
    return std::vector<int64_t>{s.sizes[static_cast<size_t>(r - 2)],
                                s.sizes[static_cast<size_t>(r - 1)]};
  };
  auto window = [](const std::vector<int64_t>& in, bool dilate) {
    std::vector<int64_t> kernel, padding, dilation;
    for (int64_t size : in) {
      kernel.push_back(std::min<int64_t>(3, size));
      padding.push_back(kernel.back() >= 2 ? 1 : 0);
      dilation.push_back(dilate && size >= 5 ? 2 : 1);
    }
    return std::vector<std::vector<int64_t>>{kernel, padding, dilation};
  };
  b.add("max_pool2d_with_indices", "max_pool2d_with_indices", {D::Coarse}, kNoBool, R::Float64,
        true, [spatial, window](const CallSite& s) -> std::optional<std::string> {
          const auto in = spatial(s, true);
          if (!in) return std::nullopt;
          const auto w = window(*in, true);
          return "max_pool2d_with_indices(" + s.operands[0] + ", " + list(w[0]) + ", [2, 2], " +
                 list(w[1]) + ", " + list(w[2]) + ", True)";
        });
  b.entries.back().result_count = [](const CallSite&) { return 2; };  // values, indices
  b.add("max_pool2d_with_indices_backward", "max_pool2d_with_indices_backward", {D::Coarse},
        kFloats, R::Float64, false,
        [spatial, window](const CallSite& s) -> std::optional<std::string> {
          const auto in = spatial(s, true);
          if (!in) return std::nullopt;
          const auto w = window(*in, true);
          const std::string args =
              list(w[0]) + ", [2, 2], " + list(w[1]) + ", " + list(w[2]) + ", True";
          const std::vector<std::string> forward =
              s.temp_results("max_pool2d_with_indices(" + s.operands[0] + ", " + args + ")", 2);
          return "max_pool2d_with_indices_backward(" + forward[0] + ", " + s.operands[0] + ", " +
                 args + ", " + forward[1] + ")";
        });
  b.add("avg_pool2d", "avg_pool2d", {D::Positive}, kFloats | dtype_bit(DType::Int64), R::Float64,
        false, [spatial, window](const CallSite& s) -> std::optional<std::string> {
          const auto in = spatial(s, true);
          if (!in) return std::nullopt;
          const auto w = window(*in, false);
          return "avg_pool2d(" + s.operands[0] + ", " + list(w[0]) + ", [2, 1], " + list(w[1]) +
                 ", True, False)";
        });
  b.add("avg_pool2d_backward", "avg_pool2d_backward", {D::Positive},
        kFloats | dtype_bit(DType::Int64), R::Float64, false,
        [spatial, window](const CallSite& s) -> std::optional<std::string> {
          const auto in = spatial(s, true);
          if (!in) return std::nullopt;
          const auto w = window(*in, false);
          const std::string args = list(w[0]) + ", [2, 1], " + list(w[1]) + ", True, False";
          const std::string grad = s.temp("avg_pool2d(" + s.operands[0] + ", " + args + ")");
          return "avg_pool2d_backward(" + grad + ", " + s.operands[0] + ", " + args + ", None)";
        });
  b.add("_adaptive_avg_pool2d", "_adaptive_avg_pool2d", {D::Positive}, kFloats, R::Float64, false,
        [](const CallSite& s) -> std::optional<std::string> {
          const int r = rank(s);
          if (r != 3 && r != 4) return std::nullopt;
          const int64_t h = s.sizes[static_cast<size_t>(r - 2)];
          const int64_t w = s.sizes[static_cast<size_t>(r - 1)];
          if (h == 0 || w == 0) return std::nullopt;  // eager refuses empty planes
          return "_adaptive_avg_pool2d(" + s.operands[0] + ", " + list({(h + 1) / 2, w + 1}) + ")";
        });
  b.add("_adaptive_avg_pool2d_backward", "_adaptive_avg_pool2d_backward", {D::Positive}, kFloats,
        R::Float64, false, [](const CallSite& s) -> std::optional<std::string> {
          const int r = rank(s);
          if (r != 3 && r != 4) return std::nullopt;
          const int64_t h = s.sizes[static_cast<size_t>(r - 2)];
          const int64_t w = s.sizes[static_cast<size_t>(r - 1)];
          if (h == 0 || w == 0) return std::nullopt;
          const std::string grad = s.temp("_adaptive_avg_pool2d(" + s.operands[0] + ", " +
                                          list({(h + 1) / 2, w + 1}) + ")");
          return "_adaptive_avg_pool2d_backward(" + grad + ", " + s.operands[0] + ")";
        });
}

// The scatters (issue 15, point 4) over operands of equal sizes: index_put along dim 0 and
// (with a None first) dim 1, index_add along dim 0, scatter, scatter_add and scatter_reduce
// along the last dim with an index of the operand's sizes; indices drawn in [0, size) repeat, so
// sums meet several values per element and writes are overwritten. Sums are compared with eager in
// the dtype itself (every addition rounds, in eager's order); writes copy exactly.
void add_scatters(Builder& b) {
  auto leading = [](const CallSite& s, size_t dim) -> std::optional<int64_t> {
    if (s.sizes.size() <= dim || s.sizes[dim] == 0) return std::nullopt;
    return s.sizes[dim];
  };
  for (const bool accumulate : {false, true}) {
    const std::string suffix = accumulate ? ".accumulate" : "";
    const std::string flag = accumulate ? ", True)" : ")";
    b.add("index_put", "index_put" + suffix, {D::Finite, D::Finite}, kAll,
          accumulate ? R::SameDtype : R::Float64, !accumulate,
          [leading, flag](const CallSite& s) -> std::optional<std::string> {
            const auto n = leading(s, 0);
            if (!n) return std::nullopt;
            return "index_put(" + s.operands[0] + ", [" + s.index_input({*n}, *n) + "], " +
                   s.operands[1] + flag;
          });
    b.add("index_put", "index_put.dim1" + suffix, {D::Finite, D::Finite}, kAll,
          accumulate ? R::SameDtype : R::Float64, !accumulate,
          [leading, flag](const CallSite& s) -> std::optional<std::string> {
            const auto n = leading(s, 1);
            if (!n || !leading(s, 0)) return std::nullopt;
            return "index_put(" + s.operands[0] + ", [None, " + s.index_input({*n}, *n) + "], " +
                   s.operands[1] + flag;
          });
  }
  b.add("index_add", "index_add", {D::Finite, D::Finite}, kAll, R::SameDtype, false,
        [leading](const CallSite& s) -> std::optional<std::string> {
          const auto n = leading(s, 0);
          if (!n) return std::nullopt;
          return "index_add(" + s.operands[0] + ", 0, " + s.index_input({*n}, *n) + ", " +
                 s.operands[1] + ")";
        });
  b.add("index_add", "index_add.alpha", {D::Small, D::Small}, kNoBool, R::SameDtype, false,
        [leading](const CallSite& s) -> std::optional<std::string> {
          const auto n = leading(s, 0);
          if (!n) return std::nullopt;
          return "index_add(" + s.operands[0] + ", 0, " + s.index_input({*n}, *n) + ", " +
                 s.operands[1] + ", alpha=2)";
        });
  for (const char* op : {"scatter", "scatter_add"}) {
    const bool add = std::string(op) == "scatter_add";
    b.add(op, op, {D::Finite, D::Finite}, kAll, add ? R::SameDtype : R::Float64, !add,
          [op](const CallSite& s) -> std::optional<std::string> {
            if (last_size(s) == 0) return std::nullopt;
            return std::string(op) + "(" + s.operands[0] + ", -1, " +
                   s.index_input(s.sizes, last_size(s)) + ", " + s.operands[1] + ")";
          });
  }
  // scatter_reduce: every reduction, with and without self (products of values near one,
  // extrema of coarse values: ties and NaNs).
  const std::vector<std::tuple<const char*, D, DTypeSet>> reductions = {
      {"sum", D::Finite, kAll},
      {"prod", D::NearOne, kAll},
      {"mean", D::Finite, kNoBool},
      {"amax", D::Coarse, kAll},
      {"amin", D::Coarse, kAll}};
  for (const auto& [reduce, domain, dtypes] : reductions) {
    for (const bool include_self : {true, false}) {
      const std::string r = reduce;
      const std::string flag = include_self ? "')" : "', include_self=False)";
      b.add("scatter_reduce", "scatter_reduce." + r + (include_self ? "" : ".without_self"),
            {domain, domain}, dtypes, R::SameDtype, r == "amax" || r == "amin",
            [r, flag](const CallSite& s) -> std::optional<std::string> {
              if (last_size(s) == 0) return std::nullopt;
              return "scatter_reduce(" + s.operands[0] + ", -1, " +
                     s.index_input(s.sizes, last_size(s)) + ", " + s.operands[1] + ", '" + r + flag;
            });
    }
  }
  b.add("scatter", "scatter.value", {D::Finite}, kNoBool, R::SameDtype, true,
        [](const CallSite& s) -> std::optional<std::string> {
          if (last_size(s) == 0) return std::nullopt;
          return "scatter(" + s.operands[0] + ", -1, " + s.index_input(s.sizes, last_size(s)) +
                 ", 3)";
        });
}

// Attention (issue 15, point 1) of a rank-4 operand with itself as query, key and value,
// causal; the backward takes the operand as the output's gradient too.
void add_attention(Builder& b) {
  const DTypeSet dtypes = dtype_bit(DType::Float32) | dtype_bit(DType::BFloat16);
  const std::string forward = "_scaled_dot_product_flash_attention_for_cpu";
  b.add(forward, forward, {D::Coarse}, dtypes, R::Float64, false,
        [forward](const CallSite& s) -> std::optional<std::string> {
          if (s.sizes.size() != 4) return std::nullopt;
          const std::string& x = s.operands[0];
          return forward + "(" + x + ", " + x + ", " + x + ", 0.0, True)";
        });
  b.entries.back().result_count = [](const CallSite&) { return 2; };  // output, logsumexp
  b.add(forward + "_backward", forward + "_backward", {D::Coarse}, dtypes, R::Float64, false,
        [forward](const CallSite& s) -> std::optional<std::string> {
          if (s.sizes.size() != 4) return std::nullopt;
          const std::string& x = s.operands[0];
          const std::vector<std::string> f =
              s.temp_results(forward + "(" + x + ", " + x + ", " + x + ", 0.0, True)", 2);
          return forward + "_backward(" + x + ", " + x + ", " + x + ", " + x + ", " + f[0] + ", " +
                 f[1] + ", 0.0, True)";
        });
  b.entries.back().result_count = [](const CallSite&) { return 3; };  // dq, dk, dv
}

std::vector<CatalogEntry> build() {
  Builder b;
  add_arithmetic(b);
  add_comparisons_and_logic(b);
  add_math(b);
  add_clamp_rounding_classification(b);
  add_binary_math(b);
  add_reductions(b);
  add_views(b);
  add_factories(b);
  add_contractions(b);  // issue 14, point 3
  add_convolutions(b);  // issue 15, point 2
  add_pooling(b);
  add_scatters(b);   // issue 15, point 4
  add_attention(b);  // issue 15, point 1
  return std::move(b.entries);
}

}  // namespace

bool contains(DTypeSet set, DType dtype) {
  return (set & dtype_bit(dtype)) != 0;
}

std::string result_targets(const std::string& name, int count, std::vector<std::string>& names) {
  names.clear();
  if (count <= 1) {
    names.push_back(name);
    return name;
  }
  std::string lhs;
  for (int i = 0; i < count; ++i) {
    names.push_back(name + "_" + std::to_string(i));
    lhs += (i ? ", " : "") + names.back();
  }
  return lhs;
}

std::vector<DType> all_dtypes() {
  return {DType::Bool,  DType::UInt8,   DType::Int8,     DType::Int16,   DType::Int32,
          DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
}

const std::vector<CatalogEntry>& op_catalog() {
  static const std::vector<CatalogEntry> entries = build();
  return entries;
}

std::vector<std::string> catalog_op_names() {
  std::set<std::string> names;
  for (const CatalogEntry& e : op_catalog()) names.insert(e.op);
  return {names.begin(), names.end()};
}

std::vector<std::string> missing_catalog_ops() {
  std::vector<std::string> missing;
  for (const std::string& op : catalog_op_names()) {
    if (ir::find_op_schema(op) == nullptr) missing.push_back(op);
  }
  return missing;
}

std::vector<std::string> uncatalogued_registered_ops() {
  const std::vector<std::string> known = catalog_op_names();
  std::vector<std::string> out;
  for (const std::string& op : ir::registered_op_names()) {
    if (!std::binary_search(known.begin(), known.end(), op)) out.push_back(op);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_runnable(const CatalogEntry& entry) {
  return ir::find_op_schema(entry.op) != nullptr;
}

}  // namespace stax::fuzz
