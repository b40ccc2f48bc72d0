// The op registry of the graph IR: for each op, its ATen-style schema (parameter names, kinds,
// defaults, keyword-only markers) and its type inference. Every other module (eager
// interpreter, lowering, the PyTorch bridge) keys its per-op table on these names.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace stax::ir {

enum class ParamKind : uint8_t {
  Tensor,                  // Tensor
  TensorOrScalar,          // Tensor, or a scalar literal (ATen's .Scalar overloads)
  Scalar,                  // Scalar
  Int,                     // int
  Bool,                    // bool
  IntList,                 // int[] (a single int is accepted and wrapped)
  OptionalIntList,         // int[]? (None allowed)
  OptionalString,          // str? (None allowed)
  OptionalDType,           // ScalarType? (None allowed; a dtype name string otherwise)
  OptionalInt,             // int? (None allowed)
  TensorList,              // Tensor[] (no None entries)
  OptionalTensorList,      // Tensor?[] (None entries allowed)
  OptionalTensorOrScalar,  // Tensor? or Scalar? (clamp's min/max): None, a tensor or a scalar
  OptionalTensor,          // Tensor? (None allowed; convolution's bias)
  BoolList,                // bool[N] ([True, False]; held as an int list of 0 and 1)
};

struct Param {
  std::string name;
  ParamKind kind;
  std::optional<Arg> default_value;  // nullopt: required
  bool keyword_only = false;
};

// Broad families, used by modules that treat many ops alike (lowering, the cost model).
// Factory ops (full, arange, ...) compute their result from their arguments alone.
// Contractions (mm, bmm, addmm, baddbmm) sum products over a shared dimension; lowering
// decides whether one becomes a library call (an external node) or a loop nest.
// Convolutions (convolution, transposed or not) sum C_in/groups * prod(kernel) products per
// output element (ir/convolution_args.h); they accumulate like a contraction.
// Pooling ops (max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d) reduce a window of
// each input plane per output element (ir/pooling_args.h).
enum class OpCategory : uint8_t {
  Pointwise,
  Reduction,
  View,
  Copy,
  Factory,
  Contraction,
  Convolution,
  Pooling,
  Scatter,    // index_put, index_add, scatter, scatter_add (ir/scatter_args.h)
  Attention,  // scaled dot-product attention and its backward (ir/attention_args.h)
  Scan,       // cumsum, cumprod, logcumsumexp, cummax, cummin (ir/scan_args.h)
  Mutation,   // copy_: a graph input written in place (op_schemas_mutation.cpp)
};

struct OpSchema {
  std::string name;
  std::vector<Param> params;
  OpCategory category;
  // Infers the output type from the (already bound and kind-checked) node arguments.
  // Throws GraphError naming the problem.
  std::function<TensorType(const Graph&, const Node&)> infer;
  // Multi-result ops (split): how many results the bound arguments give (infer then reads
  // Node::result_index). Empty for ops with one result.
  std::function<int64_t(const Graph&, const Node&)> result_count = {};
};

const OpSchema* find_op_schema(std::string_view name);
// For an in-place op name (add_, mul_, index_put_: no schema of its own), the schema of its
// functional twin (add, mul, index_put) when that takes `self` first and has one result;
// nullptr otherwise. Graph::add_node adds the twin and copy_ (op_schemas_mutation.cpp).
const OpSchema* in_place_twin_schema(std::string_view name);
std::vector<std::string> registered_op_names();

// Helpers for reading bound arguments of a node (args are in schema order).
const Value& tensor_arg(const Graph& graph, const Node& node, size_t position);
bool is_tensor_arg(const Node& node, size_t position);
// A symbolic int (arange's end) gives its value at the hints.
Scalar scalar_arg(const Node& node, size_t position);
int64_t int_arg(const Node& node, size_t position);
bool bool_arg(const Node& node, size_t position);
// For OptionalIntList parameters None yields nullopt.
std::optional<std::vector<int64_t>> int_list_arg(const Node& node, size_t position);
std::optional<std::string> string_arg(const Node& node, size_t position);
// For OptionalInt parameters None yields nullopt.
std::optional<int64_t> optional_int_arg(const Node& node, size_t position);
// Issue 33: int_arg, optional_int_arg and int_list_arg give a symbolic argument's value at the
// hints (what the static shape rules read); these give its expressions (constants for a plain
// int).
std::optional<std::vector<index::Expr>> symbolic_int_list_arg(const Node& node, size_t position);
std::optional<index::Expr> symbolic_optional_int_arg(const Node& node, size_t position);
// For OptionalTensor parameters None yields nullopt.
std::optional<ValueRef> optional_tensor_arg(const Node& node, size_t position);
// The entries of a TensorList / OptionalTensorList argument (None entries as nullopt).
const std::vector<std::optional<ValueRef>>& tensor_list_arg(const Node& node, size_t position);
// Every tensor a node reads, in argument order, tensor-list entries included (a value passed
// twice appears twice).
std::vector<ValueRef> tensor_operands(const Node& node);

// Shape helpers shared by type inference, the interpreter and lowering.
// Normalizes a possibly negative dim against rank (throws GraphError when out of range).
int64_t normalize_dim(int64_t dim, size_t rank, const std::string& op);
// PyTorch broadcasting of two size lists (throws GraphError when incompatible).
std::vector<int64_t> broadcast_sizes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                     const std::string& op);
// Resolves a reshape target with at most one -1 (throws GraphError on mismatch).
std::vector<int64_t> infer_reshape_sizes(const std::vector<int64_t>& from,
                                         const std::vector<int64_t>& to, const std::string& op);
// Dims reduced by a reduction with the given dim argument (None or [] = all dims), sorted,
// normalized and deduplicated.
std::vector<int64_t> reduction_dims(const std::optional<std::vector<int64_t>>& dim, size_t rank,
                                    const std::string& op);

}  // namespace stax::ir
