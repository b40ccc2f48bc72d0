// Internal to the text format: tokens of a .stax file and the lexer that produces them, plus
// the "FILE:LINE:COLUMN: expected X, found Y" error helper shared with the parser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stax::ir::detail {

enum class TokKind : uint8_t {
  Ident,   // names and keywords (def, return, True, False, None)
  Int,     // 3, -1
  Float,   // 2.0, 1e-3, -inf, inf, nan
  String,  // "abc" or 'abc'
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Colon,
  Equals,
  Star,  // size expressions: products (strides=[1, 2*s0]) and sums (s0 + 1, s0 - 1)
  Plus,
  Minus,
  Newline,  // end of a logical line (newlines inside brackets are skipped)
  End,
};

struct Token {
  TokKind kind = TokKind::End;
  std::string text;  // source spelling
  int line = 1;
  int col = 1;
  bool line_start = false;  // first token of a logical line
  int64_t int_value = 0;
  double float_value = 0.0;
  std::string string_value;  // unescaped contents of a String
};

// Splits `source` into tokens; blank and comment-only lines produce none. Throws ParseError.
std::vector<Token> lex(const std::string& source, const std::string& filename);

// How a token is named in "found ..." parts of errors: 'x', '(' , end of line, end of file.
std::string describe(const Token& token);

[[noreturn]] void throw_parse_error(const std::string& filename, int line, int col,
                                    const std::string& expected, const std::string& found);

}  // namespace stax::ir::detail
