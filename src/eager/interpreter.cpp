// The eager interpreter's driver: checks the inputs against the graph's declared types, then
// evaluates the nodes in order, dispatching on the op name to the op families of
// pointwise.cpp, reductions.cpp and views.cpp, and checks every result against the type the IR
// inferred for it.
#include "eager/interpreter.h"

#include "graph_passes/bind_sizes.h"
#include "ir/symbolic_shapes.h"

#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

#include "eager/ops.h"
#include "ir/checked_arith.h"

namespace stax::eager {

namespace {

using detail::Env;
using detail::ReduceOp;
using OpFn = std::function<Tensor(const Env&, const ir::Node&)>;

OpFn reduce(ReduceOp op) {
  return [op](const Env& env, const ir::Node& node) { return detail::eval_reduce(env, node, op); };
}

const std::unordered_map<std::string_view, OpFn>& op_table() {
  static const std::unordered_map<std::string_view, OpFn> table = {
      // reductions
      {"sum", reduce(ReduceOp::Sum)},
      {"mean", reduce(ReduceOp::Mean)},
      {"amax", reduce(ReduceOp::Amax)},
      {"amin", reduce(ReduceOp::Amin)},
      {"prod", reduce(ReduceOp::Prod)},
      {"argmax", reduce(ReduceOp::ArgMax)},
      {"argmin", reduce(ReduceOp::ArgMin)},
      {"any", reduce(ReduceOp::Any)},
      {"all", reduce(ReduceOp::All)},
      {"var", reduce(ReduceOp::Var)},
      {"std", reduce(ReduceOp::Std)},
      {"logsumexp", reduce(ReduceOp::LogSumExp)},
      // views and copies
      {"reshape", detail::eval_view_op},
      {"view", detail::eval_view_op},
      {"permute", detail::eval_view_op},
      {"transpose", detail::eval_view_op},
      {"unsqueeze", detail::eval_view_op},
      {"squeeze", detail::eval_view_op},
      {"expand", detail::eval_view_op},
      {"clone", detail::eval_clone},
      {"copy_", detail::eval_copy_in_place},
      {"contiguous", detail::eval_contiguous},
      // issue 6, point 6: views and data movement
      {"slice", detail::eval_view_op},
      {"select", detail::eval_view_op},
      {"narrow", detail::eval_view_op},
      {"split", detail::eval_view_op},
      {"split_with_sizes", detail::eval_view_op},
      {"as_strided", detail::eval_view_op},
      {"cat", detail::eval_cat},
      {"stack", detail::eval_cat},
      {"constant_pad_nd", detail::eval_constant_pad_nd},
      {"flip", detail::eval_flip},
      {"slice_scatter", detail::eval_scatter_window},
      {"select_scatter", detail::eval_scatter_window},
      {"roll", detail::eval_roll},
      {"index_select", detail::eval_indirect},
      {"gather", detail::eval_indirect},
      {"embedding", detail::eval_indirect},
      {"index", detail::eval_indirect},
      // issue 7, point 3: factory ops
      {"full", detail::eval_factory},
      {"zeros", detail::eval_factory},
      {"ones", detail::eval_factory},
      {"full_like", detail::eval_factory},
      {"zeros_like", detail::eval_factory},
      {"ones_like", detail::eval_factory},
      {"fill", detail::eval_factory},
      {"scalar_tensor", detail::eval_factory},
      {"arange", detail::eval_factory},
      {"iota", detail::eval_factory},
      // issue 14, point 3: contractions
      {"mm", detail::eval_contraction},
      {"bmm", detail::eval_contraction},
      {"addmm", detail::eval_contraction},
      {"baddbmm", detail::eval_contraction},
      // issue 15: convolution
      {"convolution", detail::eval_convolution},
      {"convolution_backward", detail::eval_convolution_backward},
      // pooling
      {"avg_pool2d", detail::eval_pooling},
      {"_adaptive_avg_pool2d", detail::eval_pooling},
      {"max_pool2d_with_indices_backward", detail::eval_pooling_backward},
      {"avg_pool2d_backward", detail::eval_pooling_backward},
      {"_adaptive_avg_pool2d_backward", detail::eval_pooling_backward},
      {"index_put", detail::eval_scatter},
      {"index_add", detail::eval_scatter},
      {"scatter", detail::eval_scatter},
      {"scatter_add", detail::eval_scatter},
      {"scatter_reduce", detail::eval_scatter},
      {"_scaled_dot_product_flash_attention_for_cpu", detail::eval_attention},
      {"_scaled_dot_product_flash_attention_for_cpu_backward", detail::eval_attention},
      // The graph passes' written-out attention (the fuzzer writes it directly).
      {"softmax_attention", detail::eval_attention},
  };
  return table;
}

// Ops returning several tensors (ir::OpSchema::result_count), all of them in the op's order;
// a node takes the one its result_index names.
using MultiOpFn = std::function<std::vector<Tensor>(const Env&, const ir::Node&)>;
const std::unordered_map<std::string_view, MultiOpFn>& multi_output_op_table() {
  static const std::unordered_map<std::string_view, MultiOpFn> table = {
      {"var_mean", detail::eval_var_mean},
      {"max_pool2d_with_indices", detail::eval_max_pool2d_with_indices},
      // issue 16, point 7: scans (cumsum's one result is results[0])
      {"cumsum", detail::eval_scan},
      {"cumprod", detail::eval_scan},
      {"logcumsumexp", detail::eval_scan},
      {"cummax", detail::eval_scan},
      {"cummin", detail::eval_scan},
  };
  return table;
}

void check_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs) {
  const std::string where = "eager: graph '" + graph.name() + "'";
  if (inputs.size() != graph.inputs().size()) {
    throw std::invalid_argument(where + " expects " + std::to_string(graph.inputs().size()) +
                                " inputs, got " + std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& declared = graph.value(graph.inputs()[i]);
    const Tensor& t = inputs[i];
    const std::string prefix = where + ": input '" + declared.name + "'";
    if (!t.defined()) throw std::invalid_argument(prefix + " is an undefined tensor");
    if (t.dtype() != declared.type.dtype) {
      throw std::invalid_argument(prefix + ": expected dtype " +
                                  std::string(dtype_name(declared.type.dtype)) + ", got " +
                                  std::string(dtype_name(t.dtype())));
    }
    const std::vector<int64_t>& expected = declared.type.sizes;
    if (t.dim() != expected.size()) {
      throw std::invalid_argument(prefix + ": expected " + std::to_string(expected.size()) +
                                  " dimensions " + shape_to_string(expected) + ", got " +
                                  std::to_string(t.dim()) + " " + shape_to_string(t.sizes()));
    }
    for (size_t d = 0; d < expected.size(); ++d) {
      if (t.sizes()[d] != expected[d]) {
        throw std::invalid_argument(prefix + ": dimension " + std::to_string(d) +
                                    ": expected size " + std::to_string(expected[d]) + ", got " +
                                    std::to_string(t.sizes()[d]) + " (expected sizes " +
                                    shape_to_string(expected) + ", got " +
                                    shape_to_string(t.sizes()) + ")");
      }
    }
  }
}

// Names the value whose evaluation could not get `bytes` bytes of memory.
AllocationError allocation_failure(const ir::Graph& graph, const ir::Node& node,
                                   const ir::Value& value, size_t bytes) {
  return AllocationError("eager: cannot allocate " + std::to_string(bytes) + " bytes for '" +
                             value.name + "' (" + std::string(dtype_name(value.type.dtype)) +
                             shape_to_string(value.type.sizes) + ", the result of " +
                             ir::describe_node(graph, node) + "): out of memory",
                         bytes);
}

}  // namespace

std::vector<Tensor> run(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                        std::vector<Tensor>* all_values) {
  if (graph.is_symbolic()) {
    // Issue 33: the graph of this call's sizes; a value has the same index in both graphs.
    if (inputs.size() != graph.inputs().size()) check_inputs(graph, inputs);
    std::vector<std::vector<int64_t>> sizes;
    for (const Tensor& t : inputs)
      sizes.push_back(t.defined() ? t.sizes() : std::vector<int64_t>{});
    std::map<std::string, int64_t> values;
    try {
      values = ir::sizes_of_call(graph, sizes);
    } catch (const ir::GraphError& e) {
      throw std::invalid_argument("eager: graph '" + graph.name() + "': " + e.what());
    }
    return run(graph_passes::bind_sizes(graph, values), inputs, all_values);
  }
  check_inputs(graph, inputs);
  std::vector<Tensor> values(graph.values().size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.at(static_cast<size_t>(graph.inputs()[i].index)) = inputs[i];
  }
  const Env env{graph, values};
  for (const ir::Node& node : graph.nodes()) {
    auto it = op_table().find(node.op);
    auto multi = multi_output_op_table().find(node.op);
    OpFn eval;
    if (it != op_table().end()) {
      eval = it->second;
    } else if (detail::EvalFn pointwise = detail::find_pointwise_eval(node.op)) {
      eval = pointwise;
    } else if (multi == multi_output_op_table().end()) {
      throw std::invalid_argument("eager: no implementation of op '" + node.op + "'");
    }
    const ir::Value& value = graph.value(node.output);
    std::vector<Tensor> results;
    try {
      if (eval) {
        results = {eval(env, node)};
      } else {
        std::vector<Tensor> all = multi->second(env, node);
        results = {all.at(static_cast<size_t>(node.result_index))};
      }
    } catch (const AllocationError& e) {
      throw allocation_failure(graph, node, value, e.bytes());
    } catch (const std::bad_alloc&) {  // scratch memory of an op (e.g. reduction accumulators)
      // The IR checked that the value's bytes fit int64.
      const int64_t bytes = checked_byte_size(value.type.sizes, value.type.dtype).value();
      throw allocation_failure(graph, node, value, static_cast<size_t>(bytes));
    } catch (const std::exception&) {
      ir::rethrow_with_context("eager: " + ir::describe_node(graph, node));
    }
    std::vector<ir::ValueRef> refs = {node.output};
    if (results.size() != refs.size()) {
      throw std::logic_error("eager: " + node.op + " produced " + std::to_string(results.size()) +
                             " tensors, the node has " + std::to_string(refs.size()) + " results");
    }
    for (size_t r = 0; r < refs.size(); ++r) {
      const ir::Value& declared = graph.value(refs[r]);
      Tensor& result = results[r];
      if (result.dtype() != declared.type.dtype || result.sizes() != declared.type.sizes) {
        throw std::logic_error(
            "eager: " + node.op + " produced " + std::string(dtype_name(result.dtype())) +
            shape_to_string(result.sizes()) + " for '" + declared.name + "', inferred type is " +
            std::string(dtype_name(declared.type.dtype)) + shape_to_string(declared.type.sizes));
      }
      values.at(static_cast<size_t>(refs[r].index)) = std::move(result);
    }
  }
  std::vector<Tensor> outputs;
  for (ir::ValueRef ref : graph.outputs())
    outputs.push_back(values.at(static_cast<size_t>(ref.index)));
  detail::write_mutated_inputs(graph, values, outputs);
  if (all_values != nullptr) *all_values = std::move(values);
  return outputs;
}

}  // namespace stax::eager
