// The C++ printer of kernel IR.
#include "kernel/printer.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace stax::kernel {

namespace {

// The OpenMP spelling of a parallel loop's schedule policy (kernel_ir.h).
std::string schedule_name(SchedulePolicy policy) {
  switch (policy) {
    case SchedulePolicy::Static:
      return "static";
  }
  return "static";
}

std::string value_name(int id) {
  return "tmp" + std::to_string(id);
}

std::string elem_type(DType d) {
  return std::string(dtype_cpp_type(d));
}

std::string vec_type(DType d, int lanes) {
  return "stax::Vec<" + elem_type(d) + ", " + std::to_string(lanes) + ">";
}

std::string partial_array(const Kernel& k, const Accumulator& a, const std::string& part = "") {
  return "partial_" + k.name + "_" + a.name() + part;
}

ir::Scalar identity(ReductionType type, DType dtype) {
  return reduction_identity(type, dtype);
}

std::string_view combine_op(ReductionType type) {
  switch (type) {
    case ReductionType::Sum:
      return "op_add";
    case ReductionType::Prod:
      return "op_mul";
    case ReductionType::Max:
      return "op_maximum";
    case ReductionType::Min:
      return "op_minimum";
    case ReductionType::Any:
      return "op_logical_or";
    case ReductionType::All:
      return "op_logical_and";
    default:
      return "";
  }
}

std::string_view lane_reduce(ReductionType type) {
  switch (type) {
    case ReductionType::Sum:
      return "reduce_sum";
    case ReductionType::Prod:
      return "reduce_prod";
    case ReductionType::Max:
      return "reduce_max";
    case ReductionType::Min:
      return "reduce_min";
    case ReductionType::Any:
      return "reduce_any";
    case ReductionType::All:
      return "reduce_all";
    default:
      return "";
  }
}

bool is_arg(ReductionType t) {
  return t == ReductionType::ArgMax || t == ReductionType::ArgMin;
}
bool is_welford(ReductionType t) {
  return t == ReductionType::WelfordMean || t == ReductionType::WelfordM2;
}

// Part j of an accumulator's independent parts (kernel_ir.h): `base`, `base_1`, ...
std::string part_name(const std::string& base, int part) {
  return part == 0 ? base : base + "_" + std::to_string(part);
}

// Parts [lo, hi) combined pairwise in part order: ((p0 op p1) op (p2 op p3)).
std::string parts_combined(const Accumulator& a, const std::string& base, int lo, int hi) {
  if (hi - lo == 1) return part_name(base, lo);
  const int mid = lo + (hi - lo) / 2;
  return "stax::" + std::string(combine_op(a.type)) + "(" + parts_combined(a, base, lo, mid) +
         ", " + parts_combined(a, base, mid, hi) + ")";
}
std::string parts_combined(const Accumulator& a, const std::string& base) {
  return parts_combined(a, base, 0, a.independent);
}

// The printer reads every field of every statement kind explicitly, not through
// kernel_ir_visitor.h: printing is the one walk where each field has its own spelling, so a
// generic enumeration of uses would only move the per-kind code, not remove it.
class Printer {
 public:
  explicit Printer(const Kernel& k) : k_(k) {
    for_each_stmt(k.body, [&](const Stmt& s) {
      if (s.kind == StmtKind::Let) types_[s.let.id] = s.let.type;
    });
  }

  std::string run(int indent) {
    block(k_.body, indent);
    return out_.str();
  }

 private:
  void line(int indent, const std::string& text) {
    out_ << std::string(static_cast<size_t>(indent) * 2, ' ') << text << "\n";
  }
  // Pragmas start at column 0 like preprocessor lines do in most code bases.
  void pragma(const std::string& text) { out_ << "#pragma " << text << "\n"; }

  const ValueType& type_of(int id) const {
    auto it = types_.find(id);
    if (it == types_.end()) {
      throw std::logic_error("kernel " + k_.name + ": value " + value_name(id) + " is not defined");
    }
    return it->second;
  }

  std::string idx(const index::Expr& e) const { return index::to_cpp(e, k_.ranges); }

  std::string ptr(const std::string& buffer) const {
    auto it = k_.buffer_is_input.find(buffer);
    return pointer_name(buffer, it != k_.buffer_is_input.end() && it->second);
  }

  std::string count_arg(const Access& a) const { return a.count ? ", " + idx(*a.count) : ""; }

  std::string load_expr(const Let& l) const {
    const Access& a = l.access;
    const std::string p = ptr(a.buffer);
    const bool widened = a.storage != l.type.dtype;  // Half/BFloat16 held as float
    if (a.form == AccessForm::Scalar) {
      std::string element = p + "[" + idx(a.index) + "]";
      if (widened) element = "stax::convert<" + elem_type(l.type.dtype) + ">(" + element + ")";
      if (a.mask < 0) return element;
      return "(" + value_name(a.mask) + " ? " + element + " : " +
             cpp_literal(int64_t{0}, l.type.dtype) + ")";
    }
    const std::string vt = vec_type(l.type.dtype, l.type.lanes);
    switch (a.form) {
      case AccessForm::Contiguous:
        if (a.mask >= 0) {
          return vt + "::load_masked(" + p + " + " + idx(a.index) + ", " + value_name(a.mask) + ")";
        }
        return vt + "::load(" + p + " + " + idx(a.index) + count_arg(a) + ")";
      case AccessForm::Strided:
        return vt + "::load_strided(" + p + " + " + idx(a.index) + ", " + std::to_string(a.stride) +
               count_arg(a) + ")";
      case AccessForm::Gather:
        if (a.mask >= 0) {
          return vt + "::gather_masked(" + p + ", " + value_name(a.offsets) + ", " +
                 value_name(a.mask) + ")";
        }
        return vt + "::gather(" + p + ", " + value_name(a.offsets) + count_arg(a) + ")";
      default:
        return "";
    }
  }

  std::string args_list(const std::vector<int>& args) const {
    std::string s;
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + value_name(args[i]);
    return s;
  }

  // The reduced value of an accumulator after its loops (AccumulatorResult).
  std::string reduced(const Accumulator& a, bool m2, const ValueType& result) const {
    const std::string n = a.name();
    if (is_welford(a.type)) {
      const std::string field = m2 ? ".m2" : ".mean";
      return a.lanes > 1 ? "stax::welford_reduce(" + n + ")" + field : n + field;
    }
    if (is_arg(a.type)) {
      if (a.lanes == 1 || a.per_lane_result) return n + "_index";
      return "[&] { " + elem_type(a.dtype) + " value; int64_t index; stax::reduce_" +
             std::string(a.type == ReductionType::ArgMax ? "argmax" : "argmin") + "(" + n + ", " +
             n + "_index, value, index); return index; }()";
    }
    if (a.cascade) {
      if (a.lanes == 1) return "static_cast<float>(" + n + "_outer)";
      return a.per_lane_result ? n + "_outer.lanes()" : n + "_outer.total()";
    }
    if (a.lanes == 1 || a.per_lane_result) return parts_combined(a, n);
    (void)result;
    return "stax::" + std::string(lane_reduce(a.type)) + "(" + parts_combined(a, n) + ")";
  }

  // The thread partials of a split reduction combined in thread order (CombinePartials).
  std::string combined(const Accumulator& a, bool m2, const ValueType& result) const {
    const std::string team = "for (int t = 0; t < omp_get_num_threads(); ++t) ";
    const std::string p = partial_array(k_, a);
    const std::string T = elem_type(a.dtype);
    if (is_welford(a.type)) {
      return "[&] { stax::Welford<" + T + "> w{}; " + team + "stax::welford_combine(w, " + p +
             "[t]); return w" + (m2 ? ".m2" : ".mean") + "; }()";
    }
    if (is_arg(a.type)) {
      return "[&] { " + T + " value = " + cpp_literal(identity(a.type, a.dtype), a.dtype) +
             "; int64_t index = 0; " + team +
             "stax::" + (a.type == ReductionType::ArgMax ? "argmax_update" : "argmin_update") +
             "(value, index, " + partial_array(k_, a, "_value") + "[t], " +
             partial_array(k_, a, "_index") + "[t]); return index; }()";
    }
    if (a.type == ReductionType::Sum && a.dtype == DType::Float32) {
      // The partials of any number of threads are added in double (cascade_blocking.h).
      return "[&] { double s = 0.0; " + team + "s += " + p +
             "[t]; return static_cast<float>(s); }()";
    }
    return "[&] { " + elem_type(result.dtype) +
           " s = " + cpp_literal(identity(a.type, a.dtype), result.dtype) + "; " + team +
           "s = stax::" + std::string(combine_op(a.type)) + "(s, " + p + "[t]); return s; }()";
  }

  std::string let_expr(const Let& l) const {
    const bool vector = l.type.is_vector();
    switch (l.kind) {
      case LetKind::Constant:
        return vector ? vec_type(l.type.dtype, l.type.lanes) + "(" +
                            cpp_literal(l.constant, l.type.dtype) + ")"
                      : cpp_literal(l.constant, l.type.dtype);
      case LetKind::Load:
        return load_expr(l);
      case LetKind::Compute:
        return "stax::op_" + std::string(lowering::op_info(l.op).name) + "(" + args_list(l.args) +
               ")";
      case LetKind::Convert:
        if (l.via) {
          return "stax::round_to<" + elem_type(*l.via) + ">(" + value_name(l.args[0]) + ")";
        }
        return "stax::convert<" + elem_type(l.type.dtype) + ">(" + value_name(l.args[0]) + ")";
      case LetKind::IndexValue:
        if (vector) {
          return vec_type(l.type.dtype, l.type.lanes) + "::arange(" + idx(l.index) + ", " +
                 std::to_string(l.step) + ")";
        }
        return "static_cast<" + elem_type(l.type.dtype) + ">(" + idx(l.index) + ")";
      case LetKind::Broadcast:
        return vec_type(l.type.dtype, l.type.lanes) + "(" + value_name(l.args[0]) + ")";
      case LetKind::Blend:
        return vec_type(l.type.dtype, l.type.lanes) + "::set(" + value_name(l.args[0]) + ", " +
               value_name(l.args[1]) + ", " + idx(l.count) + ")";
      case LetKind::AccumulatorResult:
        return reduced(k_.accumulator(l.accumulator), l.welford_m2, l.type);
      case LetKind::CombinePartials:
        return combined(k_.accumulator(l.accumulator), l.welford_m2, l.type);
    }
    return "";
  }

  void accumulator_init(const Accumulator& a, int indent) {
    const std::string n = a.name();
    const bool vector = a.lanes > 1;
    const std::string T = vector ? vec_type(a.dtype, a.lanes) : elem_type(a.dtype);
    if (is_welford(a.type)) {
      line(indent, (vector ? "stax::WelfordVec<" + elem_type(a.dtype) + ", " +
                                 std::to_string(a.lanes) + "> "
                           : "stax::Welford<" + elem_type(a.dtype) + "> ") +
                       n + "{};");
      return;
    }
    const std::string init = cpp_literal(identity(a.type, a.dtype), a.dtype);
    if (a.cascade) {
      if (vector) {
        for (int j = 0; j < a.independent; ++j) {
          line(indent, T + " " + part_name(n + "_blk", j) + "(0.0f);");
        }
        line(indent, "stax::VecSumOuter<" + std::to_string(a.lanes) + "> " + n + "_outer;");
      } else {
        line(indent, "float " + n + "_blk = 0.0f;");
        line(indent, "double " + n + "_outer = 0.0;");
      }
      return;
    }
    for (int j = 0; j < a.independent; ++j) {
      const std::string p = part_name(n, j);
      line(indent, vector ? T + " " + p + "(" + init + ");" : T + " " + p + " = " + init + ";");
    }
    if (is_arg(a.type)) {
      line(indent, vector ? vec_type(DType::Int64, a.lanes) + " " + n + "_index(0);"
                          : "int64_t " + n + "_index = 0;");
    }
  }

  void reduce(const Stmt& s, int indent) {
    const Accumulator& a = k_.accumulator(s.accumulator);
    const std::string n = a.name();
    const std::string v = value_name(s.value);
    if (is_welford(a.type)) {
      line(indent,
           "stax::welford_update(" + n + ", " + v + (s.count ? ", " + idx(*s.count) : "") + ");");
      return;
    }
    if (is_arg(a.type)) {
      line(indent,
           "stax::" +
               std::string(a.type == ReductionType::ArgMax ? "argmax_update" : "argmin_update") +
               "(" + n + ", " + n + "_index, " + v + ", " + value_name(s.index_value) + ");");
      return;
    }
    const std::string target = part_name(a.cascade ? n + "_blk" : n, s.part);
    line(indent,
         target + " = stax::" + std::string(combine_op(a.type)) + "(" + target + ", " + v + ");");
  }

  void store_partial(const Accumulator& a, int indent) {
    const std::string t = "[omp_get_thread_num()]";
    const std::string n = a.name();
    if (is_arg(a.type)) {
      if (a.lanes == 1) {
        line(indent, partial_array(k_, a, "_value") + t + " = " + n + ";");
        line(indent, partial_array(k_, a, "_index") + t + " = " + n + "_index;");
      } else {
        line(indent, "stax::reduce_" +
                         std::string(a.type == ReductionType::ArgMax ? "argmax" : "argmin") + "(" +
                         n + ", " + n + "_index, " + partial_array(k_, a, "_value") + t + ", " +
                         partial_array(k_, a, "_index") + t + ");");
      }
      return;
    }
    if (is_welford(a.type)) {
      line(indent, partial_array(k_, a) + t + " = " +
                       (a.lanes > 1 ? "stax::welford_reduce(" + n + ")" : n) + ";");
      return;
    }
    line(indent, partial_array(k_, a) + t + " = " + reduced(a, false, {a.dtype, 1}) + ";");
  }

  void check(const Stmt& s, int indent) {
    const ValueType& t = type_of(s.value);
    const std::string v = value_name(s.value);
    const std::string range = std::to_string(s.lo) + ", " + std::to_string(s.hi);
    const std::string cond = s.check == CheckKind::DivisionByZero
                                 ? "stax::any_zero(" + v + ")"
                                 : "stax::any_out_of_range(" + v + ", " + range + ")";
    line(indent, "if (" + cond + ") {");
    if (s.check == CheckKind::IndexOutOfRange) {
      // The first offending lane is the value the error message names.
      const std::string bad = t.is_vector() ? v + "[l]" : v;
      line(indent + 1, "int64_t bad = 0;");
      if (t.is_vector()) {
        line(indent + 1, "for (int l = 0; l < " + std::to_string(t.lanes) + "; ++l) {");
        line(indent + 2, "if (" + bad + " < " + std::to_string(s.lo) + " || " + bad +
                             " >= " + std::to_string(s.hi) + ") {");
        line(indent + 3, "bad = " + bad + ";");
        line(indent + 3, "break;");
        line(indent + 2, "}");
        line(indent + 1, "}");
      } else {
        line(indent + 1, "bad = " + v + ";");
      }
    }
    pragma("omp critical(stax_error)");
    line(indent + 1, "if (*stax_error == 0) {");
    line(indent + 2, "*stax_error = " + std::to_string(s.error_code) + ";");
    if (s.check == CheckKind::IndexOutOfRange) line(indent + 2, "*stax_error_value = bad;");
    line(indent + 1, "}");
    line(indent, "}");
  }

  void store(const Stmt& s, int indent) {
    const Access& a = s.access;
    const ValueType& t = type_of(s.value);
    const std::string p = ptr(a.buffer);
    const std::string v = value_name(s.value);
    if (a.form == AccessForm::Scalar) {
      const bool narrowed = a.storage != t.dtype;
      line(indent, p + "[" + idx(a.index) + "] = " +
                       (narrowed ? "stax::convert<" + elem_type(a.storage) + ">(" + v + ")" : v) +
                       ";");
      return;
    }
    switch (a.form) {
      case AccessForm::Contiguous:
        if (a.streaming) {
          line(indent, v + ".store_stream(" + p + " + " + idx(a.index) + ");");
          break;
        }
        line(indent, v + ".store(" + p + " + " + idx(a.index) + count_arg(a) + ");");
        break;
      case AccessForm::Strided:
        line(indent, v + ".store_strided(" + p + " + " + idx(a.index) + ", " +
                         std::to_string(a.stride) + count_arg(a) + ");");
        break;
      case AccessForm::Gather:
        line(indent, v + ".scatter(" + p + ", " + value_name(a.offsets) + count_arg(a) + ");");
        break;
      default:
        break;
    }
  }

  void loop(const Stmt& s, int indent) {
    const Loop& l = *s.loop;
    if (l.kind == ForKind::Parallel) {
      pragma("omp for collapse(" + std::to_string(l.collapse) + ") schedule(" +
             schedule_name(l.schedule) + ")" + (l.nowait ? " nowait" : ""));
    }
    if (l.unroll > 1) pragma("GCC unroll " + std::to_string(l.unroll));
    const std::string& v = l.var;
    const std::string end = l.limit ? v + "_end" : idx(l.end);
    std::string header = "for (" + elem_type(l.index_type) + " " + v + " = " + idx(l.begin);
    if (l.limit) {
      const std::string e = idx(l.end);
      const std::string lim = std::to_string(*l.limit);
      header += ", " + v + "_end = " + e + " < " + lim + " ? " + e + " : " + lim;
    }
    header += "; " + v + " < " + end + "; " +
              (l.step == 1 ? "++" + v : v + " += " + std::to_string(l.step)) + ") {";
    line(indent, header);
    block(s.body, indent + 1);
    line(indent, "}");
  }

  void block(const Block& b, int indent) {
    for (const Stmt& s : b) stmt(s, indent);
  }

  void stmt(const Stmt& s, int indent) {
    switch (s.kind) {
      case StmtKind::Let: {
        const Let& l = s.let;
        const std::string T =
            l.type.is_vector() ? vec_type(l.type.dtype, l.type.lanes) : elem_type(l.type.dtype);
        line(indent, "const " + T + " " + value_name(l.id) + " = " + let_expr(l) + ";");
        break;
      }
      case StmtKind::Store:
        store(s, indent);
        break;
      case StmtKind::Loop:
        loop(s, indent);
        break;
      case StmtKind::Block:
        line(indent, "{");
        block(s.body, indent + 1);
        line(indent, "}");
        break;
      case StmtKind::Single:
        pragma(std::string("omp single") + (s.nowait ? " nowait" : ""));
        line(indent, "{");
        block(s.body, indent + 1);
        line(indent, "}");
        break;
      case StmtKind::Barrier:
        pragma("omp barrier");
        break;
      case StmtKind::LocalArray:
        // A one-element array indexed by a constant is a scalar to the C++ compiler (scalar
        // replacement of aggregates): it lives in a register.
        line(indent, std::string(s.elements > 1 ? "alignas(64) " : "") + elem_type(s.dtype) + " " +
                         s.name + "[" + std::to_string(s.elements) + "];");
        break;
      case StmtKind::DefineIndex:
        line(indent, "const " + elem_type(s.index_type) + " " + s.name + " = " +
                         (s.index ? idx(*s.index) : value_name(s.value)) + ";");
        break;
      case StmtKind::AccumulatorInit:
        accumulator_init(k_.accumulator(s.accumulator), indent);
        break;
      case StmtKind::Reduce:
        reduce(s, indent);
        break;
      case StmtKind::FoldBlock: {
        const Accumulator& a = k_.accumulator(s.accumulator);
        if (a.independent > 1) {
          // The parts are combined into part 0 before the fold, and restart at +0.
          const std::string blk = a.name() + "_blk";
          line(indent, blk + " = " + parts_combined(a, blk) + ";");
          for (int j = 1; j < a.independent; ++j) {
            line(indent,
                 part_name(blk, j) + " = " + cpp_value_type({a.dtype, a.lanes}) + "(0.0f);");
          }
        }
        line(indent, a.lanes > 1
                         ? a.name() + "_outer.fold(" + a.name() + "_blk);"
                         : "stax::cascade_fold(" + a.name() + "_outer, " + a.name() + "_blk);");
        break;
      }
      case StmtKind::StorePartial:
        store_partial(k_.accumulator(s.accumulator), indent);
        break;
      case StmtKind::Check:
        check(s, indent);
        break;
      case StmtKind::Call: {
        std::string args;
        for (const CallArg& a : s.call_args) {
          if (!args.empty()) args += ", ";
          if (a.kind == CallArg::Kind::Buffer) args += ptr(a.buffer);
          if (a.kind == CallArg::Kind::Value) args += value_name(a.value);
          if (a.kind == CallArg::Kind::Integer) args += std::to_string(a.integer);
        }
        line(indent, s.name + "(" + args + ");");
        break;
      }
      case StmtKind::Comment:
        line(indent, "// " + s.text);
        break;
      case StmtKind::ThreadCombine:
        throw std::logic_error("kernel " + k_.name +
                               ": a GPU thread combine in a CPU kernel (kernel/cuda/)");
      case StmtKind::TransposeBlock: {
        const BlockTranspose& t = s.transpose;
        line(indent, "stax::transpose_tile<" + elem_type(t.source.storage) + ", " +
                         std::to_string(t.rows) + ", " + std::to_string(t.cols) + ">(" +
                         ptr(t.source.buffer) + " + " + idx(t.source.index) + ", " +
                         std::to_string(t.source.stride) + ", " + ptr(t.destination.buffer) +
                         " + " + idx(t.destination.index) + ", " +
                         std::to_string(t.destination.stride) + ");");
        break;
      }
    }
  }

  const Kernel& k_;
  std::map<int, ValueType> types_;
  std::ostringstream out_;
};

}  // namespace

std::string pointer_name(const std::string& buffer, bool is_input) {
  return is_input ? "in_" + buffer : buffer;
}

std::string cpp_value_type(const ValueType& type) {
  return type.is_vector() ? vec_type(type.dtype, type.lanes) : elem_type(type.dtype);
}

std::string cpp_literal(const ir::Scalar& value, DType dtype) {
  const bool held_as_float = dtype == DType::Float16 || dtype == DType::BFloat16;
  const ir::Scalar v = ir::convert_scalar(value, held_as_float ? DType::Float32 : dtype);
  switch (dtype) {
    case DType::Bool:
      return v.bool_value() ? "true" : "false";
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16: {
      const float f = static_cast<float>(v.float_value());
      if (std::isnan(f)) return "__builtin_nanf(\"\")";
      if (std::isinf(f)) return f > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9gf", static_cast<double>(f));
      std::string s = buf;
      if (s.find_first_of(".eE") == std::string::npos) s.insert(s.size() - 1, ".0");
      return s;
    }
    case DType::Float64: {
      const double d = v.float_value();
      if (std::isnan(d)) return "__builtin_nan(\"\")";
      if (std::isinf(d)) return d > 0 ? "__builtin_inf()" : "(-__builtin_inf())";
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", d);
      std::string s = buf;
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
    default: {
      // Integers print exactly; INT64_MIN has no literal (9223372036854775808 overflows).
      const int64_t i = v.int_value();
      if (i == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
      return "static_cast<" + elem_type(dtype) + ">(" + std::to_string(i) +
             (dtype == DType::Int64 ? "LL" : "") + ")";
    }
  }
}

std::string print_kernel(const Kernel& kernel, int indent) {
  return Printer(kernel).run(indent);
}

std::string print_source_ops(const Kernel& kernel) {
  std::string line =
      "// ops of " + kernel.name + ": " + lowering::format_source_ops(kernel.source_ops);
  // Graph names are identifiers; a lowered graph built by hand could hold anything, and a
  // newline or a trailing backslash would carry the comment into the code.
  for (char& c : line) {
    if (c < ' ' || c > '~' || c == '\\') c = '?';
  }
  return line + "\n";
}

std::string print_kernel_preamble(const Kernel& k, int indent) {
  std::string out;
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  for (const Accumulator& a : k.accumulators) {
    if (!a.split) continue;
    const std::string n = "[STAX_MAX_THREADS];\n";
    if (is_arg(a.type)) {
      out += pad + elem_type(a.dtype) + " " + partial_array(k, a, "_value") + n;
      out += pad + "int64_t " + partial_array(k, a, "_index") + n;
    } else if (is_welford(a.type)) {
      out += pad + "stax::Welford<" + elem_type(a.dtype) + "> " + partial_array(k, a) + n;
    } else {
      out += pad + elem_type(lowering::reduction_result_dtype(a.type, a.dtype)) + " " +
             partial_array(k, a) + n;
    }
  }
  return out;
}

}  // namespace stax::kernel
