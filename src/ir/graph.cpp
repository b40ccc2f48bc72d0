// Graph construction: inputs, nodes (argument binding against the op schema, kind checks and
// conversions, defaults, type inference, output naming), outputs, and structural equality.
// Also the small value types of graph.h (TensorType, Scalar).
#include "ir/graph.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "ir/checked_arith.h"
#include "ir/index_rule.h"
#include "ir/op_schema.h"
#include "ir/symbolic_shapes.h"
#include "ir/text_format.h"

namespace stax::ir {

int64_t TensorType::numel() const {
  std::optional<int64_t> n = checked_numel(sizes);
  if (!n) {
    throw GraphError("sizes " + format_sizes(sizes) + ": the element count overflows int64");
  }
  return *n;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::optional<std::vector<int64_t>> strides = checked_contiguous_strides(sizes);
  if (!strides) {
    throw GraphError("sizes " + format_sizes(sizes) + ": the contiguous strides overflow int64");
  }
  return *strides;
}

namespace {

std::string describe_arg_kind(const Arg& arg) {
  switch (arg.index()) {
    case 0:
      return "None";
    case 1:
      return "a tensor";
    case 2: {
      const Scalar& s = std::get<Scalar>(arg);
      return s.is_float() ? "a float scalar" : s.is_int() ? "an int scalar" : "a bool scalar";
    }
    case 3:
      return "an int";
    case 4:
      return "a bool";
    case 5:
      return "an int list";
    case 6:
      return "a string";
    case 7:
      return "a tensor list";
    case 8:
      return "a symbolic int";
    case 9:
      return "a symbolic int list";
  }
  return "?";
}

std::string param_kind_text(ParamKind kind) {
  switch (kind) {
    case ParamKind::Tensor:
      return "a tensor";
    case ParamKind::TensorOrScalar:
      return "a tensor or a scalar";
    case ParamKind::Scalar:
      return "a scalar";
    case ParamKind::Int:
      return "an int";
    case ParamKind::Bool:
      return "a bool";
    case ParamKind::IntList:
      return "an int list";
    case ParamKind::OptionalIntList:
      return "an int list or None";
    case ParamKind::OptionalString:
      return "a string or None";
    case ParamKind::OptionalDType:
      return "a dtype name or None";
    case ParamKind::OptionalInt:
      return "an int or None";
    case ParamKind::TensorList:
      return "a list of tensors";
    case ParamKind::OptionalTensorList:
      return "a list of tensors and None";
    case ParamKind::OptionalTensorOrScalar:
      return "a tensor, a scalar or None";
    case ParamKind::OptionalTensor:
      return "a tensor or None";
    case ParamKind::BoolList:
      return "a list of bools";
  }
  return "?";
}

}  // namespace

Graph::Graph(std::string name) : name_(std::move(name)) {
  if (!is_valid_value_name(name_)) {
    throw GraphError("invalid graph name '" + name_ + "' (expected an identifier)");
  }
}

std::optional<ValueRef> Graph::find_value(const std::string& name) const {
  auto it = value_index_.find(name);
  if (it == value_index_.end()) return std::nullopt;
  return ValueRef{it->second};
}

ValueRef Graph::add_input(const std::string& name, DType dtype, std::vector<int64_t> sizes,
                          std::optional<std::vector<int64_t>> strides) {
  if (!is_valid_value_name(name)) {
    throw GraphError("input: invalid value name '" + name + "' (expected an identifier)");
  }
  if (find_value(name)) throw GraphError("input: duplicate value name '" + name + "'");
  if (size_symbols_.count(name) != 0) {
    throw GraphError("input: value name '" + name + "' is the name of a size symbol");
  }
  for (int64_t s : sizes) {
    if (s < 0) {
      throw GraphError("input '" + name + "': sizes " + format_sizes(sizes) +
                       " must not be negative");
    }
  }
  if (strides) {
    if (strides->size() != sizes.size()) {
      throw GraphError("input '" + name + "': strides " + format_sizes(*strides) + " must have " +
                       std::to_string(sizes.size()) + " entries, one per dim of sizes " +
                       format_sizes(sizes));
    }
    for (int64_t s : *strides) {
      if (s < 0) {
        throw GraphError("input '" + name + "': strides " + format_sizes(*strides) +
                         " must not be negative");
      }
    }
  }
  // Sizes, strides, element count, bytes and strided extent must all fit int64 (see
  // checked_arith.h): every later size or offset computation relies on it.
  if (std::optional<std::string> problem = strides ? layout_problem(dtype, sizes, *strides)
                                                   : contiguous_layout_problem(dtype, sizes)) {
    throw GraphError("input '" + name + "' (" + std::string(dtype_name(dtype)) + "): " + *problem);
  }
  TensorType type;
  type.dtype = dtype;
  type.strides = strides ? std::move(*strides) : contiguous_strides(sizes);
  type.sizes = std::move(sizes);
  ValueRef ref{static_cast<int>(values_.size())};
  value_index_.emplace(name, static_cast<int>(values_.size()));
  values_.push_back(Value{name, std::move(type), -1});
  inputs_.push_back(ref);
  return ref;
}

namespace {

// Kind-checks one bound argument against its parameter and converts it to the canonical
// representation stored in nodes (see ParamKind).
Arg convert_arg(const Graph& graph, const std::string& op, const Param& param, Arg arg) {
  const std::string where = op + ": argument '" + param.name + "'";
  auto fail = [&]() -> GraphError {
    return GraphError(where + " expects " + param_kind_text(param.kind) + ", got " +
                      describe_arg_kind(arg));
  };
  auto check_ref = [&](ValueRef ref) {
    if (ref.index < 0 || static_cast<size_t>(ref.index) >= graph.values().size()) {
      throw GraphError(where + ": value reference " + std::to_string(ref.index) +
                       " does not belong to graph '" + graph.name() + "'");
    }
  };
  auto as_scalar = [&](const Arg& a) -> std::optional<Scalar> {
    if (auto* s = std::get_if<Scalar>(&a)) return *s;
    if (auto* i = std::get_if<int64_t>(&a)) return Scalar(*i);
    if (auto* b = std::get_if<bool>(&a)) return Scalar(*b);
    return std::nullopt;
  };
  auto as_int_list = [&](const Arg& a) -> std::optional<std::vector<int64_t>> {
    if (auto* l = std::get_if<std::vector<int64_t>>(&a)) return *l;
    if (auto* i = std::get_if<int64_t>(&a)) return std::vector<int64_t>{*i};
    return std::nullopt;
  };
  // Symbolic ints keep their expressions, checked against the graph's symbols and valued at
  // their hints; all-constant ones become plain ints.
  auto at_hint = [&](const index::Expr& e) {
    for (const std::string& symbol : index::free_vars(e)) {
      if (graph.size_symbols().count(symbol) == 0) {
        throw GraphError(where + ": '" + symbol + "' is not a size symbol of the graph");
      }
    }
    return index::values_at_hints({e}, graph.size_symbols())[0];
  };
  auto as_sym_int = [&](const Arg& a) -> std::optional<Arg> {
    const auto* s = std::get_if<SymInt>(&a);
    if (!s) return std::nullopt;
    if (s->expr.is_constant()) return Arg(*s->expr.constant_value());
    return Arg(SymInt{s->expr, at_hint(s->expr)});
  };
  auto as_sym_int_list = [&](const Arg& a) -> std::optional<Arg> {
    const SymIntList* l = std::get_if<SymIntList>(&a);
    SymIntList one;
    if (const auto* s = std::get_if<SymInt>(&a)) {
      one.items = {s->expr};
      l = &one;
    }
    if (!l) return std::nullopt;
    SymIntList out{l->items, {}};
    bool constant = true;
    for (const index::Expr& e : out.items) {
      out.at_hints.push_back(at_hint(e));
      constant = constant && e.is_constant();
    }
    if (constant) return Arg(out.at_hints);
    return Arg(std::move(out));
  };

  switch (param.kind) {
    case ParamKind::Tensor:
      if (auto* ref = std::get_if<ValueRef>(&arg)) {
        check_ref(*ref);
        return arg;
      }
      throw fail();
    case ParamKind::TensorOrScalar:
      if (auto* ref = std::get_if<ValueRef>(&arg)) {
        check_ref(*ref);
        return arg;
      }
      if (auto s = as_scalar(arg)) return *s;
      if (auto sym = as_sym_int(arg)) return *sym;  // div(grad, s0): a mean's gradient
      throw fail();
    case ParamKind::Scalar:
      if (auto s = as_scalar(arg)) return *s;
      if (auto sym = as_sym_int(arg)) return *sym;
      throw fail();
    case ParamKind::Int:
      if (auto* i = std::get_if<int64_t>(&arg)) return *i;
      if (auto sym = as_sym_int(arg)) return *sym;
      if (auto* s = std::get_if<Scalar>(&arg); s && s->is_int()) return s->int_value();
      throw fail();
    case ParamKind::Bool:
      if (std::holds_alternative<bool>(arg)) return arg;
      if (auto* s = std::get_if<Scalar>(&arg); s && s->is_bool()) return s->bool_value();
      throw fail();
    case ParamKind::IntList:
      if (auto l = as_int_list(arg)) return *l;
      if (auto sym = as_sym_int_list(arg)) return *sym;
      throw fail();
    case ParamKind::OptionalIntList:
      if (std::holds_alternative<None>(arg)) return arg;
      if (auto l = as_int_list(arg)) return *l;
      if (auto sym = as_sym_int_list(arg)) return *sym;
      throw fail();
    case ParamKind::BoolList:
      // The parser reads [True, False] as [1, 0]; nothing else is a bool.
      if (auto* l = std::get_if<std::vector<int64_t>>(&arg)) {
        if (std::all_of(l->begin(), l->end(), [](int64_t v) { return v == 0 || v == 1; })) {
          return arg;
        }
      }
      throw fail();
    case ParamKind::OptionalString:
      if (std::holds_alternative<None>(arg) || std::holds_alternative<std::string>(arg)) return arg;
      throw fail();
    case ParamKind::OptionalDType:
      if (std::holds_alternative<None>(arg)) return arg;
      if (auto* s = std::get_if<std::string>(&arg)) {
        std::optional<DType> dtype = parse_dtype(*s);
        if (!dtype) throw GraphError(where + ": unknown dtype '" + *s + "'");
        return std::string(dtype_name(*dtype));
      }
      throw fail();
    case ParamKind::OptionalInt:
      if (std::holds_alternative<None>(arg) || std::holds_alternative<int64_t>(arg)) return arg;
      if (auto sym = as_sym_int(arg)) return *sym;
      if (auto* s = std::get_if<Scalar>(&arg); s && s->is_int()) return s->int_value();
      throw fail();
    case ParamKind::TensorList:
    case ParamKind::OptionalTensorList: {
      // `[]` reads as an empty int list; a single tensor is not wrapped (ATen requires a list).
      if (auto* l = std::get_if<std::vector<int64_t>>(&arg); l && l->empty()) return TensorList{};
      auto* list = std::get_if<TensorList>(&arg);
      if (!list) throw fail();
      for (size_t k = 0; k < list->items.size(); ++k) {
        if (list->items[k]) {
          check_ref(*list->items[k]);
        } else if (param.kind == ParamKind::TensorList) {
          throw GraphError(where + " expects a list of tensors, got None at position " +
                           std::to_string(k));
        }
      }
      return arg;
    }
    case ParamKind::OptionalTensorOrScalar:
      if (std::holds_alternative<None>(arg)) return arg;
      if (auto* ref = std::get_if<ValueRef>(&arg)) {
        check_ref(*ref);
        return arg;
      }
      if (auto s = as_scalar(arg)) return *s;
      throw fail();
    case ParamKind::OptionalTensor:
      if (std::holds_alternative<None>(arg)) return arg;
      if (auto* ref = std::get_if<ValueRef>(&arg)) {
        check_ref(*ref);
        return arg;
      }
      throw fail();
  }
  throw fail();
}

}  // namespace

Node Graph::bind_node(const std::string& op, std::vector<Arg> args,
                      std::vector<std::pair<std::string, Arg>> kwargs) const {
  const OpSchema* schema = find_op_schema(op);
  if (!schema) throw GraphError("unknown op '" + op + "'");
  const std::vector<Param>& params = schema->params;

  // Bind positional arguments (never to keyword-only parameters), then keywords.
  size_t max_positional = 0;
  while (max_positional < params.size() && !params[max_positional].keyword_only) ++max_positional;
  if (args.size() > max_positional) {
    throw GraphError(op + ": takes at most " + std::to_string(max_positional) +
                     " positional argument" + (max_positional == 1 ? "" : "s") + " but " +
                     std::to_string(args.size()) + " were given");
  }
  std::vector<std::optional<Arg>> bound(params.size());
  for (size_t i = 0; i < args.size(); ++i) bound[i] = std::move(args[i]);
  for (auto& [key, value] : kwargs) {
    size_t p = 0;
    while (p < params.size() && params[p].name != key) ++p;
    if (p == params.size()) throw GraphError(op + ": unexpected keyword argument '" + key + "'");
    if (bound[p]) throw GraphError(op + ": got multiple values for argument '" + key + "'");
    bound[p] = std::move(value);
  }

  Node node;
  node.op = op;
  node.args.reserve(params.size());
  for (size_t p = 0; p < params.size(); ++p) {
    if (!bound[p]) {
      if (!params[p].default_value) {
        throw GraphError(op + ": missing required argument '" + params[p].name + "'");
      }
      bound[p] = *params[p].default_value;
    }
    node.args.push_back(convert_arg(*this, op, params[p], std::move(*bound[p])));
  }
  return node;
}

std::string Graph::fresh_or_checked_name(const std::string& op, const std::string& name) const {
  if (name.empty()) {
    for (size_t k = nodes_.size();; ++k) {
      std::string fresh = "v" + std::to_string(k);
      if (!find_value(fresh)) return fresh;
    }
  }
  if (!is_valid_value_name(name)) {
    throw GraphError(op + ": invalid value name '" + name + "' (expected an identifier)");
  }
  if (find_value(name)) throw GraphError(op + ": duplicate value name '" + name + "'");
  if (size_symbols_.count(name) != 0) {
    throw GraphError(op + ": value name '" + name + "' is the name of a size symbol");
  }
  return name;
}

TensorType Graph::infer_result(const Node& node, const std::string& out_name) const {
  TensorType type = find_op_schema(node.op)->infer(*this, node);
  // Any result may be materialized contiguously (a buffer of the compiled graph, a copy in
  // eager), so its bytes must fit int64 even when the op is a view.
  if (std::optional<std::string> problem = contiguous_layout_problem(type.dtype, type.sizes)) {
    throw GraphError(node.op + ": result '" + out_name + "' (" +
                     std::string(dtype_name(type.dtype)) + "): " + *problem);
  }
  type.strides = contiguous_strides(type.sizes);
  const std::vector<ValueRef> operands = tensor_operands(node);
  if (std::any_of(operands.begin(), operands.end(),
                  [&](ValueRef v) { return value(v).type.is_symbolic(); }) ||
      std::any_of(node.args.begin(), node.args.end(), [](const Arg& a) {
        return std::holds_alternative<SymInt>(a) || std::holds_alternative<SymIntList>(a);
      })) {
    // The static rule above ran at the symbols' hints; the symbolic rule must agree with it
    // there (a cheap check of every symbolic rule on every graph).
    std::vector<index::Expr> sizes = infer_symbolic_sizes(*this, node, type.sizes);
    if (index::values_at_hints(sizes, size_symbols_) != type.sizes) {
      throw std::logic_error(node.op + ": the symbolic sizes " + index::format_exprs(sizes) +
                             " of '" + out_name + "' are not " + format_sizes(type.sizes) +
                             " at the symbols' hints");
    }
    if (std::any_of(sizes.begin(), sizes.end(),
                    [](const index::Expr& e) { return !e.is_constant(); })) {
      type.symbolic_strides = ir::contiguous_strides(sizes);
      type.symbolic_sizes = std::move(sizes);
    }
  }
  return type;
}

void Graph::declare_size_symbol(const std::string& name, index::SizeSymbol facts) {
  if (!is_size_symbol_name(name)) {
    throw GraphError("size symbol '" + name + "': size symbols are named s0, s1, ...");
  }
  if (size_symbols_.count(name) != 0) {
    throw GraphError("size symbol '" + name + "' is declared twice");
  }
  if (find_value(name)) {
    throw GraphError("size symbol '" + name + "' is the name of a value");
  }
  if (facts.lo < 0 || facts.hi < facts.lo || facts.multiple_of < 1) {
    throw GraphError("size symbol '" + name + "': its range [" + std::to_string(facts.lo) + ", " +
                     std::to_string(facts.hi) +
                     "] must be non-empty and non-negative, and its divisor at least 1");
  }
  if (facts.hint < facts.lo || facts.hint > facts.hi || facts.hint % facts.multiple_of != 0) {
    throw GraphError("size symbol '" + name + "': its hint " + std::to_string(facts.hint) +
                     " is not a value it may take");
  }
  size_symbols_.emplace(name, facts);
}

ValueRef Graph::add_symbolic_input(const std::string& name, DType dtype,
                                   std::vector<index::Expr> sizes,
                                   std::optional<std::vector<index::Expr>> strides) {
  // A refusal leaves the graph as it was, the symbols this input would declare included.
  const index::SymbolTable symbols_before = size_symbols_;
  try {
    return add_checked_symbolic_input(name, dtype, std::move(sizes), std::move(strides));
  } catch (...) {
    size_symbols_ = symbols_before;
    throw;
  }
}

ValueRef Graph::add_checked_symbolic_input(const std::string& name, DType dtype,
                                           std::vector<index::Expr> sizes,
                                           std::optional<std::vector<index::Expr>> strides) {
  const std::string what = "input '" + name + "'";
  auto declare_symbols = [&](const std::vector<index::Expr>& exprs) {
    for (const index::Expr& e : exprs) {
      for (const std::string& symbol : index::free_vars(e)) {
        if (!is_size_symbol_name(symbol)) {
          throw GraphError(what + ": '" + symbol + "' is not a size symbol (s0, s1, ...)");
        }
        if (size_symbols_.count(symbol) == 0) {
          declare_size_symbol(symbol, default_size_symbol());
        }
      }
    }
  };
  // The text format writes sizes and strides as integers or products of symbols and an
  // integer (the rows of a flattened [2, s0] batch are 2*s0).
  for (const index::Expr& e : sizes) {
    if (!e.is_constant() && !index::is_divisor(e)) {
      throw GraphError(what + ": size " + index::to_string(e) +
                       " must be an integer or a product of size symbols and an integer");
    }
  }
  for (const index::Expr& e : strides ? *strides : std::vector<index::Expr>{}) {
    if (!e.is_constant() && !index::is_divisor(e)) {
      throw GraphError(what + ": stride " + index::to_string(e) +
                       " must be an integer or a product of size symbols and an integer");
    }
  }
  declare_symbols(sizes);
  if (strides) declare_symbols(*strides);
  for (const index::Expr& e : sizes) {
    if (e.is_constant()) continue;  // add_input refuses negative constants with its own message
    if (index::is_nonnegative(e, index::Domain({}, size_symbols_)) != index::Truth::kProved) {
      throw GraphError(what + ": size " + index::to_string(e) + " may be negative");
    }
  }
  std::optional<std::vector<int64_t>> strides_at_hints;
  if (strides) strides_at_hints = index::values_at_hints(*strides, size_symbols_);
  const ValueRef ref = add_input(name, dtype, index::values_at_hints(sizes, size_symbols_),
                                 std::move(strides_at_hints));
  const bool symbolic =
      std::any_of(sizes.begin(), sizes.end(),
                  [](const index::Expr& e) { return !e.is_constant(); }) ||
      (strides && std::any_of(strides->begin(), strides->end(),
                              [](const index::Expr& e) { return !e.is_constant(); }));
  if (!symbolic) return ref;
  TensorType& type = values_[static_cast<size_t>(ref.index)].type;
  try {
    for (const index::Expr& e : strides ? *strides : std::vector<index::Expr>{}) {
      if (index::is_nonnegative(e, index::Domain({}, size_symbols_)) != index::Truth::kProved) {
        throw GraphError(what + ": stride " + index::to_string(e) + " may be negative");
      }
    }
    type.symbolic_strides = strides ? std::move(*strides) : ir::contiguous_strides(sizes);
    type.symbolic_sizes = std::move(sizes);
  } catch (...) {
    value_index_.erase(name);
    values_.pop_back();
    inputs_.pop_back();
    throw;
  }
  return ref;
}

bool Graph::is_symbolic() const {
  return std::any_of(values_.begin(), values_.end(),
                     [](const Value& v) { return v.type.is_symbolic(); });
}

ValueRef Graph::append_node(Node node, const std::string& out_name, TensorType type) {
  node.output = ValueRef{static_cast<int>(values_.size())};
  value_index_.emplace(out_name, static_cast<int>(values_.size()));
  values_.push_back(Value{out_name, std::move(type), static_cast<int>(nodes_.size())});
  nodes_.push_back(std::move(node));
  return nodes_.back().output;
}

ValueRef Graph::add_node(const std::string& op, std::vector<Arg> args,
                         std::vector<std::pair<std::string, Arg>> kwargs, const std::string& name) {
  // An in-place op (add_, mul_, index_put_, ...) is its functional twin written back into its
  // `self` with copy_ (op_schemas_mutation.cpp), as functionalization makes it.
  if (const OpSchema* twin = in_place_twin_schema(op)) {
    if (args.empty() || !std::holds_alternative<ValueRef>(args[0])) {
      throw GraphError(op + ": argument 'self' must be a tensor given first");
    }
    const ValueRef self = std::get<ValueRef>(args[0]);
    if (!name.empty()) fresh_or_checked_name(op, name);  // refuse a bad name before adding
    // The twin's value gets a fresh name other than the one the copy_ is to take.
    std::string twin_name;
    for (size_t k = nodes_.size(); twin_name.empty() || find_value(twin_name) || twin_name == name;
         ++k) {
      twin_name = "v" + std::to_string(k);
    }
    const ValueRef value = add_node(twin->name, std::move(args), std::move(kwargs), twin_name);
    // As eager's in-place ops: the result must convert to self's dtype without leaving its
    // kind (no floats into integers, nothing but bool into bool).
    const DType from = this->value(value).type.dtype;
    const DType to = this->value(self).type.dtype;
    const bool castable =
        !(is_floating(from) && !is_floating(to)) && !(to == DType::Bool && from != DType::Bool);
    try {
      if (!castable) {
        throw GraphError(op + ": result type " + std::string(dtype_name(from)) +
                         " can't be cast to the desired output type " +
                         std::string(dtype_name(to)) + " of '" + this->value(self).name + "'");
      }
      return add_node("copy_", {self, value}, {}, name);
    } catch (const GraphError&) {
      // A refusal leaves the graph as it was: take the functional twin back out.
      value_index_.erase(values_.back().name);
      values_.pop_back();
      nodes_.pop_back();
      throw;
    }
  }
  Node node = bind_node(op, std::move(args), std::move(kwargs));
  if (find_op_schema(op)->result_count) {
    throw GraphError(op +
                     ": has several results; add it with add_multi_result_node (in the "
                     "text format: `a, b = " +
                     op + "(...)`)");
  }
  const std::string out_name = fresh_or_checked_name(op, name);
  node.output = ValueRef{static_cast<int>(values_.size())};
  TensorType type = infer_result(node, out_name);
  return append_node(std::move(node), out_name, std::move(type));
}

std::vector<ValueRef> Graph::add_multi_result_node(const std::string& op, std::vector<Arg> args,
                                                   std::vector<std::pair<std::string, Arg>> kwargs,
                                                   const std::vector<std::string>& names) {
  Node node = bind_node(op, std::move(args), std::move(kwargs));
  const OpSchema* schema = find_op_schema(op);
  if (!schema->result_count) {
    throw GraphError(op + ": has one result; add it with add_node");
  }
  const int64_t count = schema->result_count(*this, node);
  if (!names.empty() && static_cast<int64_t>(names.size()) != count) {
    throw GraphError(op + ": gives " + std::to_string(count) + " result" + (count == 1 ? "" : "s") +
                     " but " + std::to_string(names.size()) + " name" +
                     (names.size() == 1 ? " was" : "s were") + " given");
  }
  // Infer every result before adding any, so that a refusal leaves the graph unchanged.
  std::vector<std::string> out_names;
  std::vector<TensorType> types;
  for (int64_t k = 0; k < count; ++k) {
    std::string out_name = names.empty() ? "" : names[static_cast<size_t>(k)];
    if (out_name.empty()) {
      for (size_t j = nodes_.size() + static_cast<size_t>(k);; ++j) {
        out_name = "v" + std::to_string(j);
        if (!find_value(out_name) &&
            std::find(out_names.begin(), out_names.end(), out_name) == out_names.end()) {
          break;
        }
      }
    } else {
      out_name = fresh_or_checked_name(op, out_name);
      if (std::find(out_names.begin(), out_names.end(), out_name) != out_names.end()) {
        throw GraphError(op + ": duplicate value name '" + out_name + "'");
      }
    }
    Node part = node;
    part.result_index = static_cast<int>(k);
    part.output = ValueRef{static_cast<int>(values_.size() + static_cast<size_t>(k))};
    types.push_back(infer_result(part, out_name));
    out_names.push_back(std::move(out_name));
  }
  std::vector<ValueRef> refs;
  for (int64_t k = 0; k < count; ++k) {
    Node part = node;
    part.result_index = static_cast<int>(k);
    refs.push_back(append_node(std::move(part), out_names[static_cast<size_t>(k)],
                               std::move(types[static_cast<size_t>(k)])));
  }
  return refs;
}

void Graph::set_outputs(std::vector<ValueRef> outputs) {
  // A graph that only writes its inputs in place (copy_) may return nothing.
  const bool mutates =
      std::any_of(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.op == "copy_"; });
  if (outputs.empty() && !mutates) {
    throw GraphError("graph '" + name_ + "': needs at least one output");
  }
  for (ValueRef ref : outputs) {
    if (ref.index < 0 || static_cast<size_t>(ref.index) >= values_.size()) {
      throw GraphError("graph '" + name_ + "': output reference " + std::to_string(ref.index) +
                       " is not a value of this graph");
    }
  }
  outputs_ = std::move(outputs);
}

namespace {

// Compares values of two graphs by name and type (indices may differ between graphs).
bool same_value(const Graph& ga, ValueRef a, const Graph& gb, ValueRef b) {
  const Value& va = ga.value(a);
  const Value& vb = gb.value(b);
  return va.name == vb.name && va.type == vb.type;
}

bool same_arg(const Graph& ga, const Arg& a, const Graph& gb, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (auto* ra = std::get_if<ValueRef>(&a)) {
    return ga.value(*ra).name == gb.value(std::get<ValueRef>(b)).name;
  }
  if (auto* la = std::get_if<TensorList>(&a)) {
    const auto& lb = std::get<TensorList>(b);
    if (la->items.size() != lb.items.size()) return false;
    for (size_t k = 0; k < la->items.size(); ++k) {
      const auto& x = la->items[k];
      const auto& y = lb.items[k];
      if (x.has_value() != y.has_value()) return false;
      if (x && ga.value(*x).name != gb.value(*y).name) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace

bool operator==(const Graph& a, const Graph& b) {
  if (a.name_ != b.name_ || a.size_symbols_ != b.size_symbols_ ||
      a.inputs_.size() != b.inputs_.size() || a.nodes_.size() != b.nodes_.size() ||
      a.outputs_.size() != b.outputs_.size()) {
    return false;
  }
  for (size_t i = 0; i < a.inputs_.size(); ++i) {
    if (!same_value(a, a.inputs_[i], b, b.inputs_[i])) return false;
  }
  for (size_t i = 0; i < a.nodes_.size(); ++i) {
    const Node& na = a.nodes_[i];
    const Node& nb = b.nodes_[i];
    if (na.op != nb.op || na.args.size() != nb.args.size() || na.result_index != nb.result_index) {
      return false;
    }
    if (!same_value(a, na.output, b, nb.output)) return false;
    for (size_t j = 0; j < na.args.size(); ++j) {
      if (!same_arg(a, na.args[j], b, nb.args[j])) return false;
    }
  }
  for (size_t i = 0; i < a.outputs_.size(); ++i) {
    if (a.value(a.outputs_[i]).name != b.value(b.outputs_[i]).name) return false;
  }
  return true;
}

void Graph::set_location(ValueRef value, std::string location) {
  const int producer = values_.at(static_cast<size_t>(value.index)).producer;
  if (producer < 0) throw GraphError("set_location: '" + this->value(value).name + "' is an input");
  nodes_[static_cast<size_t>(producer)].location = std::move(location);
}

std::vector<InputWrite> input_writes(const Graph& graph) {
  std::vector<InputWrite> writes;
  for (const Node& node : graph.nodes()) {
    if (node.op != "copy_") continue;
    const ValueRef self = std::get<ValueRef>(node.args[0]);
    const auto& inputs = graph.inputs();
    const auto at = std::find(inputs.begin(), inputs.end(), self);
    writes.push_back({static_cast<size_t>(at - inputs.begin()), node.output});
  }
  return writes;
}

std::string describe_node(const Graph& graph, const Node& node) {
  std::string out = node.op + " '" + graph.value(node.output).name + "'";
  if (!node.location.empty()) out += " at " + node.location;
  return out;
}

void rethrow_with_context(const std::string& context) {
  try {
    throw;
  } catch (const IndexError& e) {  // keeps PyTorch's exception class
    throw IndexError(context + ": " + e.what());
  } catch (const index::SymbolicSizesRefused& e) {  // the driver compiles per size then
    throw index::SymbolicSizesRefused(context + ": " + e.what());
  } catch (const std::out_of_range& e) {
    throw std::out_of_range(context + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(context + ": " + e.what());
  } catch (const std::logic_error& e) {
    throw std::logic_error(context + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(context + ": " + e.what());
  } catch (const std::exception& e) {
    throw std::runtime_error(context + ": " + e.what());
  }
}

}  // namespace stax::ir
