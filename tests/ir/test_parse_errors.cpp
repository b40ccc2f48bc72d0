// Tests of text-format diagnostics: every class of error (lexing, syntax, unknown value,
// redefinition, unknown op, type errors from add_node, file errors) reports the right
// FILE:LINE:COLUMN and message.
#include <gtest/gtest.h>

#include "test_util.h"

namespace stax::ir {
namespace {

using testing::parse_error;

const std::string kHeader = "def f(x: f32[2, 3], y: f32[3]):\n";

TEST(ParseErrorTest, Lexing) {
  EXPECT_EQ(parse_error(kHeader + "    p = mul(x, $)\n    return p\n"),
            "t.stax:2:16: expected a name, number, string or one of ( ) [ ] , : =, found '$'");
  EXPECT_EQ(parse_error(kHeader + "    p = clone(x, memory_format='abc)\n    return p\n"),
            "t.stax:2:37: expected a closing ' for the string, found end of line");
  EXPECT_EQ(parse_error(kHeader + "    p = clone(x, memory_format=\"a\\qb\")\n    return p\n"),
            "t.stax:2:34: expected an escape sequence (\\\\, \\', \\\", \\n, \\t), found '\\q'");
  EXPECT_EQ(parse_error(kHeader + "    p = add(x, 3x)\n    return p\n"),
            "t.stax:2:16: expected a number, found '3x'");
  EXPECT_EQ(parse_error(kHeader + "    p = add(x, 1e+)\n    return p\n"),
            "t.stax:2:16: expected digits after the exponent of a number, found '1e'");
  EXPECT_EQ(parse_error(kHeader + "    p = add(x, - 1)\n    return p\n"),
            "t.stax:2:17: expected a number after '-', found ' '");
  EXPECT_EQ(parse_error(kHeader + "    p = add(x, 99999999999999999999)\n    return p\n"),
            "t.stax:2:16: expected an integer literal within the range of i64, found "
            "'99999999999999999999'");
  EXPECT_EQ(parse_error(kHeader + "    p = add(x, 1e999)\n    return p\n"),
            "t.stax:2:16: expected a float literal within the range of f64, found '1e999'");
}

TEST(ParseErrorTest, Syntax) {
  EXPECT_EQ(parse_error(""), "t.stax:1:1: expected 'def', found end of file");
  EXPECT_EQ(parse_error("# only a comment\n"), "t.stax:2:1: expected 'def', found end of file");
  EXPECT_EQ(parse_error("x = 1\n"), "t.stax:1:1: expected 'def', found 'x'");
  EXPECT_EQ(parse_error("  def f(x: f32[1]):\n    return x\n"),
            "t.stax:1:3: expected 'def' at the start of the line, found indented 'def'");
  EXPECT_EQ(parse_error("def return(x: f32[1]):\n    return x\n"),
            "t.stax:1:5: expected a graph name, found 'return'");
  EXPECT_EQ(parse_error("def f(x f32[1]):\n    return x\n"),
            "t.stax:1:9: expected ':', found 'f32'");
  EXPECT_EQ(parse_error("def f(x: f33[1]):\n    return x\n"),
            "t.stax:1:10: expected a dtype such as f32, bf16, i64 or bool, found 'f33'");
  // A bool list (convolution_backward's output_mask) holds True and False only.
  EXPECT_EQ(parse_error(kHeader + "    p = permute(x, [True, 2])\n    return p\n"),
            "t.stax:2:27: expected True or False, found '2'");
  EXPECT_EQ(parse_error("def f(x: f32[1.5]):\n    return x\n"),
            "t.stax:1:14: expected an integer or a size symbol (s0, s1, ...), found '1.5'");
  EXPECT_EQ(parse_error("def f(x: f32[1] stride=[1]):\n    return x\n"),
            "t.stax:1:17: expected ',' or ')', found 'stride'");
  EXPECT_EQ(parse_error("def f(x: f32[1])\n    return x\n"),
            "t.stax:1:17: expected ':' or 'where', found end of line");
  EXPECT_EQ(parse_error("def f(x: f32[1]):\nreturn x\n"),
            "t.stax:2:1: expected an indented statement or 'return', found 'return'");
  EXPECT_EQ(parse_error(kHeader + "    p = exp(x)\n"),
            "t.stax:3:1: expected an indented statement or 'return', found end of file");
  EXPECT_EQ(parse_error(kHeader + "    p = exp(x)\n  return p\n"),
            "t.stax:3:3: expected indentation of 4 columns, found indentation of 2 columns");
  EXPECT_EQ(parse_error(kHeader + "    p = mul(x, y\n    return p\n"),
            "t.stax:3:5: expected ',' or ')', found 'return'");
  EXPECT_EQ(parse_error(kHeader + "    p = mul(x, y) y\n    return p\n"),
            "t.stax:2:19: expected end of line, found 'y'");
  EXPECT_EQ(parse_error(kHeader + "    p mul(x, y)\n    return p\n"),
            "t.stax:2:7: expected '=', found 'mul'");
  EXPECT_EQ(parse_error(kHeader + "    p = sum(x, dim=[-1], True)\n    return p\n"),
            "t.stax:2:26: expected a keyword argument (positional arguments come first), found "
            "'True'");
  EXPECT_EQ(parse_error(kHeader + "    p = add(x, :)\n    return p\n"),
            "t.stax:2:16: expected an argument value, found ':'");
  // A bare `return` is for graphs that write inputs in place (copy_).
  EXPECT_EQ(parse_error(kHeader + "    return\n"),
            "t.stax:2:5: graph 'f': needs at least one output");
  EXPECT_EQ(parse_error(kHeader + "    return x y\n"),
            "t.stax:2:14: expected ',' or end of line, found 'y'");
  EXPECT_EQ(parse_error(kHeader + "    return x\n    p = exp(x)\n"),
            "t.stax:3:5: expected end of file after 'return', found 'p'");
  EXPECT_EQ(parse_error(kHeader + "    return x\ndef g(x: f32[1]):\n    return x\n"),
            "t.stax:3:1: expected end of file (one def per file), found 'def'");
}

TEST(ParseErrorTest, NamesAndOps) {
  EXPECT_EQ(parse_error(kHeader + "    p = mul(x, q)\n    return p\n"),
            "t.stax:2:16: expected a value name defined before this line, found 'q'");
  EXPECT_EQ(parse_error(kHeader + "    p = exp(x)\n    return q\n"),
            "t.stax:3:12: expected a value name defined before this line, found 'q'");
  EXPECT_EQ(parse_error(kHeader + "    p = exp(p)\n    return p\n"),
            "t.stax:2:13: expected a value name defined before this line, found 'p'");
  EXPECT_EQ(parse_error(kHeader + "    x = exp(x)\n    return x\n"),
            "t.stax:2:5: expected a new value name, found 'x' (already defined at line 1)");
  EXPECT_EQ(parse_error(kHeader + "    p = exp(x)\n    p = exp(p)\n    return p\n"),
            "t.stax:3:5: expected a new value name, found 'p' (already defined at line 2)");
  EXPECT_EQ(parse_error("def f(x: f32[1], x: f32[2]):\n    return x\n"),
            "t.stax:1:18: expected a new value name, found 'x' (already defined at line 1)");
  EXPECT_EQ(parse_error(kHeader + "    None = exp(x)\n    return x\n"),
            "t.stax:2:5: expected a value name or 'return', found 'None'");
  EXPECT_EQ(parse_error(kHeader + "    p = softmax(x)\n    return p\n"),
            "t.stax:2:9: expected a known op name, found 'softmax'");
  EXPECT_EQ(parse_error(kHeader + "    p = 3(x)\n    return p\n"),
            "t.stax:2:9: expected an op name, found '3'");
}

TEST(ParseErrorTest, GraphErrorsAreLocatedAtTheStatement) {
  EXPECT_EQ(parse_error(kHeader + "    s = sum(x, dim=[2])\n    return s\n"),
            "t.stax:2:5: sum: argument 'dim': dim 2 is out of range for a tensor of rank 2 "
            "(expected in [-2, 1])");
  EXPECT_EQ(parse_error(kHeader + "    p = exp(x)\n      d = div(p, x, rounding_mode='floor')\n"),
            "t.stax:3:7: expected indentation of 4 columns, found indentation of 6 columns");
  EXPECT_EQ(parse_error(kHeader + "    p = exp(x)\n    d = div(p, x, rounding_mode='round')\n"
                                  "    return d\n"),
            "t.stax:3:5: div: argument 'rounding_mode': expected None, 'trunc' or 'floor', got "
            "'round'");
  EXPECT_EQ(parse_error("def f(x: f32[2, 3], y: f32[4]):\n  p = mul(x, y)\n  return p\n"),
            "t.stax:2:3: mul: shapes [2, 3] and [4] are not broadcastable (size 3 vs 4 at dim 1 "
            "of the result)");
  EXPECT_EQ(parse_error(kHeader + "    s = sum(x, axis=1)\n    return s\n"),
            "t.stax:2:5: sum: unexpected keyword argument 'axis'");
  EXPECT_EQ(parse_error(kHeader + "    s = sum(x, 1, dim=1)\n    return s\n"),
            "t.stax:2:5: sum: got multiple values for argument 'dim'");
  EXPECT_EQ(parse_error(kHeader + "    s = transpose(x, 0)\n    return s\n"),
            "t.stax:2:5: transpose: missing required argument 'dim1'");
  EXPECT_EQ(parse_error(kHeader + "    s = transpose(x, 0, 1.0)\n    return s\n"),
            "t.stax:2:5: transpose: argument 'dim1' expects an int, got a float scalar");
  EXPECT_EQ(parse_error(kHeader + "    s = reshape(x, [4, 2])\n    return s\n"),
            "t.stax:2:5: reshape: argument 'shape': shape [4, 2] is invalid for an input of 6 "
            "elements (sizes [2, 3])");
  EXPECT_EQ(parse_error("def f(x: f32[2, 3] strides=[1]):\n    return x\n"),
            "t.stax:1:7: input 'x': strides [1] must have 2 entries, one per dim of sizes [2, 3]");
  EXPECT_EQ(parse_error("def f(x: f32[-1]):\n    return x\n"),
            "t.stax:1:7: input 'x': sizes [-1] must not be negative");
}

TEST(ParseErrorTest, FileErrorsNameThePath) {
  const std::string missing = "/nonexistent/dir/missing.stax";
  try {
    parse_graph_file(missing);
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot open file for reading");
  }
  try {
    parse_graph_file(STAX_EXAMPLES_DIR);
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()),
              std::string(STAX_EXAMPLES_DIR) + ": is a directory, not a file");
  }
  // Errors inside a file carry its path.
  const std::string path = ::testing::TempDir() + "/stax_bad.stax";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("def f(x: f32[1]):\n    y = exp(z)\n    return y\n", f);
    std::fclose(f);
  }
  try {
    parse_graph_file(path);
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ":2:13: expected a value name defined before this line, found 'z'");
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace stax::ir
