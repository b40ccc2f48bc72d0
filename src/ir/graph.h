// The graph IR: a function of named tensor inputs built from ATen-named ops, with its outputs.
// Nodes keep their arguments in the op schema's order with defaults filled in, so a Stax op
// maps one to one onto the ATen operator of the same name. Types (dtype and sizes) are inferred
// when a node is added; bad arguments throw stax::ir::GraphError naming the op and argument.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ir/dtype.h"

namespace stax::ir {

class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Sizes of a value plus, for graph inputs, the strides it must be passed with (elements).
struct TensorType {
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // always filled; contiguous unless given explicitly
  int64_t numel() const;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);

// A scalar literal: `2`, `2.0`, `-inf`, `nan`, `True`. Integral literals keep their kind so
// that printing round-trips and PyTorch's promotion rules can be applied later.
struct Scalar {
  enum class Kind : uint8_t { Float, Int, Bool };
  Kind kind = Kind::Float;
  double value = 0.0;
  friend bool operator==(const Scalar& a, const Scalar& b);
};

struct ValueRef {
  int index = -1;
  friend bool operator==(const ValueRef&, const ValueRef&) = default;
};

struct None {
  friend bool operator==(const None&, const None&) = default;
};

// One argument: a tensor, a scalar, an int, a bool, an int list, a string, or None.
using Arg = std::variant<None, ValueRef, Scalar, int64_t, bool, std::vector<int64_t>, std::string>;

struct Node {
  std::string op;
  std::vector<Arg> args;  // schema order, defaults filled
  ValueRef output;
  // The results after the first of an op that returns several (OpSchema::num_outputs - 1 of
  // them: var_mean's mean); empty otherwise.
  std::vector<ValueRef> extra_outputs;
  // "FILE:LINE" of the statement in a text program; empty for graphs built in C++. Not part
  // of graph equality.
  std::string location;
};

struct Value {
  std::string name;
  TensorType type;
  int producer = -1;  // node index, or -1 for a graph input
};

class Graph {
 public:
  explicit Graph(std::string name = "graph");

  const std::string& name() const { return name_; }

  // Adds a graph input. Strides, when given, must have one entry per dimension.
  ValueRef add_input(const std::string& name, DType dtype, std::vector<int64_t> sizes,
                     std::optional<std::vector<int64_t>> strides = std::nullopt);
  // Adds a node. `args` are positional in schema order; `kwargs` bind by parameter name.
  // Missing parameters take their schema default. The output is named `name` or, if empty,
  // a fresh name. Throws GraphError on unknown op, missing/extra/ill-typed args, or shapes
  // that the op rejects.
  ValueRef add_node(const std::string& op, std::vector<Arg> args,
                    std::vector<std::pair<std::string, Arg>> kwargs = {},
                    const std::string& name = "");
  // Adds a node of an op returning several tensors (or one) and returns all its results, in
  // the op's order, named `names` (one per result) or, if empty, fresh names. add_node
  // refuses such ops.
  std::vector<ValueRef> add_multi_output_node(const std::string& op, std::vector<Arg> args,
                                              std::vector<std::pair<std::string, Arg>> kwargs = {},
                                              const std::vector<std::string>& names = {});
  void set_outputs(std::vector<ValueRef> outputs);
  // Records where the node producing `value` was written (see Node::location).
  void set_location(ValueRef value, std::string location);

  const std::vector<Value>& values() const { return values_; }
  const Value& value(ValueRef ref) const { return values_.at(static_cast<size_t>(ref.index)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueRef>& inputs() const { return inputs_; }
  const std::vector<ValueRef>& outputs() const { return outputs_; }
  std::optional<ValueRef> find_value(const std::string& name) const;

  // Structural equality: same names, types, ops, arguments and outputs.
  friend bool operator==(const Graph& a, const Graph& b);

 private:
  std::string name_;
  std::vector<Value> values_;
  std::unordered_map<std::string, int> value_index_;  // name -> index into values_
  std::vector<Node> nodes_;
  std::vector<ValueRef> inputs_;
  std::vector<ValueRef> outputs_;
};

// How errors after parsing name a node: "sum 's' at FILE:LINE" (or "sum 's'" without a
// location), so that a refusal in lowering, scheduling, code generation or the eager
// interpreter points at the statement of the program.
std::string describe_node(const Graph& graph, const Node& node);

// Rethrows the exception being handled with `context` before its message, as the same
// standard exception category (invalid_argument, out_of_range, runtime_error, logic_error).
// Call only inside a catch block.
[[noreturn]] void rethrow_with_context(const std::string& context);

// Text format (see ../shared/examples/*.stax):
//   def NAME(x: f32[64, 128], w: f32[128, 64] strides=[1, 128]):
//       s = sum(x, dim=[-1], keepdim=True)
//       return s
// Errors throw ParseError with "FILE:LINE:COLUMN: expected ..." messages.
class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
Graph parse_graph(const std::string& text, const std::string& filename = "<input>");
Graph parse_graph_file(const std::string& path);
// Prints a graph so that parse_graph(print_graph(g)) == g. Tensor arguments are positional;
// other arguments are printed as key=value when they differ from the schema default.
std::string print_graph(const Graph& graph);

}  // namespace stax::ir
