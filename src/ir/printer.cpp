// Printer of the Stax text format: canonical text for a Graph (inputs with strides only when
// not contiguous, required arguments positional, optional ones as key=value only when they
// differ from the schema default), so that parse_graph(print_graph(g)) == g.
#include <charconv>
#include <cmath>
#include <sstream>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "ir/symbolic_shapes.h"
#include "ir/text_format.h"

namespace stax::ir {

std::string format_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, value);  // shortest exact round trip
  std::string text(buf, result.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string format_sizes(const std::vector<int64_t>& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(sizes[i]);
  }
  return text + "]";
}

std::string format_type(const TensorType& type) {
  if (type.is_symbolic()) {
    std::string text =
        std::string(dtype_name(type.dtype)) + index::format_exprs(type.symbolic_sizes);
    if (type.symbolic_strides != contiguous_strides(type.symbolic_sizes)) {
      text += " strides=" + index::format_exprs(type.symbolic_strides);
    }
    return text;
  }
  std::string text = std::string(dtype_name(type.dtype)) + format_sizes(type.sizes);
  if (type.strides != contiguous_strides(type.sizes))
    text += " strides=" + format_sizes(type.strides);
  return text;
}

namespace {

std::string quote(const std::string& s) {
  std::string text = "'";
  for (char c : s) {
    switch (c) {
      case '\\':
        text += "\\\\";
        break;
      case '\'':
        text += "\\'";
        break;
      case '\n':
        text += "\\n";
        break;
      case '\t':
        text += "\\t";
        break;
      default:
        text += c;
    }
  }
  return text + "'";
}

}  // namespace

std::string format_arg(const Graph& graph, const Arg& arg) {
  struct Visitor {
    const Graph& graph;
    std::string operator()(const None&) const { return "None"; }
    std::string operator()(const ValueRef& ref) const { return graph.value(ref).name; }
    std::string operator()(const Scalar& s) const { return format_scalar(s); }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(const std::vector<int64_t>& l) const { return format_sizes(l); }
    std::string operator()(const std::string& s) const { return quote(s); }
    std::string operator()(const SymInt& s) const { return index::to_string(s.expr); }
    std::string operator()(const SymIntList& l) const { return index::format_exprs(l.items); }
    std::string operator()(const TensorList& l) const {
      std::string text = "[";
      for (size_t k = 0; k < l.items.size(); ++k) {
        text += (k ? ", " : "") + (l.items[k] ? graph.value(*l.items[k]).name : "None");
      }
      return text + "]";
    }
  };
  return std::visit(Visitor{graph}, arg);
}

namespace {

// [True, False] for a BoolList argument (held as [1, 0]).
std::string format_bool_list(const Arg& arg) {
  const auto& values = std::get<std::vector<int64_t>>(arg);
  std::string text = "[";
  for (size_t k = 0; k < values.size(); ++k) {
    text += std::string(k ? ", " : "") + (values[k] != 0 ? "True" : "False");
  }
  return text + "]";
}

}  // namespace

std::string print_graph(const Graph& graph) {
  std::ostringstream out;
  out << "def " << graph.name() << "(";
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value& v = graph.value(graph.inputs()[i]);
    out << (i > 0 ? ", " : "") << v.name << ": " << format_type(v.type);
  }
  out << ")";
  // The facts of the size symbols that differ from what an undeclared symbol gets.
  const char* separator = " where ";
  for (const auto& [name, facts] : graph.size_symbols()) {
    if (facts == default_size_symbol()) continue;
    out << separator << name << ": [" << facts.lo << ", " << facts.hi << "]";
    if (facts.multiple_of != 1) out << " multiple_of=" << facts.multiple_of;
    if (facts.hint != default_hint(facts)) out << " hint=" << facts.hint;
    separator = ", ";
  }
  out << ":\n";
  const std::vector<Node>& nodes = graph.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    const OpSchema* schema = find_op_schema(node.op);
    if (!schema) throw GraphError("print_graph: unknown op '" + node.op + "'");
    out << "    " << graph.value(node.output).name;
    // The results of a multi-result op are consecutive nodes with result_index 0, 1, ...
    while (schema->result_count && n + 1 < nodes.size() && nodes[n + 1].op == node.op &&
           nodes[n + 1].result_index == nodes[n].result_index + 1) {
      out << ", " << graph.value(nodes[++n].output).name;
    }
    out << " = " << node.op << "(";
    bool positional = true;  // still printing a positional prefix
    bool first = true;
    for (size_t p = 0; p < schema->params.size() && p < node.args.size(); ++p) {
      const Param& param = schema->params[p];
      const Arg& arg = node.args[p];
      auto format_arg = [&](const Graph& g, const Arg& a) {
        return param.kind == ParamKind::BoolList ? format_bool_list(a) : ir::format_arg(g, a);
      };
      const bool required = !param.default_value.has_value();
      if (positional && required && !param.keyword_only) {
        out << (first ? "" : ", ") << format_arg(graph, arg);
        first = false;
        continue;
      }
      positional = false;
      if (required || !(arg == *param.default_value)) {
        out << (first ? "" : ", ") << param.name << "=" << format_arg(graph, arg);
        first = false;
      }
    }
    out << ")\n";
  }
  out << "    return";
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    out << (i > 0 ? ", " : " ") << graph.value(graph.outputs()[i]).name;
  }
  out << "\n";
  return out.str();
}

}  // namespace stax::ir
