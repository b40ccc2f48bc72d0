// Helpers shared by the graph IR tests: one-statement programs and error-message capture.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ir/graph.h"

namespace stax::ir::testing {

// Parses "def t(INPUTS):\n    r = EXPR\n    return r" and returns the graph.
inline Graph one_statement(const std::string& inputs, const std::string& expr) {
  return parse_graph("def t(" + inputs + "):\n    r = " + expr + "\n    return r\n", "t.stax");
}

// The type of r in one_statement(inputs, expr).
inline TensorType infer(const std::string& inputs, const std::string& expr) {
  Graph g = one_statement(inputs, expr);
  return g.value(g.outputs().at(0)).type;
}

// The GraphError message of the statement r = EXPR (without the "t.stax:2:5: " prefix the
// parser adds), or "<no error>".
inline std::string infer_error(const std::string& inputs, const std::string& expr) {
  try {
    one_statement(inputs, expr);
  } catch (const ParseError& e) {
    const std::string message = e.what();
    const std::string prefix = "t.stax:2:5: ";
    if (message.rfind(prefix, 0) == 0) return message.substr(prefix.size());
    return "<unexpected location> " + message;
  }
  return "<no error>";
}

// The message of the ParseError thrown by parse_graph(text, "t.stax"), or "<no error>".
inline std::string parse_error(const std::string& text) {
  try {
    parse_graph(text, "t.stax");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "<no error>";
}

inline TensorType type(DType dtype, std::vector<int64_t> sizes) {
  TensorType t;
  t.dtype = dtype;
  t.strides = contiguous_strides(sizes);
  t.sizes = std::move(sizes);
  return t;
}

}  // namespace stax::ir::testing
