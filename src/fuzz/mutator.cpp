// Text mutations. Lexical mutations find their targets with a small scanner of the text
// format's tokens (numbers, identifiers), so a mutation replaces a whole token.
#include "fuzz/mutator.h"

#include <cctype>
#include <functional>

namespace stax::fuzz {

namespace {

struct Span {
  size_t begin;
  size_t end;
};

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// Identifiers and numbers (with an optional leading '-') of `text`.
void scan(const std::string& text, std::vector<Span>& idents, std::vector<Span>& numbers) {
  size_t i = 0;
  while (i < text.size()) {
    if (ident_start(text[i])) {
      size_t j = i;
      while (j < text.size() && ident_char(text[j])) ++j;
      idents.push_back({i, j});
      i = j;
    } else if (digit(text[i]) || (text[i] == '-' && i + 1 < text.size() && digit(text[i + 1]))) {
      size_t j = i + 1;
      while (j < text.size() && (digit(text[j]) || text[j] == '.' || text[j] == 'e' ||
                                 ((text[j] == '-' || text[j] == '+') && text[j - 1] == 'e'))) {
        ++j;
      }
      numbers.push_back({i, j});
      i = j;
    } else {
      ++i;
    }
  }
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  Mutation run(const std::string& text) {
    Mutation m{text, {}};
    const int count = 1 + pick(3);
    for (int k = 0; k < count; ++k) mutate_once(m);
    return m;
  }

 private:
  size_t pick(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }
  int pick(int n) { return static_cast<int>(pick(static_cast<size_t>(n))); }
  template <typename T, size_t N>
  const T& choose(const T (&items)[N]) {
    return items[pick(N)];
  }

  void mutate_once(Mutation& m) {
    static const char* kNames[] = {"delete-line", "duplicate-line", "swap-lines", "edge-number",
                                   "edge-number", "op-name",        "identifier", "dtype",
                                   "truncate",    "garbage",        "garbage",    "edge-number"};
    const std::string name = choose(kNames);
    std::vector<std::string> lines = split_lines(m.text);
    std::string& t = m.text;
    if (name == "delete-line" && !lines.empty()) {
      lines.erase(lines.begin() + pick(static_cast<int>(lines.size())));
      t = join_lines(lines);
    } else if (name == "duplicate-line" && !lines.empty()) {
      const size_t i = pick(lines.size());
      lines.insert(lines.begin() + static_cast<long>(pick(lines.size() + 1)), lines[i]);
      t = join_lines(lines);
    } else if (name == "swap-lines" && lines.size() >= 2) {
      std::swap(lines[pick(lines.size())], lines[pick(lines.size())]);
      t = join_lines(lines);
    } else if (name == "edge-number") {
      replace_token(t, /*numbers=*/true, [&](const std::string&) { return edge_number(); });
    } else if (name == "op-name") {
      static const char* kOps[] = {
          "add",        "sub",     "mul",       "div",    "maximum", "minimum",   "gt",
          "lt",         "ge",      "le",        "eq",     "ne",      "neg",       "abs",
          "exp",        "log",     "sqrt",      "rsqrt",  "tanh",    "sigmoid",   "relu",
          "pow",        "where",   "sum",       "mean",   "amax",    "amin",      "reshape",
          "view",       "permute", "transpose", "expand", "squeeze", "unsqueeze", "clone",
          "contiguous", "matmul",  "softmax",   "def",    "return",  "None",      "True"};
      replace_token(t, false, [&](const std::string&) { return std::string(choose(kOps)); });
    } else if (name == "identifier") {
      replace_token(t, false, [&](const std::string& old) {
        static const char* kNames2[] = {"a", "b",   "v0",      "v1",      "v3",    "g",   "x",
                                        "_", "dim", "keepdim", "strides", "alpha", "inf", "nan"};
        return chance(2) ? std::string(choose(kNames2)) : old + old;
      });
    } else if (name == "dtype") {
      replace_token(t, false, [&](const std::string& old) {
        static const char* kTypes[] = {"f32", "f64", "f16",  "bf16", "i64",   "i32",
                                       "i8",  "u8",  "bool", "b8",   "float", "f3"};
        return old == "f32" || chance(4) ? std::string(choose(kTypes)) : old;
      });
    } else if (name == "truncate" && !t.empty()) {
      t.resize(pick(t.size()));
    } else {
      static const char* kGarbage[] = {"(",   ")",      "[",        "]",    ",",
                                       ":",   "=",      "\n",       "    ", "\t",
                                       "#",   "'",      "\"",       "\\",   "-",
                                       ".",   "e",      "\xc3\xa9", "\xff", "" /* a NUL byte */,
                                       "def", "return", "1e999",    "0x10", "9223372036854775808",
                                       "@",   "\r"};
      std::string g = choose(kGarbage);
      if (g.empty()) g = std::string(1, '\0');
      t.insert(pick(t.size() + 1), g);
    }
    m.applied.push_back(name);
  }

  bool chance(int one_in) { return pick(one_in) == 0; }

  std::string edge_number() {
    static const char* kNumbers[] = {"0",
                                     "-1",
                                     "1",
                                     "-2",
                                     "2147483648",
                                     "4294967296",
                                     "4611686018427387904",   // 2^62
                                     "9223372036854775807",   // INT64_MAX
                                     "-9223372036854775808",  // INT64_MIN
                                     "99999999999999999999",  // beyond int64
                                     "1000000",
                                     "65536",
                                     "0.0",
                                     "-0.0",
                                     "1e308",
                                     "1e-320",
                                     "3.5",
                                     "-7"};
    return choose(kNumbers);
  }

  // Replaces one random token (a number, or an identifier) of `t` by make(old token).
  void replace_token(std::string& t, bool numbers,
                     const std::function<std::string(const std::string&)>& make) {
    std::vector<Span> idents;
    std::vector<Span> nums;
    scan(t, idents, nums);
    const std::vector<Span>& spans = numbers ? nums : idents;
    if (spans.empty()) return;
    const Span s = spans[pick(spans.size())];
    t.replace(s.begin, s.end - s.begin, make(t.substr(s.begin, s.end - s.begin)));
  }

  std::mt19937_64 rng_;
};

}  // namespace

Mutation mutate_program(const std::string& text, uint64_t seed) {
  return Mutator(seed).run(text);
}

}  // namespace stax::fuzz
