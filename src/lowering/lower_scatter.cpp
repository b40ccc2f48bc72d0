// Issue 15, point 4: the scatters (index_put, index_add, scatter, scatter_add, scatter_reduce)
// as external
// nodes that Stax's runtime runs (lowering/loop_ir.h: ScatterCall). A scatter writes elements
// the index tensor names, so no loop over its output computes it: the node depends on the
// whole of each operand and writes its whole output (Definition 7.1's whole dependences), and
// the runtime visits the positions in eager's order, which makes every sum deterministic.
// Operands are read where they are stored, through any strides (a broadcast included); a
// computed operand is stored first. A self that is a fill of zeros (the embedding gradient's
// new_zeros) is not stored at all: the runtime zeroes the output.
#include <cmath>

#include "ir/factory_args.h"
#include "lowering/lowerer.h"

namespace stax::lowering {

namespace {

// Whether `ref` is computed by a fill whose every element is zero (all bits clear).
bool is_zero_fill(const ir::Graph& graph, ir::ValueRef ref) {
  const int producer = graph.value(ref).producer;
  if (producer < 0) return false;
  const ir::Node& node = graph.nodes()[static_cast<size_t>(producer)];
  const ir::OpSchema* schema = ir::find_op_schema(node.op);
  if (schema == nullptr || schema->category != ir::OpCategory::Factory) return false;
  const ir::FactoryArgs f = ir::factory_args(graph, node);
  if (f.is_range) return false;
  // -0.0 is a fill whose bits are not zero.
  return f.fill.is_zero() && !(f.fill.is_float() && std::signbit(f.fill.as_double()));
}

}  // namespace

// Issue 33: the space's sizes as expressions. Each space dim is a dim of an index tensor, of
// the values, or of self (ir::ScatterArgs' maps), in that order of preference: the first whose
// size is the space's (at the hints) gives it. Every other one must relate to it as it does at
// the hints for every value of the symbols: equal, provably at least as large (scatter's self
// and src may be larger than its index), or the constant 1 of a broadcast. Otherwise the
// relation would hold at some values only and the graph is compiled per size.
std::vector<Expr> Lowerer::scatter_space(const ir::Node& node, const ir::ScatterArgs& a) const {
  const std::vector<int64_t>& at_hints = a.layout.sizes;
  const std::map<std::string, int64_t> hints = index::hint_values(graph_.size_symbols());
  const index::Domain domain({}, graph_.size_symbols());
  struct Candidate {
    Expr size;
    std::string what;
  };
  std::vector<std::vector<Candidate>> candidates(at_hints.size());
  auto add = [&](int64_t d, const Expr& size, const std::string& what) {
    if (d >= 0) candidates.at(static_cast<size_t>(d)).push_back({size, what});
  };
  for (const ir::IndexTerm& t : a.layout.terms) {
    const std::vector<Expr> index = sizes_of(graph_.value(t.index).type);
    for (size_t k = 0; k < t.index_dims.size(); ++k) {
      add(t.index_dims[k], index.at(k), "an index's dim " + std::to_string(k));
    }
  }
  if (a.values) {
    const std::vector<Expr> values = sizes_of(graph_.value(*a.values).type);
    for (size_t d = 0; d < a.values_dims.size(); ++d) {
      const int64_t k = a.values_dims[d];
      if (k >= 0) {
        add(static_cast<int64_t>(d), values.at(static_cast<size_t>(k)),
            "the values' dim " + std::to_string(k));
      }
    }
  }
  const std::vector<Expr> self = sizes_of(graph_.value(a.layout.source).type);
  for (size_t k = 0; k < a.layout.source_dims.size(); ++k) {
    add(a.layout.source_dims[k], self.at(k), "self's dim " + std::to_string(k));
  }
  auto refuse = [&](size_t d, const std::string& why) {
    throw index::SymbolicSizesRefused("lowering " + node.op + ": dim " + std::to_string(d) +
                                      " of its iteration space: " + why +
                                      " only for some values of the size symbols");
  };
  std::vector<Expr> space;
  for (size_t d = 0; d < at_hints.size(); ++d) {
    const Candidate* chosen = nullptr;
    for (const Candidate& c : candidates[d]) {
      if (index::evaluate(c.size, hints) == at_hints[d]) {
        chosen = &c;
        break;
      }
    }
    if (chosen == nullptr) {
      if (has_symbolic_sizes(node)) refuse(d, "no operand's size is the space's");
      space.push_back(Expr(at_hints[d]));
      continue;
    }
    for (const Candidate& c : candidates[d]) {
      const int64_t hint = index::evaluate(c.size, hints);
      const bool holds =
          hint == at_hints[d] ? c.size == chosen->size
          : hint > at_hints[d]
              ? index::is_nonnegative(c.size - chosen->size, domain) == index::Truth::kProved
              : c.size == Expr(1);
      if (!holds) {
        refuse(d, chosen->what + " is " + index::to_string(chosen->size) + " and " + c.what +
                      " is " + index::to_string(c.size) + ", which relate as at the hints");
      }
    }
    space.push_back(chosen->size);
  }
  return space;
}

ExternalOperand Lowerer::stored_operand(ir::ValueRef ref, const std::string& why) {
  const LoweredValue& v = value(ref.index);
  if (v.layout) {
    return ExternalOperand{v.layout->buffer, v.layout->is_input, v.dtype,
                           v.sizes,          v.layout->strides,  v.layout->offset};
  }
  const LoweredValue r = realize(v, why);
  return ExternalOperand{r.layout->buffer, false, v.dtype, v.sizes, r.layout->strides, 0};
}

LoweredValue Lowerer::lower_scatter(const ir::Node& node, const ir::Value& out) {
  const ir::ScatterArgs a = ir::scatter_args(graph_, node);
  const DType dtype = out.type.dtype;
  const std::string role =
      " of " + ir::describe_node(graph_, node) + ": the scatter reads stored tensors only";
  ScatterCall s;
  s.space = scatter_space(node, a);
  s.dest_dims = a.layout.source_dims;
  s.values_dims = a.values_dims;
  s.combine = a.combine;
  s.float_sum = a.float_sum;
  s.include_self = a.include_self;
  s.fused_multiply_add = a.fused_multiply_add;
  s.product_in_dtype = a.product_in_dtype;
  const bool integer = dtype == DType::Bool || is_integral(dtype);
  const DType float_type = dtype == DType::Float64 ? DType::Float64 : DType::Float32;
  if (integer) {
    s.int_value = *ir::convert_scalar(a.value, dtype).as_exact_int64();
    s.int_alpha = *ir::convert_scalar(a.alpha, dtype).as_exact_int64();
  } else {
    s.value = ir::convert_scalar(a.value, float_type).as_double();
    s.alpha = ir::convert_scalar(a.alpha, float_type).as_double();
  }
  const std::vector<Expr> self_sizes = sizes_of(graph_.value(a.layout.source).type);
  for (const ir::IndexTerm& t : a.layout.terms) {
    ScatterIndex index{stored_operand(t.index, "the index" + role), t.index_dims, t.rule,
                       std::nullopt, std::nullopt};
    // A dim of self over size symbols bounds the index values by its size at each call: the
    // rule and its message take it per call (bind_external_call), not at the hints.
    if (t.dim >= 0 && !self_sizes.at(static_cast<size_t>(t.dim)).is_constant()) {
      index.rule_size = self_sizes[static_cast<size_t>(t.dim)];
      index.rule.message = symbolic_rule_message(index.rule.message, t.size, *index.rule_size);
    }
    s.indices.push_back(std::move(index));
  }
  if (a.values) s.values = stored_operand(*a.values, "the values" + role);
  if (!is_zero_fill(graph_, a.layout.source))
    s.self = stored_operand(a.layout.source, "self" + role);

  ExternalCall call;
  call.op = node.op;
  call.scatter = std::move(s);
  call.library = "Stax runtime scatter";
  call.reason = "a scatter visits its positions in eager's order in Stax's runtime (" +
                std::string(a.combine == ir::ScatterCombine::Assign ? "writes" : "reductions") +
                " whose targets are index values)";
  const std::vector<Expr> sizes = sizes_of(out.type);
  return add_external_buffer(node, std::move(call), dtype, sizes, index::contiguous_strides(sizes));
}

}  // namespace stax::lowering
