// The lowering entry point and the loop-IR helpers; the pass itself is lowerer.h and the
// lower_*.cpp files of each op family.
#include "lowering/lowering.h"

#include <cctype>
#include <string>

#include "lowering/lowerer.h"

namespace stax::lowering {

LoweredGraph lower(const ir::Graph& graph, const LoweringOptions& options) {
  return Lowerer(graph, options).run();
}

index::Expr ComputedBuffer::numel() const {
  return index::product(sizes);
}

bool LoweredGraph::is_symbolic() const {
  for (const auto& in : inputs) {
    if (!index::all_constant(in.sizes) || !index::all_constant(in.strides)) return true;
  }
  for (const auto& b : buffers) {
    for (const auto* list : {&b.sizes, &b.strides, &b.ranges, &b.reduction_ranges}) {
      if (!index::all_constant(*list)) return true;
    }
  }
  for (const auto& out : outputs) {
    if (!index::all_constant(out.sizes) || !index::all_constant(out.strides) ||
        !out.offset.is_constant()) {
      return true;
    }
  }
  return false;
}

std::vector<ExternalOperand*> ExternalCall::operands() {
  if (scatter) {
    std::vector<ExternalOperand*> out;
    for (ScatterIndex& index : scatter->indices) out.push_back(&index.operand);
    if (scatter->values) out.push_back(&*scatter->values);
    if (scatter->self) out.push_back(&*scatter->self);
    return out;
  }
  if (attention) {
    std::vector<ExternalOperand*> out = {&attention->query, &attention->key, &attention->value};
    if (attention->mask) out.push_back(&*attention->mask);
    for (auto* op : {&attention->grad_out, &attention->out, &attention->logsumexp}) {
      if (*op) out.push_back(&**op);
    }
    return out;
  }
  if (scan) return {&scan->input};
  if (result_of) return {&a};
  std::vector<ExternalOperand*> out = {&a, &b};
  if (bias) out.push_back(&*bias);
  return out;
}

std::vector<const ExternalOperand*> ExternalCall::operands() const {
  std::vector<const ExternalOperand*> out;
  for (ExternalOperand* op : const_cast<ExternalCall*>(this)->operands()) out.push_back(op);
  return out;
}

bool ExternalCall::is_symbolic() const {
  if (scatter && !index::all_constant(scatter->space)) return true;
  if (convolution && !index::all_constant(convolution->result_sizes)) return true;
  for (const ExternalOperand* op : operands()) {
    if (!index::all_constant(op->sizes) || !index::all_constant(op->strides) ||
        !op->offset.is_constant()) {
      return true;
    }
  }
  return false;
}

std::string symbolic_rule_message(std::string message, int64_t hint_size, const Expr& size) {
  bool named = false;
  for (const std::string prefix : {"size ", "axis_dim="}) {
    const std::string text = prefix + std::to_string(hint_size);
    for (size_t at = message.find(text); at != std::string::npos; at = message.find(text, at)) {
      const size_t end = at + text.size();
      if (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end]))) {
        at = end;
        continue;
      }
      message.replace(at, text.size(), prefix + "{size}");
      named = true;
    }
  }
  if (!named) message += " (the dim's size is " + index::to_string(size) + ", {size} here)";
  return message;
}

ExternalCall bind_external_call(const ExternalCall& call,
                                const std::map<std::string, int64_t>& values) {
  ExternalCall bound = call;
  auto at = [&](std::vector<Expr>& exprs) {
    for (Expr& e : exprs) e = Expr(index::evaluate(e, values));
  };
  for (ExternalOperand* op : bound.operands()) {
    at(op->sizes);
    at(op->strides);
    op->offset = Expr(index::evaluate(op->offset, values));
  }
  if (bound.scatter) {
    at(bound.scatter->space);
    for (ScatterIndex& index : bound.scatter->indices) {
      if (!index.rule_size) continue;
      index.rule.size = index::evaluate(*index.rule_size, values);
      index.rule_size.reset();
      std::string& m = index.rule.message;
      for (size_t at = m.find("{size}"); at != std::string::npos; at = m.find("{size}", at)) {
        m.replace(at, 6, std::to_string(index.rule.size));
      }
    }
  }
  if (bound.convolution) at(bound.convolution->result_sizes);
  return bound;
}

void ComputedBuffer::run_body(OpsHandler& handler, const std::vector<Expr>& index,
                              const std::vector<Expr>& reduction_index) const {
  if (external) throw std::logic_error("buffer " + name + " is an external call: it has no body");
  OpsValue v = value(handler, index, reduction_index);
  if (reduction) {
    handler.store_reduction(name, output_index(index), handler.reduction(*reduction, v));
  } else {
    handler.store(name, output_index(index), v);
  }
}

const InputBuffer* LoweredGraph::find_input(const std::string& n) const {
  for (const auto& in : inputs) {
    if (in.name == n) return &in;
  }
  return nullptr;
}

const ComputedBuffer* LoweredGraph::find_buffer(const std::string& n) const {
  for (const auto& b : buffers) {
    if (b.name == n) return &b;
  }
  return nullptr;
}

}  // namespace stax::lowering
