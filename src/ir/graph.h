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

#include "index/expr.h"
#include "ir/dtype.h"
#include "ir/scalar.h"

namespace stax::ir {

class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Sizes of a value plus, for graph inputs, the strides it must be passed with (elements).
struct TensorType {
  DType dtype = DType::Float32;
  // The sizes and strides; for a symbolic type, their values at the symbols' hints, which only
  // heuristics and stages that first bind the sizes (bind_sizes) may read.
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // always filled; contiguous unless given explicitly
  // Issue 33 (ir/symbolic_shapes.h): for a type whose sizes are known only at run time, every
  // dim's size and stride as an expression over the graph's size symbols (constants where the
  // dim is static); empty for a static type.
  std::vector<index::Expr> symbolic_sizes;
  std::vector<index::Expr> symbolic_strides;
  bool is_symbolic() const { return !symbolic_sizes.empty(); }
  int64_t numel() const;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);

struct ValueRef {
  int index = -1;
  friend bool operator==(const ValueRef&, const ValueRef&) = default;
};

struct None {
  friend bool operator==(const None&, const None&) = default;
};

// A list of tensors (ATen's Tensor[] of cat/stack) whose entries may be None (Tensor?[] of
// index.Tensor: None leaves a dim unindexed).
struct TensorList {
  std::vector<std::optional<ValueRef>> items;
  friend bool operator==(const TensorList&, const TensorList&) = default;
};

// Issue 33: an int argument, or an int list, that is an expression over the graph's size
// symbols (view(x, [s0, 12, 64]), narrow(x, 0, 0, s0)), with its value at the symbols' hints,
// which the static shape rules read. One whose expressions are all constants is a plain int
// (list).
struct SymInt {
  index::Expr expr;
  int64_t at_hint = 0;
  friend bool operator==(const SymInt&, const SymInt&) = default;
};
struct SymIntList {
  std::vector<index::Expr> items;
  std::vector<int64_t> at_hints;
  friend bool operator==(const SymIntList&, const SymIntList&) = default;
};

// One argument: a tensor, a scalar, an int, a bool, an int list, a string, None, a tensor
// list, or a symbolic int or int list.
using Arg = std::variant<None, ValueRef, Scalar, int64_t, bool, std::vector<int64_t>, std::string,
                         TensorList, SymInt, SymIntList>;

struct Node {
  std::string op;
  std::vector<Arg> args;  // schema order, defaults filled
  ValueRef output;
  // Which result of a multi-result op (split, split_with_sizes) this node takes, like
  // getitem(split(...), k) in torch.fx: a multi-result op is one node per result, added
  // together (Graph::add_multi_result_node) with equal arguments. 0 for every other op.
  int result_index = 0;
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
  // Issue 33: an input whose sizes (and strides) are expressions over size symbols (s0, s1,
  // ...). Symbols not declared before take default_size_symbol()'s facts. Inputs whose
  // expressions are all constants are static inputs.
  ValueRef add_symbolic_input(const std::string& name, DType dtype, std::vector<index::Expr> sizes,
                              std::optional<std::vector<index::Expr>> strides = std::nullopt);
  // What is known of a size symbol; declare it before an input uses it.
  void declare_size_symbol(const std::string& name, index::SizeSymbol facts);
  const index::SymbolTable& size_symbols() const { return size_symbols_; }
  // Whether any value's sizes are known only at run time.
  bool is_symbolic() const;
  // Adds a node. `args` are positional in schema order; `kwargs` bind by parameter name.
  // Missing parameters take their schema default. The output is named `name` or, if empty,
  // a fresh name. Throws GraphError on unknown op, missing/extra/ill-typed args, or shapes
  // that the op rejects.
  ValueRef add_node(const std::string& op, std::vector<Arg> args,
                    std::vector<std::pair<std::string, Arg>> kwargs = {},
                    const std::string& name = "");
  // Adds the nodes of a multi-result op (split, split_with_sizes), one per result, in order;
  // `names` (empty for fresh names) must have one entry per result. Ops with one result
  // throw GraphError here, as multi-result ops do in add_node.
  std::vector<ValueRef> add_multi_result_node(const std::string& op, std::vector<Arg> args,
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
  Node bind_node(const std::string& op, std::vector<Arg> args,
                 std::vector<std::pair<std::string, Arg>> kwargs) const;
  std::string fresh_or_checked_name(const std::string& op, const std::string& name) const;
  TensorType infer_result(const Node& node, const std::string& out_name) const;
  ValueRef add_checked_symbolic_input(const std::string& name, DType dtype,
                                      std::vector<index::Expr> sizes,
                                      std::optional<std::vector<index::Expr>> strides);
  ValueRef append_node(Node node, const std::string& out_name, TensorType type);

  std::string name_;
  std::vector<Value> values_;
  std::unordered_map<std::string, int> value_index_;  // name -> index into values_
  std::vector<Node> nodes_;
  std::vector<ValueRef> inputs_;
  std::vector<ValueRef> outputs_;
  index::SymbolTable size_symbols_;
};

// A graph input that copy_ writes in place (issue 16, point 6): its position among the
// inputs and the value it holds after the graph ran.
struct InputWrite {
  size_t input = 0;
  ValueRef value;
};
std::vector<InputWrite> input_writes(const Graph& graph);

// How errors after parsing name a node: "sum 's' at FILE:LINE" (or "sum 's'" without a
// location), so that a refusal in lowering, scheduling, code generation or the eager
// interpreter points at the statement of the program.
std::string describe_node(const Graph& graph, const Node& node);

// Rethrows the exception being handled with `context` before its message, as the same
// standard exception category (invalid_argument, out_of_range, runtime_error, logic_error;
// ir::IndexError stays itself).
// Call only inside a catch block.
[[noreturn]] void rethrow_with_context(const std::string& context);

// Text format (see examples/*.stax):
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
