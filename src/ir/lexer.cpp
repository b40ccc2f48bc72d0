// Lexer of the Stax text format: identifiers, int/float/string literals, punctuation and
// logical line ends, with line:column positions. `#` comments run to the end of the line;
// newlines inside () or [] do not end a line.
#include "ir/lexer.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "ir/text_format.h"

namespace stax::ir {

bool is_valid_value_name(std::string_view name) {
  if (name.empty()) return false;
  auto is_start = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!is_start(name[0])) return false;
  for (char c : name) {
    if (!is_start(c) && !(c >= '0' && c <= '9')) return false;
  }
  for (std::string_view reserved : {"def", "return", "True", "False", "None", "inf", "nan"}) {
    if (name == reserved) return false;
  }
  return true;
}

namespace detail {

void throw_parse_error(const std::string& filename, int line, int col, const std::string& expected,
                       const std::string& found) {
  throw ParseError(filename + ":" + std::to_string(line) + ":" + std::to_string(col) +
                   ": expected " + expected + ", found " + found);
}

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokKind::Newline:
      return "end of line";
    case TokKind::End:
      return "end of file";
    case TokKind::String:
      return "string " + token.text;
    default:
      return "'" + token.text + "'";
  }
}

namespace {

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}

class Lexer {
 public:
  Lexer(const std::string& source, const std::string& filename) : src_(source), file_(filename) {}

  std::vector<Token> run() {
    bool line_has_tokens = false;
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == '\n') {
        if (depth_ == 0 && line_has_tokens) {
          push_simple(TokKind::Newline, "\\n", 1);
          line_has_tokens = false;
        } else {
          advance(1);
        }
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
        advance(1);
        continue;
      }
      if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') advance(1);
        continue;
      }
      const bool starts_line = depth_ == 0 && !line_has_tokens;
      const size_t before = tokens_.size();
      lex_token();
      tokens_[before].line_start = starts_line;
      line_has_tokens = true;
    }
    if (line_has_tokens) push_at(TokKind::Newline, "", line_, col_);
    push_at(TokKind::End, "", line_, col_);
    return std::move(tokens_);
  }

 private:
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }

  void advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < src_.size(); ++i, ++pos_) {
      if (src_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }

  Token& push_at(TokKind kind, std::string text, int line, int col) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.line = line;
    t.col = col;
    tokens_.push_back(std::move(t));
    return tokens_.back();
  }

  void push_simple(TokKind kind, std::string text, size_t length) {
    push_at(kind, std::move(text), line_, col_);
    advance(length);
  }

  std::string rest_of_word(size_t from) const {
    size_t end = from;
    while (end < src_.size() && (is_ident_char(src_[end]) || src_[end] == '.')) ++end;
    return src_.substr(from, end - from);
  }

  void lex_token() {
    const char c = peek();
    switch (c) {
      case '(':
        ++depth_;
        return push_simple(TokKind::LParen, "(", 1);
      case '[':
        ++depth_;
        return push_simple(TokKind::LBracket, "[", 1);
      case ')':
        if (depth_ > 0) --depth_;
        return push_simple(TokKind::RParen, ")", 1);
      case ']':
        if (depth_ > 0) --depth_;
        return push_simple(TokKind::RBracket, "]", 1);
      case ',':
        return push_simple(TokKind::Comma, ",", 1);
      case ':':
        return push_simple(TokKind::Colon, ":", 1);
      case '=':
        return push_simple(TokKind::Equals, "=", 1);
      case '*':
        return push_simple(TokKind::Star, "*", 1);
      case '"':
      case '\'':
        return lex_string();
      default:
        break;
    }
    if (is_ident_start(c)) {
      size_t end = pos_;
      while (end < src_.size() && is_ident_char(src_[end])) ++end;
      std::string word = src_.substr(pos_, end - pos_);
      if (word == "inf" || word == "nan") return lex_number();
      return push_simple(TokKind::Ident, word, word.size());
    }
    // '-' starts a number (-1, -2.5, -inf) except in size expressions: after a name or an
    // integer (s0 - 1) or before a name other than inf and nan (-s0 + 3).
    const bool after_operand = !tokens_.empty() && (tokens_.back().kind == TokKind::Ident ||
                                                    tokens_.back().kind == TokKind::Int);
    if (c == '-' &&
        (after_operand || (is_ident_start(peek(1)) && src_.compare(pos_ + 1, 3, "inf") != 0 &&
                           src_.compare(pos_ + 1, 3, "nan") != 0))) {
      return push_simple(TokKind::Minus, "-", 1);
    }
    if (c == '+') return push_simple(TokKind::Plus, "+", 1);
    if (is_digit(c) || c == '-' || (c == '.' && is_digit(peek(1)))) return lex_number();
    std::string found(1, c);
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      found = "byte 0x" + std::string(1, "0123456789abcdef"[(c >> 4) & 0xf]) +
              std::string(1, "0123456789abcdef"[c & 0xf]);
    } else {
      found = "'" + found + "'";
    }
    throw_parse_error(file_, line_, col_, "a name, number, string or one of ( ) [ ] , : =", found);
  }

  void lex_number() {
    const int line = line_;
    const int col = col_;
    size_t i = pos_;
    if (src_[i] == '-') ++i;
    // inf / nan (possibly negated).
    for (const char* word : {"inf", "nan"}) {
      const std::string w(word);
      if (src_.compare(i, w.size(), w) == 0 &&
          (i + w.size() >= src_.size() || !is_ident_char(src_[i + w.size()]))) {
        const bool negative = i != pos_;
        Token& t = push_at(TokKind::Float, src_.substr(pos_, i + w.size() - pos_), line, col);
        const double v = w == "inf" ? std::numeric_limits<double>::infinity()
                                    : std::numeric_limits<double>::quiet_NaN();
        t.float_value = negative ? -v : v;
        advance(i + w.size() - pos_);
        return;
      }
    }
    const size_t digits_start = i;
    bool is_float = false;
    while (i < src_.size() && is_digit(src_[i])) ++i;
    size_t mantissa_digits = i - digits_start;
    if (i < src_.size() && src_[i] == '.') {
      is_float = true;
      ++i;
      const size_t frac_start = i;
      while (i < src_.size() && is_digit(src_[i])) ++i;
      mantissa_digits += i - frac_start;
    }
    if (mantissa_digits == 0) {
      throw_parse_error(file_, line, col + static_cast<int>(digits_start - pos_),
                        "a number after '-'", found_at(digits_start));
    }
    if (i < src_.size() && (src_[i] == 'e' || src_[i] == 'E')) {
      is_float = true;
      ++i;
      if (i < src_.size() && (src_[i] == '+' || src_[i] == '-')) ++i;
      if (i >= src_.size() || !is_digit(src_[i])) {
        throw_parse_error(file_, line, col, "digits after the exponent of a number",
                          "'" + rest_of_word(pos_) + "'");
      }
      while (i < src_.size() && is_digit(src_[i])) ++i;
    }
    if (i < src_.size() && (is_ident_char(src_[i]) || src_[i] == '.')) {
      throw_parse_error(file_, line, col, "a number", "'" + rest_of_word(pos_) + "'");
    }
    std::string text = src_.substr(pos_, i - pos_);
    Token& t = push_at(is_float ? TokKind::Float : TokKind::Int, text, line, col);
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if (is_float) {
      auto [ptr, ec] = std::from_chars(first, last, t.float_value);
      if (ec != std::errc() || ptr != last) {
        throw_parse_error(file_, line, col, "a float literal within the range of f64",
                          "'" + text + "'");
      }
    } else {
      auto [ptr, ec] = std::from_chars(first, last, t.int_value);
      if (ec != std::errc() || ptr != last) {
        throw_parse_error(file_, line, col, "an integer literal within the range of i64",
                          "'" + text + "'");
      }
    }
    advance(i - pos_);
  }

  std::string found_at(size_t i) const {
    if (i >= src_.size()) return "end of file";
    if (src_[i] == '\n') return "end of line";
    return "'" + std::string(1, src_[i]) + "'";
  }

  void lex_string() {
    const int line = line_;
    const int col = col_;
    const size_t start = pos_;
    const char quote = peek();
    advance(1);
    std::string value;
    while (true) {
      const char c = peek();
      if (pos_ >= src_.size() || c == '\n') {
        throw_parse_error(file_, line_, col_, std::string("a closing ") + quote + " for the string",
                          pos_ >= src_.size() ? "end of file" : "end of line");
      }
      if (c == quote) {
        advance(1);
        break;
      }
      if (c == '\\') {
        const char e = peek(1);
        switch (e) {
          case '\\':
            value += '\\';
            break;
          case '\'':
            value += '\'';
            break;
          case '"':
            value += '"';
            break;
          case 'n':
            value += '\n';
            break;
          case 't':
            value += '\t';
            break;
          default: {
            const std::string found = pos_ + 1 >= src_.size() || e == '\n'
                                          ? found_at(pos_ + 1)
                                          : "'\\" + std::string(1, e) + "'";
            throw_parse_error(file_, line_, col_, "an escape sequence (\\\\, \\', \\\", \\n, \\t)",
                              found);
          }
        }
        advance(2);
        continue;
      }
      value += c;
      advance(1);
    }
    Token& t = push_at(TokKind::String, src_.substr(start, pos_ - start), line, col);
    t.string_value = std::move(value);
  }

  const std::string& src_;
  const std::string& file_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  int depth_ = 0;
};

}  // namespace

std::vector<Token> lex(const std::string& source, const std::string& filename) {
  return Lexer(source, filename).run();
}

}  // namespace detail
}  // namespace stax::ir
