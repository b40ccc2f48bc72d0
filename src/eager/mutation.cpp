// copy_ in the eager interpreter (issue 16, point 6; ir/op_schemas_mutation.cpp): the node's
// value is src broadcast and converted to the input's dtype, and every use of the input in the
// graph reads its old value, so the new values are written into the inputs only after the
// last node ran, in the graph's order.
#include <cstring>
#include <stdexcept>

#include "eager/ops.h"
#include "ir/eager_storage.h"

namespace stax::eager::detail {

Tensor eval_copy_in_place(const Env& env, const ir::Node& node) {
  const ir::TensorType& type = env.result_type(node);
  return converted(broadcast_to(env.tensor(node, 1), type.sizes), type.dtype);
}

void write_mutated_inputs(const ir::Graph& graph, const std::vector<Tensor>& values,
                          const std::vector<Tensor>& outputs) {
  // The graph's values are functional: an output seeing the input's storage would change
  // with the write. The rule is decided on the graph, as lowering and the fuzzer's generator
  // decide it (ir/eager_storage.h); the storages confirm it.
  ir::check_no_output_of_overwritten_input(graph);
  for (const ir::Node& node : graph.nodes()) {
    if (node.op != "copy_") continue;
    const auto self = std::get<ir::ValueRef>(node.args[0]);
    const Tensor& input = values.at(static_cast<size_t>(self.index));
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (outputs[k].storage() == input.storage() && input.numel() > 0) {
        throw std::logic_error("eager: graph output " + std::to_string(k) + " ('" +
                               graph.value(graph.outputs()[k]).name +
                               "') shares the storage of input '" + graph.value(self).name +
                               "', which " + ir::describe_node(graph, node) +
                               " overwrites, though the graph's layouts keep it apart");
      }
    }
    const Tensor& value = values.at(static_cast<size_t>(node.output.index));
    const size_t element = dtype_size(input.dtype());
    for (int64_t p = 0; p < input.numel(); ++p) {
      const std::vector<int64_t> idx = unravel_index(p, input.sizes());
      int64_t to = 0;
      for (size_t d = 0; d < idx.size(); ++d) to += idx[d] * input.strides()[d];
      std::memcpy(static_cast<char*>(input.data()) + to * static_cast<int64_t>(element),
                  static_cast<const char*>(value.data()) + p * static_cast<int64_t>(element),
                  element);
    }
  }
}

}  // namespace stax::eager::detail
