// Parser of the Stax text format: one `def NAME(inputs):` header, indented `name = op(args)`
// statements and a final `return a, b`. Builds the Graph through Graph::add_input/add_node,
// turning their GraphErrors into ParseErrors located at the offending input or statement.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ir/graph.h"
#include "ir/lexer.h"
#include "ir/op_schema.h"
#include "ir/symbolic_shapes.h"
#include "ir/text_format.h"

namespace stax::ir {

namespace {

using detail::Token;
using detail::TokKind;

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string filename)
      : toks_(std::move(tokens)), file_(std::move(filename)) {}

  Graph parse() {
    const Token& def = peek();
    if (!is_keyword(def, "def")) fail(def, "'def'");
    if (def.col != 1) fail(def, "'def' at the start of the line", "indented 'def'");
    next();
    const Token& name = next();
    if (name.kind != TokKind::Ident || !is_valid_value_name(name.text)) fail(name, "a graph name");
    Graph graph(name.text);
    expect(TokKind::LParen, "'('");
    std::vector<InputSpec> inputs;
    while (peek().kind != TokKind::RParen) {
      inputs.push_back(parse_input());
      if (peek().kind != TokKind::Comma) break;
      next();
    }
    expect(TokKind::RParen, "',' or ')'");
    // The facts of the size symbols come after the inputs that use them, and hold for them.
    if (is_keyword(peek(), "where")) {
      next();
      do {
        if (peek().kind == TokKind::Comma) next();
        parse_size_fact(graph);
      } while (peek().kind == TokKind::Comma);
    }
    for (InputSpec& input : inputs) add_input(graph, input);
    expect(TokKind::Colon,
           is_keyword(peek(), "where") || inputs.empty() ? "':'" : "':' or 'where'");
    expect(TokKind::Newline, "end of line");
    parse_body(graph);
    const Token& end = peek();
    if (end.kind != TokKind::End) {
      fail(end, is_keyword(end, "def") ? "end of file (one def per file)"
                                       : "end of file after 'return'");
    }
    return graph;
  }

 private:
  const Token& peek() const { return toks_[pos_]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  static bool is_keyword(const Token& t, const char* word) {
    return t.kind == TokKind::Ident && t.text == word;
  }

  [[noreturn]] void fail(const Token& t, const std::string& expected) const {
    detail::throw_parse_error(file_, t.line, t.col, expected, detail::describe(t));
  }
  [[noreturn]] void fail(const Token& t, const std::string& expected,
                         const std::string& found) const {
    detail::throw_parse_error(file_, t.line, t.col, expected, found);
  }
  [[noreturn]] void fail_graph(const Token& at, const GraphError& e) const {
    throw ParseError(file_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.col) + ": " +
                     e.what());
  }

  const Token& expect(TokKind kind, const std::string& expected) {
    if (peek().kind != kind) fail(peek(), expected);
    return next();
  }

  // A name for a new value: not reserved, not defined before.
  const Token& new_value_name(const std::string& what) {
    const Token& t = next();
    if (t.kind != TokKind::Ident || !is_valid_value_name(t.text)) fail(t, what);
    if (auto it = defined_at_.find(t.text); it != defined_at_.end()) {
      fail(t, "a new value name",
           "'" + t.text + "' (already defined at line " + std::to_string(it->second) + ")");
    }
    defined_at_[t.text] = t.line;
    return t;
  }

  std::vector<int64_t> parse_int_list() {
    expect(TokKind::LBracket, "'['");
    std::vector<int64_t> values;
    while (peek().kind != TokKind::RBracket) {
      const Token& t = next();
      if (t.kind != TokKind::Int) fail(t, "an integer");
      values.push_back(t.int_value);
      if (peek().kind != TokKind::Comma) break;
      next();
    }
    expect(TokKind::RBracket, "',' or ']'");
    return values;
  }

  std::vector<int64_t> parse_bool_list() {
    expect(TokKind::LBracket, "'['");
    std::vector<int64_t> values;
    while (peek().kind != TokKind::RBracket) {
      const Token& t = next();
      if (t.kind != TokKind::Ident || (t.text != "True" && t.text != "False")) {
        fail(t, "True or False");
      }
      values.push_back(t.text == "True" ? 1 : 0);
      if (peek().kind != TokKind::Comma) break;
      next();
    }
    expect(TokKind::RBracket, "',' or ']'");
    return values;
  }

  // An argument list: integers ([0, -1]), bools ([True, False], read as 1 and 0) or tensors
  // with optional None entries ([a, None, b]).
  Arg parse_list(const Graph& graph) {
    const Token& after = toks_[pos_ + 1];
    if (after.kind != TokKind::Ident || is_symbol(graph, after)) return parse_size_args(graph);
    if (after.text == "True" || after.text == "False") return parse_bool_list();
    next();  // '['
    TensorList list;
    while (peek().kind != TokKind::RBracket) {
      const Token& t = next();
      if (t.kind == TokKind::Ident && t.text == "None") {
        list.items.emplace_back(std::nullopt);
      } else if (t.kind == TokKind::Ident) {
        list.items.emplace_back(lookup(graph, t));
      } else {
        fail(t, "a value name or None");
      }
      if (peek().kind != TokKind::Comma) break;
      next();
    }
    expect(TokKind::RBracket, "',' or ']'");
    return list;
  }

  // x: f32[64, 128] strides=[1, 64]; x: f32[s0, 128]; x: f32[128, s0] strides=[1, 128]
  struct InputSpec {
    const Token* name = nullptr;
    DType dtype = DType::Float32;
    std::vector<index::Expr> sizes;
    std::optional<std::vector<index::Expr>> strides;
  };
  InputSpec parse_input() {
    InputSpec input;
    input.name = &new_value_name("an input name");
    expect(TokKind::Colon, "':'");
    const Token& dtype_tok = next();
    std::optional<DType> dtype;
    if (dtype_tok.kind == TokKind::Ident) dtype = parse_dtype(dtype_tok.text);
    if (!dtype) fail(dtype_tok, "a dtype such as f32, bf16, i64 or bool");
    input.dtype = *dtype;
    input.sizes = parse_size_list(/*products=*/true);
    if (peek().kind == TokKind::Ident && peek().text == "strides") {
      next();
      expect(TokKind::Equals, "'='");
      input.strides = parse_size_list(/*products=*/true);
    }
    return input;
  }

  void add_input(Graph& graph, InputSpec& input) {
    try {
      graph.add_symbolic_input(input.name->text, input.dtype, std::move(input.sizes),
                               std::move(input.strides));
    } catch (const GraphError& e) {
      fail_graph(*input.name, e);
    }
  }

  // A size is an integer or a size symbol (s0); a stride may also be a product of them (128*s0).
  std::vector<index::Expr> parse_size_list(bool products) {
    expect(TokKind::LBracket, "'['");
    std::vector<index::Expr> values;
    while (peek().kind != TokKind::RBracket) {
      index::Expr value = parse_size_factor();
      while (products && peek().kind == TokKind::Star) {
        next();
        value = value * parse_size_factor();
      }
      values.push_back(value);
      if (peek().kind != TokKind::Comma) break;
      next();
    }
    expect(TokKind::RBracket, products ? "'*', ',' or ']'" : "',' or ']'");
    return values;
  }

  index::Expr parse_size_factor() {
    const Token& t = next();
    if (t.kind == TokKind::Int) return index::Expr(t.int_value);
    if (t.kind == TokKind::Ident && is_size_symbol_name(t.text)) return index::Expr::var(t.text);
    fail(t, "an integer or a size symbol (s0, s1, ...)");
  }

  // A size symbol of the graph, where a value of that name is not defined (the graph refuses
  // values named as its symbols).
  static bool is_symbol(const Graph& graph, const Token& t) {
    return t.kind == TokKind::Ident && graph.size_symbols().count(t.text) != 0 &&
           !graph.find_value(t.text);
  }

  // A list of ints or size expressions ([s0, 12, 64], [-1, 12*s0]): an int list when every
  // entry is a constant.
  Arg parse_size_args(const Graph& graph) {
    expect(TokKind::LBracket, "'['");
    SymIntList list;
    bool constant = true;
    while (peek().kind != TokKind::RBracket) {
      list.items.push_back(parse_size_expr(graph));
      constant = constant && list.items.back().is_constant();
      if (peek().kind != TokKind::Comma) break;
      next();
    }
    expect(TokKind::RBracket, "',' or ']'");
    if (!constant) return list;
    std::vector<int64_t> values;
    for (const index::Expr& e : list.items) values.push_back(*e.constant_value());
    return values;
  }

  // sum := ['-'] product (('+' | '-') product)*; product := factor ('*' factor)*;
  // factor := an integer or a size symbol of the graph.
  index::Expr parse_size_expr(const Graph& graph) {
    index::Expr sum;
    bool negative = false;
    if (peek().kind == TokKind::Minus) {
      next();
      negative = true;
    }
    while (true) {
      index::Expr product = parse_arg_factor(graph);
      while (peek().kind == TokKind::Star) {
        next();
        product = product * parse_arg_factor(graph);
      }
      sum = negative ? sum - product : sum + product;
      if (peek().kind != TokKind::Plus && peek().kind != TokKind::Minus) return sum;
      negative = next().kind == TokKind::Minus;
    }
  }

  index::Expr parse_arg_factor(const Graph& graph) {
    const Token& t = next();
    if (t.kind == TokKind::Int) return index::Expr(t.int_value);
    if (is_symbol(graph, t)) return index::Expr::var(t.text);
    fail(t, "an integer or a size symbol of the graph");
  }

  // s0: [2, 4096] multiple_of=8 hint=64 (each of the last two may be left out)
  void parse_size_fact(Graph& graph) {
    const Token& symbol = next();
    if (symbol.kind != TokKind::Ident || !is_size_symbol_name(symbol.text)) {
      fail(symbol, "a size symbol (s0, s1, ...)");
    }
    expect(TokKind::Colon, "':'");
    const Token& open = peek();
    const std::vector<int64_t> range = parse_int_list();
    if (range.size() != 2) fail(open, "a range [lo, hi]");
    index::SizeSymbol facts = default_size_symbol();
    facts.lo = range[0];
    facts.hi = range[1];
    bool hint_given = false;
    while (is_keyword(peek(), "multiple_of") || is_keyword(peek(), "hint")) {
      const std::string key = next().text;
      expect(TokKind::Equals, "'='");
      const Token& value = expect(TokKind::Int, "an integer");
      if (key == "hint") {
        facts.hint = value.int_value;
        hint_given = true;
      } else {
        facts.multiple_of = value.int_value;
      }
    }
    if (!hint_given) facts.hint = default_hint(facts);
    try {
      graph.declare_size_symbol(symbol.text, facts);
    } catch (const GraphError& e) {
      fail_graph(symbol, e);
    }
  }

  void parse_body(Graph& graph) {
    int indent = 0;
    while (true) {
      const Token& first = peek();
      if (first.kind == TokKind::End) fail(first, "an indented statement or 'return'");
      if (first.col == 1) fail(first, "an indented statement or 'return'");
      if (indent == 0) indent = first.col;
      if (first.col != indent) {
        fail(first, "indentation of " + std::to_string(indent - 1) + " columns",
             "indentation of " + std::to_string(first.col - 1) + " columns");
      }
      if (is_keyword(first, "return")) {
        parse_return(graph);
        return;
      }
      parse_statement(graph);
    }
  }

  void parse_return(Graph& graph) {
    const Token& keyword = next();
    std::vector<ValueRef> outputs;
    // A bare `return`: a graph that only writes inputs in place (copy_) returns nothing.
    if (peek().kind != TokKind::Newline) {
      do {
        if (!outputs.empty()) next();  // the comma
        outputs.push_back(lookup(graph, next()));
      } while (peek().kind == TokKind::Comma);
    }
    expect(TokKind::Newline, "',' or end of line");
    try {
      graph.set_outputs(std::move(outputs));
    } catch (const GraphError& e) {
      fail_graph(keyword, e);
    }
  }

  ValueRef lookup(const Graph& graph, const Token& t) const {
    if (t.kind != TokKind::Ident || !is_valid_value_name(t.text)) fail(t, "a value name");
    std::optional<ValueRef> ref = graph.find_value(t.text);
    if (!ref) fail(t, "a value name defined before this line");
    return *ref;
  }

  Arg parse_value(const Graph& graph) {
    const Token& t = peek();
    switch (t.kind) {
      case TokKind::Int:
      case TokKind::Minus: {
        index::Expr e = parse_size_expr(graph);
        if (e.is_constant()) return *e.constant_value();
        return SymInt{e, 0};
      }
      case TokKind::Float:
        next();
        return Scalar(t.float_value);
      case TokKind::String:
        next();
        return t.string_value;
      case TokKind::LBracket:
        return parse_list(graph);
      case TokKind::Ident:
        next();
        if (t.text == "True") return true;
        if (t.text == "False") return false;
        if (t.text == "None") return None{};
        if (is_symbol(graph, t)) {
          --pos_;
          return SymInt{parse_size_expr(graph), 0};
        }
        return lookup(graph, t);
      default:
        fail(t, "an argument value");
    }
  }

  // name = op(arg, ..., key=value, ...), or a, b = op(...) for a multi-result op
  void parse_statement(Graph& graph) {
    const Token& target = new_value_name("a value name or 'return'");
    std::vector<std::string> targets = {target.text};
    while (peek().kind == TokKind::Comma) {
      next();
      targets.push_back(new_value_name("a value name").text);
    }
    expect(TokKind::Equals, "'='");
    const Token& op = next();
    if (op.kind != TokKind::Ident) fail(op, "an op name");
    if (!find_op_schema(op.text) && !in_place_twin_schema(op.text)) fail(op, "a known op name");
    expect(TokKind::LParen, "'('");
    std::vector<Arg> args;
    std::vector<std::pair<std::string, Arg>> kwargs;
    while (peek().kind != TokKind::RParen) {
      // `nan` lexes as a literal but is also an ATen parameter name (nan_to_num's).
      const bool is_keyword_arg = (peek().kind == TokKind::Ident || peek().text == "nan") &&
                                  toks_[pos_ + 1].kind == TokKind::Equals;
      if (is_keyword_arg) {
        std::string key = next().text;
        next();  // '='
        kwargs.emplace_back(std::move(key), parse_value(graph));
      } else {
        if (!kwargs.empty()) fail(peek(), "a keyword argument (positional arguments come first)");
        args.push_back(parse_value(graph));
      }
      if (peek().kind != TokKind::Comma) break;
      next();
    }
    expect(TokKind::RParen, "',' or ')'");
    expect(TokKind::Newline, "end of line");
    try {
      std::vector<ValueRef> results;
      const OpSchema* schema = find_op_schema(op.text);
      if (schema != nullptr && schema->result_count) {
        results = graph.add_multi_result_node(op.text, std::move(args), std::move(kwargs), targets);
      } else if (targets.size() == 1) {
        results = {graph.add_node(op.text, std::move(args), std::move(kwargs), target.text)};
      } else {
        throw GraphError(op.text + ": has one result but " + std::to_string(targets.size()) +
                         " names were given");
      }
      for (ValueRef v : results) graph.set_location(v, file_ + ":" + std::to_string(target.line));
    } catch (const GraphError& e) {
      fail_graph(target, e);
    }
  }

  std::vector<Token> toks_;
  std::string file_;
  size_t pos_ = 0;
  std::map<std::string, int> defined_at_;  // value name -> line of its definition
};

}  // namespace

Graph parse_graph(const std::string& text, const std::string& filename) {
  return Parser(detail::lex(text, filename), filename).parse();
}

Graph parse_graph_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ParseError(path + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError(path + ": cannot open file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw ParseError(path + ": error while reading file");
  return parse_graph(buffer.str(), path);
}

}  // namespace stax::ir
