// The lowering entry point and the loop-IR helpers; the pass itself is lowerer.h and the
// lower_*.cpp files of each op family.
#include "lowering/lowering.h"

#include "lowering/lowerer.h"

namespace stax::lowering {

LoweredGraph lower(const ir::Graph& graph, const LoweringOptions& options) {
  // Issue 33 (docs/symbolic_sizes.md): lowering does not take size symbols yet; a symbolic
  // graph is refused here, never lowered at its hints.
  if (graph.is_symbolic()) {
    std::string symbols;
    for (const auto& entry : graph.size_symbols()) {
      symbols += (symbols.empty() ? "" : ", ") + entry.first;
    }
    throw std::invalid_argument("lowering: graph '" + graph.name() +
                                "' has sizes known only at "
                                "run time (" +
                                symbols +
                                "), which lowering does not take yet; "
                                "bind them first (graph_passes::bind_sizes, stax --sizes)");
  }
  return Lowerer(graph, options).run();
}

int64_t ComputedBuffer::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::vector<const ExternalOperand*> ExternalCall::operands() const {
  if (scatter) {
    std::vector<const ExternalOperand*> out;
    for (const ScatterIndex& index : scatter->indices) out.push_back(&index.operand);
    if (scatter->values) out.push_back(&*scatter->values);
    if (scatter->self) out.push_back(&*scatter->self);
    return out;
  }
  if (attention) {
    std::vector<const ExternalOperand*> out = {&attention->query, &attention->key,
                                               &attention->value};
    if (attention->mask) out.push_back(&*attention->mask);
    for (const auto* op : {&attention->grad_out, &attention->out, &attention->logsumexp}) {
      if (*op) out.push_back(&**op);
    }
    return out;
  }
  if (scan) return {&scan->input};
  if (result_of) return {&a};
  std::vector<const ExternalOperand*> out = {&a, &b};
  if (bias) out.push_back(&*bias);
  return out;
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
