// The op catalogue: one entry per case of every op of issue 6. The dtype sets are those
// PyTorch 2.13 accepts (checked op by op with torch.ops.aten); calls use the ATen argument
// names.
#include "fuzz/op_catalog.h"
#include "fuzz/op_catalog_builder.h"

#include <algorithm>
#include <set>

#include "ir/op_schema.h"

namespace stax::fuzz {

namespace {

using namespace catalog;  // NOLINT: the catalogue's vocabulary

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
  // Several tensor indices, broadcast together: adjacent ([2, 1] and [3] over dims 0 and 1),
  // and separated by a None (their broadcast dims come first).
  view("index", "index.tensor.two", [](const CallSite& s) -> std::optional<std::string> {
    if (rank(s) < 2) return std::nullopt;
    return "index(" + s.operands[0] + ", [" + s.index_input({2, 1}, s.sizes[0]) + ", " +
           s.index_input({3}, s.sizes[1]) + "])";
  });
  view("index", "index.tensor.separated", [](const CallSite& s) -> std::optional<std::string> {
    if (rank(s) < 3) return std::nullopt;
    return "index(" + s.operands[0] + ", [" + s.index_input({4}, s.sizes[0]) + ", None, " +
           s.index_input({4}, s.sizes[2]) + "])";
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
  add_scans(b);      // issue 16, point 7
  add_mutations(b);  // issue 16, point 6
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
