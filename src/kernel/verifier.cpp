// The kernel IR verifier.
#include "kernel/verifier.h"

#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "kernel/index_width.h"
#include "kernel/kernel_ir_visitor.h"

namespace stax::kernel {

namespace {

class Verifier {
 public:
  Verifier(const Kernel& k, const std::string& after) : k_(k), after_(after) {}

  void run() {
    scopes_.emplace_back();
    block(k_.body);
    int32_indices();
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw std::logic_error("kernel IR of " + k_.name + " after " + after_ + ": " + problem);
  }

  static std::string v(int id) { return "tmp" + std::to_string(id); }

  static std::string type_string(const ValueType& t) {
    return std::string(dtype_name(t.dtype)) + (t.is_vector() ? "x" + std::to_string(t.lanes) : "");
  }

  const ValueType& use(int id, const std::string& where) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (auto f = it->values.find(id); f != it->values.end()) return f->second;
    }
    fail(where + " uses " + v(id) + " before it is defined (or outside its scope)");
  }

  bool accumulator_in_scope(int acc) const {
    for (const Scope& s : scopes_) {
      if (s.accumulators.count(acc)) return true;
    }
    return false;
  }

  void require_accumulator(int acc, const std::string& where) const {
    if (acc < 0 || acc >= static_cast<int>(k_.accumulators.size())) {
      fail(where + " names accumulator " + std::to_string(acc) + ", which does not exist");
    }
    if (!accumulator_in_scope(acc)) {
      fail(where + " uses acc" + std::to_string(acc) + " before its declaration");
    }
  }

  void access(const Access& a, int lanes, const std::string& where) const {
    if (a.buffer.empty()) fail(where + " has no buffer");
    if ((a.form == AccessForm::Scalar) != (lanes == 1)) {
      fail(where + " of " + a.buffer + ": a " + (lanes == 1 ? "scalar" : "vector") +
           " value with a " + (a.form == AccessForm::Scalar ? "scalar" : "vector") + " access");
    }
    if (a.mask >= 0) {
      const ValueType& m = use(a.mask, where + " (mask)");
      if (m.dtype != DType::Bool) fail(where + " of " + a.buffer + ": mask is not bool");
      if (m.lanes != lanes)
        fail(where + " of " + a.buffer + ": mask lanes differ from the value's");
    }
    if (a.form == AccessForm::Gather) {
      const ValueType& o = use(a.offsets, where + " (offsets)");
      // int32 offsets only for loads: the API's scatter takes int64 ones.
      const bool int32_ok = where.rfind("load", 0) == 0;
      if (!(o.dtype == DType::Int64 || (int32_ok && o.dtype == DType::Int32)) || o.lanes != lanes) {
        fail(where + " of " + a.buffer + ": gather offsets are " + type_string(o) + ", not int64x" +
             std::to_string(lanes));
      }
    }
    if (a.count && !tail_count_fits(*a.count, lanes)) {
      fail(where + " of " + a.buffer + ": tail count " + index::to_string(*a.count) +
           " outside [1, " + std::to_string(lanes) + "]");
    }
  }

  // A tail's lane count: a constant in [1, lanes], or a run-time count (issue 33) that the
  // kernel's domain bounds within [0, lanes - 1] (an extent's remainder, 0 when it divides).
  bool tail_count_fits(const index::Expr& count, int64_t lanes) const {
    if (const auto c = count.constant_value()) return *c >= 1 && *c <= lanes;
    const auto b = index::bounds(count, k_.ranges);
    return b && b->lo >= 0 && b->hi <= lanes - 1;
  }

  void let(const Let& l) {
    const std::string where = v(l.id);
    if (l.type.lanes < 1) fail(where + " has " + std::to_string(l.type.lanes) + " lanes");
    std::vector<ValueType> args;
    for (int a : l.args) args.push_back(use(a, where));
    switch (l.kind) {
      case LetKind::Constant:
        break;
      case LetKind::Load:
        access(l.access, l.type.lanes, "load " + where);
        if (l.access.storage != l.type.dtype &&
            !(l.type.dtype == DType::Float32 &&
              (l.access.storage == DType::Float16 || l.access.storage == DType::BFloat16))) {
          fail("load " + where + " reads " + std::string(dtype_name(l.access.storage)) + " as " +
               std::string(dtype_name(l.type.dtype)));
        }
        break;
      case LetKind::Compute: {
        const auto& info = lowering::op_info(l.op);
        if (static_cast<int>(args.size()) != info.arity) {
          fail(where + ": " + std::string(info.name) + " takes " + std::to_string(info.arity) +
               " operands, got " + std::to_string(args.size()));
        }
        const bool where_op = l.op == PointwiseOp::Where;
        for (size_t i = 0; i < args.size(); ++i) {
          if (args[i].lanes != l.type.lanes) {
            fail(where + ": operand " + std::to_string(i) + " of " + std::string(info.name) +
                 " is " + type_string(args[i]) + ", the result " + type_string(l.type));
          }
          if (where_op && i == 0) {
            if (args[0].dtype != DType::Bool) fail(where + ": the condition of where is not bool");
            continue;
          }
          const DType first = where_op ? args[1].dtype : args[0].dtype;
          if (args[i].dtype != first) {
            fail(where + ": operands of " + std::string(info.name) + " differ in dtype");
          }
          if (!where_op && !lowering::op_accepts(l.op, args[i].dtype)) {
            fail(where + ": " + std::string(info.name) + " does not accept " +
                 std::string(dtype_name(args[i].dtype)));
          }
        }
        const DType expected =
            info.produces_bool ? DType::Bool : (where_op ? args[1].dtype : args[0].dtype);
        if (l.type.dtype != expected) {
          fail(where + ": " + std::string(info.name) + " yields " +
               std::string(dtype_name(expected)) + ", not " +
               std::string(dtype_name(l.type.dtype)));
        }
        break;
      }
      case LetKind::Convert:
        if (args.size() != 1 || args[0].lanes != l.type.lanes) {
          fail(where + ": a conversion changes the lane count");
        }
        if (l.via && (l.type.dtype != DType::Float32 || args[0].dtype != DType::Float32)) {
          fail(where + ": rounding through a 16-bit type is float to float");
        }
        break;
      case LetKind::IndexValue:
        if (l.type.dtype != DType::Int64 && l.type.dtype != DType::Int32) {
          fail(where + ": index values are int64 or int32");
        }
        break;
      case LetKind::Broadcast:
        if (args.size() != 1 || args[0].is_vector() || args[0].dtype != l.type.dtype ||
            !l.type.is_vector()) {
          fail(where + ": a broadcast takes a scalar of its dtype to a vector");
        }
        break;
      case LetKind::Blend:
        if (args.size() != 2 || args[0] != l.type || args[1] != l.type) {
          fail(where + ": blend operands differ from the result type");
        }
        if (!tail_count_fits(l.count, l.type.lanes)) fail(where + ": blend count out of range");
        break;
      case LetKind::AccumulatorResult:
        require_accumulator(l.accumulator, where);
        break;
      case LetKind::CombinePartials:
        // After the barrier, outside the accumulator's scope: it reads the partials.
        if (l.accumulator < 0 || l.accumulator >= static_cast<int>(k_.accumulators.size()) ||
            !k_.accumulator(l.accumulator).split) {
          fail(where + " combines the partials of an accumulator that is not split");
        }
        break;
    }
    scopes_.back().values[l.id] = l.type;
  }

  void stmt(const Stmt& s) {
    // Every value the statement reads is defined in scope, whichever field holds it
    // (kernel_ir_visitor.h lists them). The checks per kind below are explicit on purpose:
    // they are what each particular use requires of its type, not a walk over the fields.
    for_each_value_use(s, [&](int id, ValueRole role) {
      use(id, std::string(value_role_name(role)) + " of a " + std::string(stmt_kind_name(s.kind)));
    });
    switch (s.kind) {
      case StmtKind::Let:
        let(s.let);
        break;
      case StmtKind::Store: {
        const ValueType& t = use(s.value, "store to " + s.access.buffer);
        access(s.access, t.lanes, "store");
        if (s.access.mask >= 0) fail("store to " + s.access.buffer + " is masked");
        if (s.access.streaming &&
            (s.access.form != AccessForm::Contiguous || s.access.count || t.lanes == 1)) {
          fail("streaming store to " + s.access.buffer + " is not a full contiguous vector");
        }
        break;
      }
      case StmtKind::Loop: {
        const Loop& l = *s.loop;
        if (l.step < 1) fail("loop " + l.var + " has step " + std::to_string(l.step));
        if (!k_.ranges.extents.count(l.var)) fail("loop variable " + l.var + " has no range");
        if (l.kind == ForKind::Parallel) {
          parallel_loop(s);
          ++work_shared_;
          nested(s.body);
          --work_shared_;
        } else {
          nested(s.body);
        }
        break;
      }
      case StmtKind::Block:
        nested(s.body);
        break;
      case StmtKind::Single:
        if (work_shared_ > 0) fail("a single block inside a parallel loop");
        ++work_shared_;
        nested(s.body);
        --work_shared_;
        break;
      case StmtKind::AccumulatorInit:
        if (s.accumulator < 0 || s.accumulator >= static_cast<int>(k_.accumulators.size())) {
          fail("declaration of a missing accumulator");
        }
        scopes_.back().accumulators.insert(s.accumulator);
        break;
      case StmtKind::Reduce: {
        require_accumulator(s.accumulator, "reduce");
        const Accumulator& a = k_.accumulator(s.accumulator);
        const ValueType& t = use(s.value, "reduce into " + a.name());
        if (t.dtype != a.dtype || t.lanes != a.lanes) {
          fail("reduce into " + a.name() + " (" + std::string(dtype_name(a.dtype)) + "x" +
               std::to_string(a.lanes) + ") of a " + type_string(t) + " value");
        }
        if ((a.type == ReductionType::Any || a.type == ReductionType::All) &&
            a.dtype != DType::Bool) {
          fail(a.name() + ": any/all reduce bool values");
        }
        if (a.independent < 1 || s.part < 0 || s.part >= a.independent) {
          fail("reduce into part " + std::to_string(s.part) + " of " + a.name() + ", which has " +
               std::to_string(a.independent) + " independent parts");
        }
        if (a.independent > 1 &&
            (a.lanes == 1 || a.type == ReductionType::ArgMax || a.type == ReductionType::ArgMin ||
             a.type == ReductionType::WelfordMean || a.type == ReductionType::WelfordM2)) {
          fail(a.name() + ": independent parts of a scalar, arg or Welford accumulator");
        }
        if (a.type == ReductionType::ArgMax || a.type == ReductionType::ArgMin) {
          const ValueType& i = use(s.index_value, "reduce into " + a.name());
          if (i.dtype != DType::Int64 || i.lanes != a.lanes) fail(a.name() + ": bad index value");
        }
        break;
      }
      case StmtKind::FoldBlock:
        require_accumulator(s.accumulator, "fold");
        if (!k_.accumulator(s.accumulator).cascade) fail("fold of a non-blocked accumulator");
        break;
      case StmtKind::StorePartial:
        require_accumulator(s.accumulator, "partial store");
        break;
      case StmtKind::Check: {
        const ValueType& t = use(s.value, "check");
        if (s.check == CheckKind::DivisionByZero && !is_integral(t.dtype)) {
          fail("a division check on a " + type_string(t) + " divisor");
        }
        if (s.check == CheckKind::IndexOutOfRange && t.dtype != DType::Int64) {
          fail("an index check on a " + type_string(t) + " value");
        }
        if (s.error_code <= 0) fail("a check without an error code");
        break;
      }
      case StmtKind::DefineIndex:
        if (!s.index) {
          const ValueType& t = use(s.value, "index " + s.name);
          if (t.dtype != DType::Int64) fail("index " + s.name + " is not int64");
        }
        break;
      case StmtKind::Call:
        for (const CallArg& a : s.call_args) {
          if (a.kind == CallArg::Kind::Value) use(a.value, "call of " + s.name);
        }
        break;
      case StmtKind::LocalArray:
        scopes_.back().arrays[s.name] = &s;
        break;
      case StmtKind::TransposeBlock:
        transpose_block(s.transpose);
        break;
      case StmtKind::Barrier:
      case StmtKind::Comment:
        break;
      case StmtKind::ThreadCombine:
        fail("a GPU thread combine in a CPU kernel");
        break;
    }
  }

  // Issue 6 point 8: every int32 loop, index variable and index value provably fits, and so
  // does every index expression an int32 variable takes part in (C++ computes its subterms
  // in int32). Indirect indices stay int64: their range check runs on the int64 value.
  void int32_indices() const {
    std::set<std::string> int32_vars;
    auto fits = [](const std::optional<int64_t>& m) { return m && *m <= kInt32IndexMax; };
    for_each_stmt(k_.body, [&](const Stmt& s) {
      if (s.kind == StmtKind::Loop && s.loop->index_type != DType::Int64) {
        const Loop& l = *s.loop;
        if (l.index_type != DType::Int32) fail("loop " + l.var + " is neither int64 nor int32");
        if (!fits(loop_header_magnitude(l, k_.ranges))) {
          fail("int32 loop " + l.var + " may leave int32 (its bounds or its last step)");
        }
        int32_vars.insert(l.var);
      }
      if (s.kind == StmtKind::DefineIndex && s.index_type != DType::Int64) {
        if (s.index_type != DType::Int32 || !s.index) {
          fail("index " + s.name + " is int32 but " +
               (s.index ? "neither int64 nor int32"
                        : "read from a tensor (indirect indices are int64)"));
        }
        if (!fits(index_magnitude_as_printed(*s.index, k_.ranges))) {
          fail("int32 index " + s.name + " = " + index::to_string(*s.index) + " may leave int32");
        }
        int32_vars.insert(s.name);
      }
      if (s.kind == StmtKind::Let && s.let.kind == LetKind::IndexValue &&
          s.let.type.dtype == DType::Int32 && !fits(index_value_magnitude(s.let, k_.ranges))) {
        fail("int32 index value tmp" + std::to_string(s.let.id) + " = " +
             index::to_string(s.let.index) + " may leave int32");
      }
    });
    for_each_index_expr(k_, [&](const index::Expr& e, const std::string& where) {
      for (const std::string& v : index::free_vars(e)) {
        if (!int32_vars.count(v) || fits(index_magnitude_as_printed(e, k_.ranges))) continue;
        fail(where + ": " + index::to_string(e) + " with int32 " + v + " may overflow int32");
      }
    });
  }

  // A parallel loop is not inside another parallel loop or a single block (OpenMP does not
  // nest work sharing in one region), shares loops that are perfectly nested in it, and is
  // scheduled statically when it holds a split reduction's iterations (their partials are
  // combined in thread order).
  void parallel_loop(const Stmt& s) const {
    const Loop& l = *s.loop;
    if (work_shared_ > 0) fail("parallel loop " + l.var + " inside work that is already shared");
    if (l.collapse < 1) fail("parallel loop " + l.var + " collapses " + std::to_string(l.collapse));
    const Stmt* at = &s;
    for (int level = 1; level < l.collapse; ++level) {
      const Stmt* inner = nullptr;
      for (const Stmt& c : at->body) {
        if (c.kind == StmtKind::Comment) continue;
        if (c.kind != StmtKind::Loop || inner != nullptr) {
          fail("parallel loop " + l.var + " collapses " + std::to_string(l.collapse) +
               " loops that are not perfectly nested");
        }
        inner = &c;
      }
      if (inner == nullptr) fail("parallel loop " + l.var + " has fewer loops than it collapses");
      at = inner;
    }
    if (k_.decisions.split_reduction && l.role == LoopRole::Reduction &&
        l.schedule != SchedulePolicy::Static) {
      fail("the split reduction loop " + l.var + " is not scheduled statically");
    }
  }

  const Stmt* local_array(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (auto f = it->arrays.find(name); f != it->arrays.end()) return f->second;
    }
    return nullptr;
  }

  // A block read from any buffer into a local tile of the same element type whose rows hold
  // a column of the block each, at distinct places.
  void transpose_block(const BlockTranspose& t) const {
    const std::string where = "transpose of " + t.source.buffer + " into " + t.destination.buffer;
    if (t.source.buffer.empty()) fail("a block transpose has no source buffer");
    if (t.rows < 1 || t.cols < 1) {
      fail(where + ": a " + std::to_string(t.rows) + "x" + std::to_string(t.cols) + " block");
    }
    const Stmt* array = local_array(t.destination.buffer);
    if (array == nullptr) fail(where + ": the destination is not a local array in scope");
    if (t.source.storage != t.destination.storage || array->dtype != t.source.storage) {
      fail(where + ": element types " + std::string(dtype_name(t.source.storage)) + ", " +
           std::string(dtype_name(t.destination.storage)) + " and the array's " +
           std::string(dtype_name(array->dtype)) + " differ");
    }
    if (t.destination.stride < t.rows) {
      fail(where + ": destination rows of " + std::to_string(t.destination.stride) +
           " elements overlap the block's " + std::to_string(t.rows) + " rows");
    }
    if ((t.cols - 1) * t.destination.stride + t.rows > array->elements) {
      fail(where + ": the block does not fit the " + std::to_string(array->elements) +
           "-element array");
    }
    if (t.source.mask >= 0 || t.source.count || t.destination.mask >= 0 || t.destination.count) {
      fail(where + ": a block transpose is neither masked nor partial");
    }
  }

  void nested(const Block& b) {
    scopes_.emplace_back();
    block(b);
    scopes_.pop_back();
  }

  void block(const Block& b) {
    for (const Stmt& s : b) stmt(s);
  }

  struct Scope {
    std::map<int, ValueType> values;
    std::set<int> accumulators;
    std::map<std::string, const Stmt*> arrays;  // LocalArray declarations by name
  };

  const Kernel& k_;
  std::string after_;
  std::vector<Scope> scopes_;
  int work_shared_ = 0;  // parallel loops and single blocks around the current statement
};

}  // namespace

void verify(const Kernel& kernel, const std::string& after) {
  Verifier(kernel, after).run();
}

bool verification_enabled() {
#ifndef NDEBUG
  return true;
#else
  const char* env = std::getenv("STAX_VERIFY_KERNEL_IR");
  return env != nullptr && std::string(env) == "1";
#endif
}

}  // namespace stax::kernel
