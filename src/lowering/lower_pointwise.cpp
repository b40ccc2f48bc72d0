// Lowering of pointwise ops (Section 6.3): each composes the loaders of its operands. The
// operands are converted to the op's computation dtype with PyTorch's promotion
// (ir::pointwise_typing, the rule type inference and the eager interpreter use), the op is
// computed from primitives by its recipe (pointwise_decompositions.h) in the opmath dtype, and
// a float16/bfloat16 result is rounded back after every ATen op, so fused results equal eager's.
#include <span>

#include "lowering/lowerer.h"

namespace stax::lowering {

namespace {

// Counts what a recipe itself computes (its operands' loaders are priced separately).
class RecipeCostHandler final : public OpsHandler {
 public:
  BodyStats stats;

  OpsValue load(const std::string&, const index::Expr&, DType dtype) override { return {0, dtype}; }
  OpsValue constant(const ir::Scalar&, DType dtype) override { return {0, dtype}; }
  OpsValue compute(PointwiseOp op, std::span<const OpsValue>, DType result) override {
    stats += op_stats(op);
    return {0, result};
  }
  OpsValue to_dtype(OpsValue, DType dtype) override {
    ++stats.cheap_ops;
    return {0, dtype};
  }
  OpsValue index_value(const index::Expr&, DType dtype) override { return {0, dtype}; }
  index::Expr indirect_index(OpsValue, const ir::IndexRule&) override {
    throw std::logic_error("lowering: a pointwise recipe made an indirect index");
  }
  void push_mask(OpsValue) override {}
  void pop_mask() override {}
  OpsValue reduction(ReductionType, OpsValue value) override { return value; }
  void store(const std::string&, const index::Expr&, OpsValue) override {}
  void store_reduction(const std::string&, const index::Expr&, OpsValue) override {}
};

bool is_16bit(DType d) {
  return d == DType::Float16 || d == DType::BFloat16;
}

// The composed value must already have the result dtype, except that a 16-bit result is
// rounded from its float32 opmath value here.
OpsValue finish(OpsHandler& h, OpsValue r, DType result, const std::string& op) {
  if (r.dtype == result) return r;
  if (is_16bit(result) && r.dtype == DType::Float32) return convert(h, r, result);
  throw std::logic_error("lowering: " + op + " composed a " + std::string(dtype_name(r.dtype)) +
                         " value for a " + std::string(dtype_name(result)) + " result");
}

}  // namespace

Loader Lowerer::pointwise_operand(const ir::Node& node, const OperandSpec& spec, DType compute,
                                  const std::vector<Expr>& out_sizes) {
  const DType m = opmath_dtype(compute);
  if (const auto* sym = std::get_if<ir::SymInt>(&node.args.at(spec.position));
      sym != nullptr && !sym->expr.is_constant()) {
    // Issue 33: an int over size symbols (add(arange(0, 1), s0): the positions after a cache
    // of s0 tokens) is computed from the symbols in the kernel, then converted as an int
    // scalar is (scalar_value).
    const Expr e = sym->expr;
    const OperandRead read = spec.read;
    return [e, read, compute, m](OpsHandler& h, const std::vector<Expr>&) {
      const OpsValue v = h.index_value(e, DType::Int64);
      if (read == OperandRead::Bool) return convert(h, v, DType::Bool);
      const OpsValue in_m = convert(h, v, m);
      if (read == OperandRead::ComputeOpmath || !is_16bit(compute)) return in_m;
      return convert(h, convert(h, in_m, compute), m);
    };
  }
  if (!ir::is_tensor_arg(node, spec.position)) {
    const ir::Scalar s = ir::scalar_arg(node, spec.position);
    const OperandRead read = spec.read;
    return [s, read, compute](OpsHandler& h, const std::vector<Expr>&) {
      if (read == OperandRead::Bool) return h.constant(s, DType::Bool);
      return scalar_value(h, s, compute, /*opmath_value=*/read == OperandRead::ComputeOpmath);
    };
  }
  const DType source = ir::tensor_arg(graph_, node, spec.position).type.dtype;
  Loader raw = operand(node, spec.position, source, out_sizes);
  switch (spec.read) {
    case OperandRead::Source:
      return raw;
    case OperandRead::Bool:
      return operand(node, spec.position, DType::Bool, out_sizes);
    case OperandRead::ComputeOpmath:
      return operand(node, spec.position, m, out_sizes);
    case OperandRead::Compute:
      break;
  }
  return [raw, compute, m](OpsHandler& h, const std::vector<Expr>& idx) {
    return convert(h, convert(h, raw(h, idx), compute), m);
  };
}

LoweredValue Lowerer::lower_pointwise(const ir::Node& node, const ir::Value& out) {
  const ir::PointwiseTyping typing = ir::pointwise_typing(graph_, node);
  const PointwiseRecipe recipe = pointwise_recipe(graph_, node, typing);
  // Issue 33: an int argument over size symbols is computed in the kernel where it is an
  // operand the recipe combines as it is (pointwise_operand); a recipe reads its other
  // parameters (alpha, pow's exponent, clamp's bounds) at the symbols' hints, so those refuse.
  static const std::set<std::string> kSymbolicOperandOps = {
      "add", "sub", "mul", "div",     "eq",      "ne",   "lt",
      "le",  "gt",  "ge",  "maximum", "minimum", "where"};
  for (size_t p = 0; p < node.args.size(); ++p) {
    const auto* sym = std::get_if<ir::SymInt>(&node.args[p]);
    if (sym == nullptr || sym->expr.is_constant()) continue;
    const bool operand = std::any_of(recipe.operands.begin(), recipe.operands.end(),
                                     [p](const OperandSpec& s) { return s.position == p; });
    if (!operand || kSymbolicOperandOps.count(node.op) == 0) {
      throw index::SymbolicSizesRefused("lowering " + node.op + ": argument " + std::to_string(p) +
                                        " = " + index::to_string(sym->expr) +
                                        " is a value over size symbols, which this op's "
                                        "lowering reads at the symbols' hints only");
    }
  }
  LoweredValue v = computed_value(node, out);
  v.stats = operand_stats(node);

  std::vector<Loader> operands;
  for (const OperandSpec& spec : recipe.operands) {
    operands.push_back(pointwise_operand(node, spec, typing.compute, v.sizes));
  }
  const auto compose = recipe.compose;
  const DType result = out.type.dtype;
  const std::string op = node.op;
  v.loader = [operands, compose, result, op](OpsHandler& h, const std::vector<Expr>& idx) {
    std::vector<OpsValue> args;
    args.reserve(operands.size());
    for (const Loader& operand : operands) args.push_back(operand(h, idx));
    return finish(h, compose(h, args), result, op);
  };
  // The node's own primitives, run once on placeholder operands of the dtypes the recipe
  // receives (the operands' loaders are priced by operand_stats).
  RecipeCostHandler cost;
  std::vector<OpsValue> placeholders;
  for (const OperandSpec& spec : recipe.operands) {
    DType dtype = opmath_dtype(typing.compute);
    if (spec.read == OperandRead::Bool) dtype = DType::Bool;
    if (spec.read == OperandRead::Source)
      dtype = ir::tensor_arg(graph_, node, spec.position).type.dtype;
    placeholders.push_back({0, dtype});
  }
  finish(cost, compose(cost, placeholders), result, op);
  v.stats += cost.stats;
  return v;
}

}  // namespace stax::lowering
