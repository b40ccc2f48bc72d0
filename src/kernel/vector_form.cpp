// Vectorization of scalar kernel IR along one loop variable.
#include "kernel/vector_form.h"

#include <stdexcept>

#include "kernel/kernel_ir_visitor.h"

namespace stax::kernel {

using index::Expr;

std::optional<AccessForm> affine_access_form(const Expr& index, const std::string& var,
                                             const index::Domain& ranges, int64_t* stride) {
  const auto s = index::stride(index, var, ranges);
  if (!s) return std::nullopt;
  *stride = *s;
  return *s == 1 ? AccessForm::Contiguous : AccessForm::Strided;
}

namespace {

// An index that reads through vectorized indirect variables: rest + sum of coefficient *
// variable, with `rest` affine in the loop variable.
struct Decomposed {
  Expr rest;
  std::vector<std::pair<std::string, int64_t>> terms;
  int64_t rest_stride = 0;
};

std::optional<Decomposed> decompose(const Expr& e, const std::set<std::string>& indirect,
                                    const std::string& var, const index::Domain& ranges) {
  Decomposed d;
  std::map<std::string, Expr> zero;
  for (const std::string& v : indirect) {
    if (index::depends_on(e, v)) zero[v] = Expr(0);
  }
  d.rest = index::substitute(e, zero);
  Expr rebuilt = d.rest;
  for (const auto& [v, unused] : zero) {
    const auto c = index::stride(e, v, ranges);
    if (!c) return std::nullopt;
    d.terms.push_back({v, *c});
    rebuilt = rebuilt + Expr(*c) * Expr::var(v);
  }
  if (rebuilt != e) return std::nullopt;
  const auto s = index::stride(d.rest, var, ranges);
  if (!s) return std::nullopt;
  d.rest_stride = *s;
  return d;
}

// The vector form as a mutator: the hooks of the statements whose form changes (definitions,
// stores, reductions, checks, index definitions); every other statement is rebuilt by the
// base with its values renamed to their vector-form ids (mutate_value), its accumulators
// renamed (mutate_accumulator) and its indices substituted (mutate_index).
class Vectorizer : public IRMutator {
 public:
  Vectorizer(Kernel& k, const VectorContext& c) : k_(k), c_(c) {}

  Block run(const Block& scalar) { return mutate(scalar); }

 private:
  ValueType type(int id) const { return types_.at(id); }
  bool vector(int id) const { return types_.at(id).is_vector(); }

  int emit(Block& out, Let l) {
    l.id = k_.new_value_id();
    types_[l.id] = l.type;
    const int id = l.id;
    out.push_back(make_let(std::move(l)));
    return id;
  }

  int constant(Block& out, const ir::Scalar& value, DType dtype) {
    Let l;
    l.kind = LetKind::Constant;
    l.type = {dtype, 1};
    l.constant = ir::convert_scalar(value, dtype);
    return emit(out, std::move(l));
  }

  int broadcast(Block& out, int id) {
    if (vector(id)) return id;
    if (auto it = broadcasts_.find(id); it != broadcasts_.end()) return it->second;
    Let l;
    l.kind = LetKind::Broadcast;
    l.type = {type(id).dtype, c_.lanes};
    l.args = {id};
    const int b = emit(out, std::move(l));
    broadcasts_[id] = b;
    return b;
  }

  // Lanes >= count replaced by `fill` (a masked tail's dead lanes).
  int blend_tail(Block& out, int id, const ir::Scalar& fill) {
    if (!c_.count || !vector(id)) return id;
    const int f = broadcast(out, constant(out, fill, type(id).dtype));
    Let l;
    l.kind = LetKind::Blend;
    l.type = type(id);
    l.args = {f, id};
    l.count = *c_.count;
    return emit(out, std::move(l));
  }

  int index_vector(Block& out, const Expr& base, int64_t step) {
    Let l;
    l.kind = LetKind::IndexValue;
    l.type = {DType::Int64, c_.lanes};
    l.index = base;
    l.step = step;
    return emit(out, std::move(l));
  }

  int compute(Block& out, PointwiseOp op, std::vector<int> args, DType result) {
    Let l;
    l.kind = LetKind::Compute;
    l.op = op;
    l.args = std::move(args);
    l.type = {result, c_.lanes};
    return emit(out, std::move(l));
  }

  Expr subst(const Expr& e) const {
    return c_.substitution.empty()
               ? e
               : index::simplify(index::substitute(e, c_.substitution), k_.ranges);
  }

  bool vector_index(const Expr& e) const {
    if (index::depends_on(e, c_.var)) return true;
    for (const auto& [v, id] : indirect_) {
      if (index::depends_on(e, v)) return true;
    }
    return false;
  }

  // Gives a vector access its form; `what` names it in errors.
  void vector_access(Block& out, Access& a, const std::string& what) {
    std::set<std::string> indirect;
    for (const auto& [v, id] : indirect_) {
      if (index::depends_on(a.index, v)) indirect.insert(v);
    }
    if (indirect.empty()) {
      int64_t stride = 0;
      const auto form = affine_access_form(a.index, c_.var, k_.ranges, &stride);
      if (!form) {
        throw std::logic_error(what + " of " + a.buffer + ": index " + index::to_string(a.index) +
                               " is not affine in " + c_.var);
      }
      a.form = *form;
      a.stride = stride;
      if (a.form == AccessForm::Strided && a.mask >= 0) {
        // There is no masked strided load: a gather with the strided offsets is one.
        a.form = AccessForm::Gather;
        a.offsets = index_vector(out, a.index, stride);
      }
    } else {
      const auto d = decompose(a.index, indirect, c_.var, k_.ranges);
      if (!d) {
        throw std::logic_error(what + " of " + a.buffer + ": index " + index::to_string(a.index) +
                               " is not linear in its indirect indices");
      }
      int offsets = index_vector(out, d->rest, d->rest_stride);
      for (const auto& [v, coefficient] : d->terms) {
        const int c = broadcast(out, constant(out, coefficient, DType::Int64));
        const int scaled = compute(out, PointwiseOp::Mul, {c, indirect_.at(v)}, DType::Int64);
        offsets = compute(out, PointwiseOp::Add, {offsets, scaled}, DType::Int64);
      }
      a.form = AccessForm::Gather;
      a.offsets = offsets;
    }
    if (c_.count) {
      if (a.mask >= 0) {
        a.mask = blend_tail(out, a.mask, 0.0);  // dead lanes are masked off
      } else {
        a.count = c_.count;
      }
    }
  }

  void mutate_let(const Stmt& s, Block& out) override {
    const Let& l = s.let;
    // Operands and masks renamed, indices substituted, the accumulator renamed.
    Let n = rebuild(s).let;
    switch (l.kind) {
      case LetKind::Load: {
        const bool vec =
            vector_index(n.access.index) || (n.access.mask >= 0 && vector(n.access.mask));
        if (vec) {
          if (n.access.mask >= 0) n.access.mask = broadcast(out, n.access.mask);
          n.type.lanes = c_.lanes;
          vector_access(out, n.access, "load");
        }
        break;
      }
      case LetKind::Compute: {
        bool vec = false;
        for (int a : n.args) vec = vec || vector(a);
        if (vec) {
          for (int& a : n.args) a = broadcast(out, a);
          n.type.lanes = c_.lanes;
        }
        break;
      }
      case LetKind::Convert:
        n.type.lanes = type(n.args[0]).lanes;
        break;
      case LetKind::IndexValue: {
        if (vector_index(n.index)) {
          int64_t stride = 0;
          if (!affine_access_form(n.index, c_.var, k_.ranges, &stride)) {
            throw std::logic_error("index value " + index::to_string(n.index) +
                                   " is not affine in " + c_.var);
          }
          n.type.lanes = c_.lanes;
          n.step = stride;
        }
        break;
      }
      case LetKind::AccumulatorResult: {
        const Accumulator& a = k_.accumulator(n.accumulator);
        n.type.lanes = a.per_lane_result ? a.lanes : 1;
        break;
      }
      default:
        break;
    }
    map_[l.id] = emit(out, std::move(n));
  }

  int mutate_value(int id, ValueRole) override { return map_.at(id); }
  int mutate_accumulator(int id) override { return acc(id); }
  Expr mutate_index(const Expr& e, IndexRole) override { return subst(e); }
  // Broadcasts made in a nested body are not visible after it.
  Block mutate_body(const Stmt&, const Block& body) override {
    const auto saved = broadcasts_;
    Block out = mutate(body);
    broadcasts_ = saved;
    return out;
  }

  int acc(int id) const {
    auto it = c_.accumulators.find(id);
    return it == c_.accumulators.end() ? id : it->second;
  }

  // The hooks below start from the base's rebuild (values renamed, indices substituted,
  // accumulators renamed) and add what the vector form changes.
  void mutate_store(const Stmt& s, Block& out) override {
    Stmt n = rebuild(s);
    if (vector_index(n.access.index)) {
      n.value = broadcast(out, n.value);
      vector_access(out, n.access, "store");
    } else if (vector(n.value)) {
      throw std::logic_error("a vector value stored at the scalar position " +
                             index::to_string(n.access.index) + " of " + s.access.buffer);
    }
    out.push_back(std::move(n));
  }

  void mutate_reduce(const Stmt& s, Block& out) override {
    Stmt n = rebuild(s);
    const Accumulator& a = k_.accumulator(n.accumulator);
    if (a.lanes > 1) {
      n.value = broadcast(out, n.value);
      if (n.index_value >= 0) n.index_value = broadcast(out, n.index_value);
    }
    if (a.type == ReductionType::WelfordMean) {
      n.count = c_.count;
    } else {
      n.value = blend_tail(out, n.value, reduction_identity(a.type, a.dtype));
    }
    out.push_back(std::move(n));
  }

  void mutate_check(const Stmt& s, Block& out) override {
    Stmt n = rebuild(s);
    n.value = blend_tail(out, n.value, s.check == CheckKind::DivisionByZero ? 1.0 : 0.0);
    out.push_back(std::move(n));
  }

  void mutate_define_index(const Stmt& s, Block& out) override {
    Stmt n = rebuild(s);
    if (!n.index && vector(n.value)) {
      indirect_[s.name] = n.value;  // loads through it gather
      return;
    }
    out.push_back(std::move(n));
  }

  Kernel& k_;
  const VectorContext& c_;
  std::map<int, int> map_;
  std::map<int, ValueType> types_;
  std::map<int, int> broadcasts_;
  std::map<std::string, int> indirect_;
};

}  // namespace

Block vectorize_block(Kernel& kernel, const Block& scalar, const VectorContext& context) {
  return Vectorizer(kernel, context).run(scalar);
}

VectorAnalysis analyze_vector_form(const Kernel& k, const Block& scalar, const std::string& var) {
  VectorAnalysis result;
  std::set<int>& varying = result.varying;
  std::optional<std::string>& obstacle = result.obstacle;
  std::set<std::string> indirect;  // the indirect indices among the varying values
  auto varies = [&](const Expr& e) {
    if (index::depends_on(e, var)) return true;
    for (const std::string& v : indirect) {
      if (index::depends_on(e, v)) return true;
    }
    return false;
  };
  auto check_access = [&](const Access& a, const std::string& what) {
    std::set<std::string> used;
    for (const std::string& v : indirect) {
      if (index::depends_on(a.index, v)) used.insert(v);
    }
    int64_t stride = 0;
    if (used.empty()) {
      if (!affine_access_form(a.index, var, k.ranges, &stride)) {
        obstacle = what + " of " + a.buffer + " at " + index::to_string(a.index) +
                   " has no constant stride along " + var;
      }
    } else if (!decompose(a.index, used, var, k.ranges)) {
      obstacle = what + " of " + a.buffer + " at " + index::to_string(a.index) +
                 " is not linear in its indirect indices";
    }
  };
  for_each_stmt(scalar, [&](const Stmt& s) {
    if (obstacle) return;
    if (s.kind == StmtKind::Let) {
      const Let& l = s.let;
      // A value varies when anything it reads does (operands, a load's mask).
      bool v = false;
      for_each_value_use(l, [&](int a, ValueRole) { v = v || varying.count(a) > 0; });
      if (l.kind == LetKind::Load) {
        v = v || varies(l.access.index);
        if (v) check_access(l.access, "the load");
      }
      if (l.kind == LetKind::IndexValue && varies(l.index)) {
        v = true;
        int64_t stride = 0;
        if (!affine_access_form(l.index, var, k.ranges, &stride)) {
          obstacle = "the index value " + index::to_string(l.index) + " is not affine in " + var;
        }
      }
      if (v) varying.insert(l.id);
    } else if (s.kind == StmtKind::Store) {
      if (varies(s.access.index)) {
        check_access(s.access, "the store");
        result.stored_along.push_back(s.value);
      } else if (varying.count(s.value)) {
        obstacle = "a value varying along " + var + " is stored at " +
                   index::to_string(s.access.index) + " of " + s.access.buffer;
      }
    } else if (s.kind == StmtKind::DefineIndex && !s.index && varying.count(s.value)) {
      indirect.insert(s.name);
    }
  });
  return result;
}

std::optional<std::string> vector_obstacle(const Kernel& k, const Block& scalar,
                                           const std::string& var) {
  return analyze_vector_form(k, scalar, var).obstacle;
}

}  // namespace stax::kernel
