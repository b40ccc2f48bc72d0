// The IR-building OpsHandler and the loop skeleton of a fused node.
#include "kernel/ir_builder.h"

#include <set>
#include <stdexcept>

#include "kernel/kernel_ir_visitor.h"
#include "scheduler/fusion_rules.h"

namespace stax::kernel {

using index::Expr;
using lowering::OpsValue;

namespace {

bool is_16bit_float(DType d) {
  return d == DType::Float16 || d == DType::BFloat16;
}

bool is_integer_division(PointwiseOp op) {
  return op == PointwiseOp::TruncDiv || op == PointwiseOp::FloorDiv ||
         op == PointwiseOp::Remainder || op == PointwiseOp::Fmod;
}

// What a nest's bodies produce: statements inside the innermost loop, the accumulator
// declarations before the reduction loops and the statements after them.
struct NestParts {
  Block init;
  Block body;
  Block after;
};

// Runs the bodies of one nest. Phase 0 values live inside the loops, phase 1 values after
// the reduction loops (reduced values and what is computed from them).
class NestBuilder final : public lowering::OpsHandler {
 public:
  NestBuilder(Kernel& kernel, const scheduler::Schedule& schedule,
              const std::vector<std::string>& reduction_vars, const index::Domain& ranges,
              const std::map<std::string, Expr>& zero_outer, int& next_error_code)
      : k_(kernel),
        s_(schedule),
        reduction_vars_(reduction_vars),
        ranges_(ranges),
        zero_outer_(zero_outer),
        next_error_code_(next_error_code) {}

  NestParts take() { return std::move(parts_); }

  OpsValue load(const std::string& buffer, const Expr& idx, DType dtype) override {
    if (s_.is_elided(buffer)) {
      auto it = elided_.find(buffer);
      if (it == elided_.end()) {
        throw std::logic_error("elided buffer " + buffer + " read before it is computed");
      }
      return it->second;
    }
    Let l;
    l.kind = LetKind::Load;
    l.access.buffer = buffer;
    l.access.index = access_index(buffer, idx);
    l.access.storage = dtype;
    l.access.mask = current_mask();
    if (!s_.is_localized(buffer)) {
      k_.buffer_is_input.emplace(buffer, s_.graph->find_input(buffer) != nullptr);
    }
    // 16-bit floats are held as float: the load converts them exactly.
    l.type = {is_16bit_float(dtype) ? DType::Float32 : dtype, 1};
    return tagged(define(std::move(l), 0), dtype);
  }

  OpsValue constant(const ir::Scalar& value, DType dtype) override {
    if (is_16bit_float(dtype)) {
      return to_dtype(constant(value, DType::Float32), dtype);
    }
    Let l;
    l.kind = LetKind::Constant;
    l.type = {dtype, 1};
    l.constant = ir::convert_scalar(value, dtype);
    return {define(std::move(l), 0), dtype};
  }

  OpsValue compute(PointwiseOp op, std::span<const OpsValue> args, DType result) override {
    // Every op is the primitive it names: Pow is elementwise pow even for a constant
    // exponent (pow.Tensor_Tensor's semantics); pow.Tensor_Scalar's special exponents are
    // lowering's, in one place (pointwise_decompositions.cpp, power).
    Let l;
    l.kind = LetKind::Compute;
    l.op = op;
    l.type = {result, 1};
    int phase = 0;
    for (const OpsValue& a : args) phase = std::max(phase, phase_of(a.id));
    for (const OpsValue& a : args) l.args.push_back(in_phase(a.id, phase));
    if (is_integer_division(op) && is_integral(args[1].dtype)) {
      check_divisor(args[1], phase);
    }
    return {define(std::move(l), phase), result};
  }

  OpsValue to_dtype(OpsValue v, DType dtype) override {
    if (v.dtype == dtype) return v;
    const int phase = phase_of(v.id);
    if (is_16bit_float(dtype)) {
      // Round through the 16-bit type; the value stays a float.
      const OpsValue f = is_16bit_float(v.dtype) || v.dtype == DType::Float32
                             ? OpsValue{v.id, DType::Float32}
                             : to_dtype(v, DType::Float32);
      Let l;
      l.kind = LetKind::Convert;
      l.type = {DType::Float32, 1};
      l.via = dtype;
      l.args = {f.id};
      return tagged(define(std::move(l), phase), dtype);
    }
    // A 16-bit value is a float already: converting that float is exact.
    const DType held = is_16bit_float(v.dtype) ? DType::Float32 : v.dtype;
    if (held == dtype) return {v.id, dtype};
    Let l;
    l.kind = LetKind::Convert;
    l.type = {dtype, 1};
    l.args = {v.id};
    return {define(std::move(l), phase), dtype};
  }

  OpsValue index_value(const Expr& idx, DType dtype) override {
    Let l;
    l.kind = LetKind::IndexValue;
    l.type = {DType::Int64, 1};
    l.index = index::simplify(idx, ranges_);
    const OpsValue v{define(std::move(l), 0), DType::Int64};
    return to_dtype(v, dtype);
  }

  Expr indirect_index(OpsValue value, const ir::IndexRule& rule) override {
    const int64_t size = rule.size;
    const OpsValue v = to_dtype(value, DType::Int64);
    const int phase = phase_of(v.id);
    OpsValue checked = v;
    if (current_mask() >= 0) {  // masked-off lanes pass the check
      checked = compute_value(PointwiseOp::Where,
                              {{current_mask(), DType::Bool}, v, constant(0, DType::Int64)},
                              DType::Int64);
    }
    const int code = next_error_code_++;
    k_.errors.push_back({code, CheckKind::IndexOutOfRange, rule.message, rule.index_error});
    Stmt c;
    c.kind = StmtKind::Check;
    c.check = CheckKind::IndexOutOfRange;
    c.value = checked.id;
    c.lo = rule.lowest();
    c.hi = size;
    c.error_code = code;
    block(phase).push_back(std::move(c));
    OpsValue wrapped = v;
    if (rule.wraps) {  // a negative index counts from the end, once
      const OpsValue negative =
          compute_value(PointwiseOp::Lt, {v, constant(0, DType::Int64)}, DType::Bool);
      const OpsValue shifted = compute_value(
          PointwiseOp::Add, {v, constant(static_cast<double>(size), DType::Int64)}, DType::Int64);
      wrapped = compute_value(PointwiseOp::Where, {negative, shifted, v}, DType::Int64);
    }
    // The check only sets the error flag (the kernel runs on and the wrapper raises after
    // it), so a refused value must not address memory: clamped into [0, size) it reads an
    // element of the source (lowering reads nothing through an empty dim).
    wrapped =
        compute_value(PointwiseOp::Maximum, {wrapped, constant(0, DType::Int64)}, DType::Int64);
    wrapped = compute_value(
        PointwiseOp::Minimum,
        {wrapped, constant(static_cast<double>(std::max<int64_t>(size - 1, 0)), DType::Int64)},
        DType::Int64);
    const std::string name = "ind" + std::to_string(k_.ranges.extents.size());
    k_.ranges.extents[name] = std::max<int64_t>(size, 1);
    ranges_.extents[name] = Expr(std::max<int64_t>(size, 1));
    Stmt d;
    d.kind = StmtKind::DefineIndex;
    d.name = name;
    d.value = wrapped.id;
    block(phase).push_back(std::move(d));
    return Expr::var(name);
  }

  void push_mask(OpsValue mask) override {
    if (mask.dtype != DType::Bool) {
      throw std::logic_error("push_mask of a " + std::string(dtype_name(mask.dtype)) +
                             " value: masks are bool");
    }
    if (masks_.empty()) {
      masks_.push_back(mask.id);
    } else {
      masks_.push_back(
          compute_value(PointwiseOp::LogicalAnd, {{masks_.back(), DType::Bool}, mask}, DType::Bool)
              .id);
    }
  }

  void pop_mask() override {
    if (masks_.empty()) throw std::logic_error("pop_mask without push_mask");
    masks_.pop_back();
  }

  OpsValue reduction(ReductionType type, OpsValue value) override {
    if (phase_of(value.id) != 0) {
      throw std::logic_error("a reduction of a value computed after a reduction");
    }
    const bool welford = type == ReductionType::WelfordMean || type == ReductionType::WelfordM2;
    int acc = -1;
    if (welford) {
      if (auto it = welford_.find(value.id); it != welford_.end()) acc = it->second;
    }
    const DType held = is_16bit_float(value.dtype) ? DType::Float32 : value.dtype;
    if (acc < 0) {
      Accumulator a;
      a.id = static_cast<int>(k_.accumulators.size());
      a.type = welford ? ReductionType::WelfordMean : type;
      a.dtype = held;
      k_.accumulators.push_back(a);
      acc = a.id;
      Stmt init;
      init.kind = StmtKind::AccumulatorInit;
      init.accumulator = acc;
      parts_.init.push_back(std::move(init));
      Stmt r;
      r.kind = StmtKind::Reduce;
      r.accumulator = acc;
      r.value = value.id;
      if (type == ReductionType::ArgMax || type == ReductionType::ArgMin) {
        r.index_value = index_value(linear_reduction_index(), DType::Int64).id;
      }
      parts_.body.push_back(std::move(r));
      if (welford) welford_[value.id] = acc;
    }
    const DType result = lowering::reduction_result_dtype(type, held);
    Let l;
    l.kind = LetKind::AccumulatorResult;
    l.type = {result, 1};
    l.accumulator = acc;
    l.welford_m2 = type == ReductionType::WelfordM2;
    return {define(std::move(l), 1), result};
  }

  void store(const std::string& buffer, const Expr& idx, OpsValue value) override {
    if (s_.is_elided(buffer)) {
      elided_[buffer] = value;
      return;
    }
    if (current_mask() >= 0) {
      throw std::logic_error("store to " + buffer + " inside push_mask: stores are unmasked");
    }
    Access a;
    a.buffer = buffer;
    a.index = access_index(buffer, idx);
    a.storage = value.dtype;
    if (!s_.is_localized(buffer)) {
      k_.buffer_is_input.emplace(buffer, false);
    }
    const int phase = phase_of(value.id);
    // A 16-bit store rounds: a value just rounded through the stored type is stored as its
    // unrounded float (the same bits), so the round is not computed twice per element
    // (simplify drops it when nothing else reads it).
    int stored = value.id;
    if (auto it = lets_.find(value.id);
        it != lets_.end() && it->second.kind == LetKind::Convert && it->second.via == value.dtype) {
      stored = it->second.args[0];
    }
    block(phase).push_back(make_store(std::move(a), stored));
  }

  void store_reduction(const std::string& buffer, const Expr& idx, OpsValue value) override {
    store(buffer, idx, value);
  }

 private:
  Block& block(int phase) { return phase == 0 ? parts_.body : parts_.after; }

  int phase_of(int id) const { return phase_.at(id); }

  OpsValue tagged(int id, DType dtype) { return {id, dtype}; }

  int current_mask() const { return masks_.empty() ? -1 : masks_.back(); }

  Expr access_index(const std::string& buffer, const Expr& idx) const {
    const Expr simplified = index::simplify(idx, ranges_);
    if (!s_.is_localized(buffer)) return simplified;
    return index::simplify(index::substitute(simplified, zero_outer_), ranges_);
  }

  Expr linear_reduction_index() const {
    Expr linear(0);
    for (const std::string& r : reduction_vars_) {
      linear = linear * ranges_.extents.at(r) + Expr::var(r);
    }
    return linear;
  }

  OpsValue compute_value(PointwiseOp op, std::initializer_list<OpsValue> args, DType result) {
    return compute(op, std::span<const OpsValue>(args.begin(), args.size()), result);
  }

  void check_divisor(const OpsValue& divisor, int phase) {
    OpsValue checked{in_phase(divisor.id, phase), divisor.dtype};
    if (current_mask() >= 0) {  // masked-off lanes pass the check
      const OpsValue one = constant(1, divisor.dtype);
      Let l;
      l.kind = LetKind::Compute;
      l.op = PointwiseOp::Where;
      l.type = {divisor.dtype, 1};
      l.args = {in_phase(current_mask(), phase), checked.id, in_phase(one.id, phase)};
      checked.id = define(std::move(l), phase);
    }
    if (k_.errors.empty() || k_.errors.front().code != kDivisionByZeroCode) {
      k_.errors.insert(k_.errors.begin(),
                       {kDivisionByZeroCode, CheckKind::DivisionByZero, "ZeroDivisionError"});
    }
    Stmt c;
    c.kind = StmtKind::Check;
    c.check = CheckKind::DivisionByZero;
    c.value = checked.id;
    c.error_code = kDivisionByZeroCode;
    const std::string key = "check" + std::to_string(checked.id);
    if (cse_[phase].emplace(key, checked.id).second) block(phase).push_back(std::move(c));
  }

  // The CSE key of a definition: equal keys compute equal values.
  static std::string key_of(const Let& l) {
    std::string k =
        std::to_string(static_cast<int>(l.kind)) + ":" + std::string(dtype_name(l.type.dtype));
    switch (l.kind) {
      case LetKind::Constant: {
        // %a tells -0.0 from 0.0; ints and bools print exactly.
        if (l.constant.is_float()) {
          char buf[40];
          std::snprintf(buf, sizeof buf, "%a", l.constant.float_value());
          k += buf;
        } else {
          k += ir::format_scalar(l.constant);
        }
        break;
      }
      case LetKind::Load:
        k += l.access.buffer + "@" + index::to_string(l.access.index) + "/" +
             std::string(dtype_name(l.access.storage));
        break;
      case LetKind::IndexValue:
        k += index::to_string(l.index);
        break;
      case LetKind::AccumulatorResult:
        k += std::to_string(l.accumulator) + (l.welford_m2 ? "m2" : "");
        break;
      default:
        k += std::to_string(static_cast<int>(l.op)) + std::string(l.via ? dtype_name(*l.via) : "");
        break;
    }
    // Every value it reads, each with its role (an operand is not a mask).
    for_each_value_use(l, [&](int a, ValueRole role) {
      k += "," + std::to_string(static_cast<int>(role)) + ":" + std::to_string(a);
    });
    return k;
  }

  int define(Let l, int phase) {
    const std::string key = key_of(l);
    auto& cse = cse_[phase];
    if (auto it = cse.find(key); it != cse.end()) return it->second;
    l.id = k_.new_value_id();
    const int id = l.id;
    cse.emplace(key, id);
    phase_[id] = phase;
    lets_[id] = l;
    block(phase).push_back(make_let(std::move(l)));
    return id;
  }

  // The value `id` as a value of `phase`: a loop value used after the reduction loops is
  // computed again there (its loads do not depend on the reduction variables).
  int in_phase(int id, int phase) {
    if (phase_of(id) >= phase) return id;
    Let copy = lets_.at(id);
    map_value_uses(copy, [&](int& a, ValueRole) { a = in_phase(a, phase); });
    return define(std::move(copy), phase);
  }

  Kernel& k_;
  const scheduler::Schedule& s_;
  std::vector<std::string> reduction_vars_;
  index::Domain ranges_;
  const std::map<std::string, Expr>& zero_outer_;
  int& next_error_code_;
  NestParts parts_;
  std::map<std::string, int> cse_[2];
  std::map<int, int> phase_;
  std::map<int, Let> lets_;
  std::map<std::string, OpsValue> elided_;
  std::map<int, int> welford_;
  std::vector<int> masks_;
};

Loop serial_loop(const std::string& var, const Expr& extent, LoopRole role, int nest) {
  Loop l;
  l.var = var;
  l.end = extent;
  l.role = role;
  l.nest = nest;
  return l;
}

// Wraps `body` in loops, outermost first.
Block nest_loops(const std::vector<std::pair<std::string, Expr>>& loops, Block body, LoopRole role,
                 int nest) {
  for (size_t j = loops.size(); j-- > 0;) {
    Block wrapped;
    wrapped.push_back(
        make_loop(serial_loop(loops[j].first, loops[j].second, role, nest), std::move(body)));
    body = std::move(wrapped);
  }
  return body;
}

}  // namespace

Kernel build_kernel(const scheduler::Schedule& s, const scheduler::FusedNode& f,
                    int& next_error_code) {
  Kernel k;
  k.name = f.name;
  k.description = f.group_string();
  k.source_ops = f.source_ops(s.nodes);
  k.ranges.symbols = s.graph->symbols;
  std::map<std::string, Expr> zero_outer;
  for (size_t j = 0; j < f.outer.size(); ++j) {
    const std::string x = "x" + std::to_string(j);
    zero_outer[x] = Expr(0);
    k.ranges.extents[x] = f.outer[j];
  }
  Block outer_body;
  // Slices of the buffers that live within one outer iteration (private to the thread).
  for (int id : f.members()) {
    const auto& node = s.nodes[static_cast<size_t>(id)];
    if (const auto* plan = s.plan_of(node.write.buffer); plan != nullptr && plan->localized) {
      Stmt a;
      a.kind = StmtKind::LocalArray;
      a.name = node.write.buffer;
      a.dtype = node.buffer->dtype;
      a.elements = plan->local_elements;
      outer_body.push_back(std::move(a));
    }
  }
  for (size_t nest = 0; nest < f.nests.size(); ++nest) {
    const scheduler::LoopNest& n = f.nests[nest];
    // A variable of this nest whose extent differs from one already in the kernel is
    // renamed, so that one range map serves the whole kernel.
    std::map<std::string, Expr> rename;
    const index::Domain ranges = scheduler::nest_domain(f, nest, s.graph->symbols);
    index::Domain renamed_ranges({}, s.graph->symbols);
    for (const auto& [var, extent] : ranges.extents) {
      std::string name = var;
      if (auto it = k.ranges.extents.find(var);
          it != k.ranges.extents.end() && it->second != extent) {
        name = var + "_n" + std::to_string(nest);
        rename[var] = Expr::var(name);
      }
      k.ranges.extents[name] = extent;
      renamed_ranges.extents[name] = extent;
    }
    auto var_name = [&](const std::string& v) {
      auto it = rename.find(v);
      return it == rename.end() ? v : *it->second.as_var();
    };
    std::vector<std::pair<std::string, Expr>> pointwise, reduction;
    std::vector<std::string> reduction_vars;
    for (size_t j = 0; j < n.sizes.size(); ++j) {
      pointwise.push_back({var_name("x" + std::to_string(f.outer.size() + j)), n.sizes[j]});
    }
    for (size_t j = 0; j < n.reduction_sizes.size(); ++j) {
      reduction.push_back({var_name("r" + std::to_string(j)), n.reduction_sizes[j]});
      reduction_vars.push_back(reduction.back().first);
    }
    NestBuilder builder(k, s, reduction_vars, renamed_ranges, zero_outer, next_error_code);
    for (int id : n.nodes) {
      const scheduler::SchedulerNode& node = s.nodes[static_cast<size_t>(id)];
      scheduler::Placement p = scheduler::place(f, node);
      for (Expr& e : p.pointwise) e = index::substitute(e, rename);
      for (Expr& e : p.reduction) e = index::substitute(e, rename);
      node.run_body(builder, p.pointwise, p.reduction);
    }
    NestParts parts = builder.take();
    Block inner;
    if (n.reduction_sizes.empty()) {
      inner = std::move(parts.body);
      for (Stmt& st : parts.after) inner.push_back(std::move(st));
    } else {
      inner = std::move(parts.init);
      for (Stmt& st : nest_loops(reduction, std::move(parts.body), LoopRole::Reduction,
                                 static_cast<int>(nest))) {
        inner.push_back(std::move(st));
      }
      for (Stmt& st : parts.after) inner.push_back(std::move(st));
    }
    Block nest_block =
        nest_loops(pointwise, std::move(inner), LoopRole::Pointwise, static_cast<int>(nest));
    Stmt nest_stmt = make_block(std::move(nest_block));
    nest_stmt.nest = static_cast<int>(nest);
    outer_body.push_back(std::move(nest_stmt));
  }
  std::vector<std::pair<std::string, Expr>> outer;
  for (size_t j = 0; j < f.outer.size(); ++j)
    outer.push_back({"x" + std::to_string(j), f.outer[j]});
  k.body.push_back(make_comment(f.name + ": " + f.group_string()));
  for (Stmt& st : nest_loops(outer, std::move(outer_body), LoopRole::Outer, -1)) {
    k.body.push_back(std::move(st));
  }
  return k;
}

}  // namespace stax::kernel
