// The schema of the one mutating op (issue 16, point 6): copy_(self, src) writes src,
// broadcast to self's sizes and converted to self's dtype, into graph input `self` in place.
// Its result is that new value. Every other in-place op (add_, mul_, index_put_, ...) is this
// op over its functional twin (Graph::add_node), which is also the form AOTAutograd hands the
// bridge: the functional program, then copy_(input, final value) per mutated input.
//
// A graph keeps functional semantics around it (Section 7.1's renaming): a use of `self` reads
// the input's value before the program ran, wherever it is in the text, and the copy_'s result
// names the new one. Lowering writes the value into the input's memory and orders every
// reader of the old value before that write (WeakDep).
#include "ir/op_schemas_internal.h"
#include "ir/text_format.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

TensorType infer_copy_in_place(const Graph& g, const Node& n) {
  const ValueRef self = std::get<ValueRef>(n.args[0]);
  const Value& dst = g.value(self);
  if (dst.producer != -1) {
    throw GraphError(arg_prefix(n.op, "self") + "'" + dst.name +
                     "' is computed in the graph; only a graph input can be written in place");
  }
  for (const Node& other : g.nodes()) {
    if (other.op == "copy_" && std::get<ValueRef>(other.args[0]) == self) {
      throw GraphError(arg_prefix(n.op, "self") + "input '" + dst.name +
                       "' is already written by copy_ '" + g.value(other.output).name +
                       "'; write its final value once");
    }
  }
  const std::vector<int64_t>& to = dst.type.sizes;
  const std::vector<int64_t>& from = tensor_arg(g, n, 1).type.sizes;
  bool fits = from.size() <= to.size();
  for (size_t i = 0; fits && i < from.size(); ++i) {
    const int64_t have = from[from.size() - 1 - i];
    fits = have == 1 || have == to[to.size() - 1 - i];
  }
  if (!fits) {
    throw GraphError(arg_prefix(n.op, "src") + "sizes " + format_sizes(from) +
                     " do not broadcast to the sizes " + format_sizes(to) + " of input '" +
                     dst.name + "'");
  }
  TensorType out;
  out.dtype = dst.type.dtype;
  out.sizes = to;
  return out;
}

}  // namespace

void add_mutation_schemas(std::vector<OpSchema>& out) {
  out.push_back(OpSchema{"copy_",
                         {required("self", K::Tensor), required("src", K::Tensor),
                          optional("non_blocking", K::Bool, false)},
                         OpCategory::Mutation,
                         infer_copy_in_place});
}

}  // namespace stax::ir::detail
