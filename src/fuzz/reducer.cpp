// The reducer's passes over program text. Each pass proposes candidates; a candidate that
// still fails replaces the current text. Results are memoized by text, so passes may propose
// freely.
#include "fuzz/reducer.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace stax::fuzz {

namespace {

using Lines = std::vector<std::string>;

Lines split_lines(const std::string& text) {
  Lines lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      if (start < text.size()) lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string join(const Lines& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Positions of whole-word occurrences of `word` in `s`.
std::vector<size_t> word_positions(const std::string& s, const std::string& word) {
  std::vector<size_t> out;
  for (size_t p = s.find(word); p != std::string::npos; p = s.find(word, p + 1)) {
    const bool left = p == 0 || (!ident_char(s[p - 1]) && s[p - 1] != '.');
    const size_t e = p + word.size();
    const bool right = e >= s.size() || (!ident_char(s[e]) && s[e] != '.');
    if (left && right) out.push_back(p);
  }
  return out;
}

std::string replace_word(std::string s, const std::string& word, const std::string& with) {
  std::vector<size_t> pos = word_positions(s, word);
  for (size_t k = pos.size(); k-- > 0;) s.replace(pos[k], word.size(), with);
  return s;
}

// `name = op(args)` lines: the target, and the argument text between the parentheses.
struct Statement {
  std::string target;
  size_t args_begin = 0;  // in the line
  size_t args_end = 0;    // the closing ')'
};

std::optional<Statement> parse_statement(const std::string& line) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  const size_t name_begin = i;
  while (i < line.size() && ident_char(line[i])) ++i;
  if (i == name_begin) return std::nullopt;
  Statement s;
  s.target = line.substr(name_begin, i - name_begin);
  while (i < line.size() && line[i] == ' ') ++i;
  if (i >= line.size() || line[i] != '=') return std::nullopt;
  const size_t open = line.find('(', i);
  const size_t close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  s.args_begin = open + 1;
  s.args_end = close;
  return s;
}

// Splits `text` at commas outside brackets; returns [begin, end) of each piece.
std::vector<std::pair<size_t, size_t>> top_level_pieces(const std::string& text, size_t begin,
                                                        size_t end) {
  std::vector<std::pair<size_t, size_t>> pieces;
  int depth = 0;
  size_t start = begin;
  for (size_t i = begin; i < end; ++i) {
    const char c = text[i];
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      pieces.emplace_back(start, i);
      start = i + 1;
    }
  }
  if (start < end) pieces.emplace_back(start, end);
  return pieces;
}

// Removes piece k of the comma-separated pieces, with the comma that joins it to a neighbour.
std::string remove_piece(const std::string& text,
                         const std::vector<std::pair<size_t, size_t>>& pieces, size_t k) {
  size_t from = pieces[k].first;
  size_t to = pieces[k].second;
  if (k + 1 < pieces.size()) {
    to = pieces[k + 1].first;
    while (to < text.size() && text[to] == ' ') ++to;
  } else if (k > 0) {
    from = pieces[k - 1].second;
  }
  return text.substr(0, from) + text.substr(to);
}

bool is_def_line(const std::string& line) {
  return line.rfind("def ", 0) == 0;
}

// Names the program defines: inputs of the def line and statement targets, in order.
std::vector<std::string> input_names(const Lines& lines) {
  std::vector<std::string> names;
  for (const std::string& line : lines) {
    if (!is_def_line(line)) continue;
    const size_t open = line.find('(');
    const size_t close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) break;
    for (auto [b, e] : top_level_pieces(line, open + 1, close)) {
      while (b < e && line[b] == ' ') ++b;
      size_t n = b;
      while (n < e && ident_char(line[n])) ++n;
      if (n > b) names.push_back(line.substr(b, n - b));
    }
    break;
  }
  return names;
}

class Reducer {
 public:
  Reducer(const std::function<bool(const std::string&)>& still_fails, const ReduceOptions& options)
      : still_fails_(still_fails), options_(options) {}

  ReduceResult run(const std::string& text) {
    current_ = text;
    bool progress = true;
    while (progress && budget_left()) {
      const std::string before = current_;
      pass("remove line chunks", &Reducer::remove_line_chunks);
      pass("drop outputs", &Reducer::drop_outputs);
      pass("bypass statements", &Reducer::bypass_statements);
      pass("replace operands by inputs", &Reducer::replace_operands_by_inputs);
      pass("drop arguments", &Reducer::drop_arguments);
      pass("drop list elements", &Reducer::drop_list_elements);
      pass("shrink numbers", &Reducer::shrink_numbers);
      pass("drop strides and inputs", &Reducer::drop_strides_and_inputs);
      if (options_.character_level && current_ == before) {
        pass("remove characters", &Reducer::remove_characters);
      }
      progress = current_ != before;
    }
    return {current_, checks_, accepted_, out_of_time_};
  }

 private:
  void pass(const char* name, void (Reducer::*run_pass)()) {
    if (!budget_left()) return;
    pass_ = name;
    (this->*run_pass)();
  }

  bool budget_left() {
    if (checks_ >= options_.max_checks || out_of_time_) return false;
    // Every pass asks before each check, so a deadline stops the reduction within one check.
    if (options_.clock && options_.clock() >= options_.deadline) out_of_time_ = true;
    return !out_of_time_;
  }

  // Accepts `candidate` when it is smaller-or-different and still fails.
  bool attempt(const std::string& candidate) {
    // A text that was current once is never taken again, so lateral moves cannot cycle.
    if (candidate == current_ || !budget_left() || visited_.count(candidate)) return false;
    auto it = memo_.find(candidate);
    bool fails;
    if (it != memo_.end()) {
      fails = it->second;
    } else {
      ++checks_;
      fails = still_fails_(candidate);
      memo_[candidate] = fails;
    }
    if (fails) {
      visited_.insert(current_);
      current_ = candidate;
      ++accepted_;
    }
    if (options_.on_check) options_.on_check({pass_, checks_, accepted_, current_.size()});
    return fails;
  }

  void remove_line_chunks() {
    for (size_t chunk = std::max<size_t>(1, split_lines(current_).size() / 2);; chunk /= 2) {
      for (size_t start = 0;;) {
        Lines lines = split_lines(current_);
        if (start >= lines.size()) break;
        Lines candidate = lines;
        candidate.erase(
            candidate.begin() + static_cast<long>(start),
            candidate.begin() + static_cast<long>(std::min(lines.size(), start + chunk)));
        if (!attempt(join(candidate))) start += chunk;
      }
      if (chunk == 1) break;
    }
  }

  void drop_outputs() {
    for (size_t k = 0;; ++k) {
      Lines lines = split_lines(current_);
      auto it = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
        return l.find("return ") != std::string::npos;
      });
      if (it == lines.end()) return;
      const size_t begin = it->find("return ") + 7;
      auto pieces = top_level_pieces(*it, begin, it->size());
      if (pieces.size() < 2 || k >= pieces.size()) return;
      *it = remove_piece(*it, pieces, k);
      if (attempt(join(lines))) --k;
    }
  }

  // Uses of a statement's value replaced by one of its operands, and the statement removed.
  void bypass_statements() {
    for (size_t i = 0;; ++i) {
      Lines lines = split_lines(current_);
      if (i >= lines.size()) return;
      const std::optional<Statement> s = parse_statement(lines[i]);
      if (!s || is_def_line(lines[i])) continue;
      for (const std::string& operand : defined_operands(lines, i, *s)) {
        Lines candidate = lines;
        candidate.erase(candidate.begin() + static_cast<long>(i));
        for (size_t j = i; j < candidate.size(); ++j) {
          candidate[j] = replace_word(candidate[j], s->target, operand);
        }
        if (attempt(join(candidate))) {
          --i;
          break;
        }
      }
    }
  }

  // Names defined before line `i` that statement `s` on it uses.
  static std::vector<std::string> defined_operands(const Lines& lines, size_t i,
                                                   const Statement& s) {
    std::vector<std::string> defined = input_names(lines);
    for (size_t j = 0; j < i; ++j) {
      if (auto t = parse_statement(lines[j]); t && !is_def_line(lines[j]))
        defined.push_back(t->target);
    }
    std::vector<std::string> used;
    const std::string args = lines[i].substr(s.args_begin, s.args_end - s.args_begin);
    for (const std::string& name : defined) {
      if (!word_positions(args, name).empty() &&
          std::find(used.begin(), used.end(), name) == used.end()) {
        used.push_back(name);
      }
    }
    return used;
  }

  void replace_operands_by_inputs() {
    for (size_t i = 0;; ++i) {
      Lines lines = split_lines(current_);
      if (i >= lines.size()) return;
      const std::optional<Statement> s = parse_statement(lines[i]);
      if (!s || is_def_line(lines[i])) continue;
      const std::vector<std::string> inputs = input_names(lines);
      for (const std::string& operand : defined_operands(lines, i, *s)) {
        if (std::find(inputs.begin(), inputs.end(), operand) != inputs.end()) continue;
        for (const std::string& input : inputs) {
          Lines candidate = lines;
          std::string args = candidate[i].substr(s->args_begin, s->args_end - s->args_begin);
          candidate[i] = candidate[i].substr(0, s->args_begin) +
                         replace_word(args, operand, input) + candidate[i].substr(s->args_end);
          if (attempt(join(candidate))) break;
        }
      }
    }
  }

  void drop_arguments() {
    for (size_t i = 0;; ++i) {
      Lines lines = split_lines(current_);
      if (i >= lines.size()) return;
      const std::optional<Statement> s = parse_statement(lines[i]);
      if (!s || is_def_line(lines[i])) continue;
      auto pieces = top_level_pieces(lines[i], s->args_begin, s->args_end);
      for (size_t k = pieces.size(); k-- > 1;) {
        Lines candidate = lines;
        candidate[i] = remove_piece(lines[i], pieces, k);
        if (attempt(join(candidate))) break;
      }
    }
  }

  void drop_list_elements() {
    for (size_t open = 0;; ++open) {
      open = current_.find('[', open);
      if (open == std::string::npos) return;
      const size_t close = current_.find(']', open);
      if (close == std::string::npos) return;
      auto pieces = top_level_pieces(current_, open + 1, close);
      if (pieces.size() < 2) continue;
      for (size_t k = pieces.size(); k-- > 0;) {
        if (attempt(remove_piece(current_, pieces, k))) break;
      }
    }
  }

  // Integer literals (not parts of floats or names), as the distinct values present.
  std::vector<long long> integers() const {
    std::set<long long> values;
    const std::string& t = current_;
    for (size_t i = 0; i < t.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(t[i]))) continue;
      if (i > 0 && (ident_char(t[i - 1]) || t[i - 1] == '.')) {
        while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
        continue;
      }
      size_t j = i;
      while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) ++j;
      const bool part_of_float = j < t.size() && (t[j] == '.' || t[j] == 'e' || ident_char(t[j]));
      if (!part_of_float && j - i <= 18) values.insert(std::stoll(t.substr(i, j - i)));
      i = j;
    }
    return {values.rbegin(), values.rend()};
  }

  void shrink_numbers() {
    for (long long n : integers()) {
      if (n <= 1) continue;
      const std::string word = std::to_string(n);
      for (long long smaller : {1LL, 2LL, n / 2, n - 1}) {
        if (smaller >= n || smaller < 1) continue;
        if (attempt(replace_word(current_, word, std::to_string(smaller)))) break;
      }
    }
  }

  void drop_strides_and_inputs() {
    for (size_t p = current_.find(" strides="); p != std::string::npos;
         p = current_.find(" strides=", p + 1)) {
      const size_t close = current_.find(']', p);
      if (close == std::string::npos) break;
      attempt(current_.substr(0, p) + current_.substr(close + 1));
    }
    for (size_t k = 0;; ++k) {
      Lines lines = split_lines(current_);
      auto def = std::find_if(lines.begin(), lines.end(), is_def_line);
      if (def == lines.end()) return;
      const size_t open = def->find('(');
      const size_t close = def->rfind(')');
      if (open == std::string::npos || close == std::string::npos || close < open) return;
      auto pieces = top_level_pieces(*def, open + 1, close);
      if (k >= pieces.size()) return;
      *def = remove_piece(*def, pieces, k);
      if (attempt(join(lines))) --k;
    }
  }

  void remove_characters() {
    for (size_t i = 0;; ++i) {
      Lines lines = split_lines(current_);
      if (i >= lines.size()) return;
      for (size_t chunk = std::max<size_t>(1, lines[i].size() / 2);; chunk /= 2) {
        for (size_t start = 0;;) {
          Lines now = split_lines(current_);
          if (i >= now.size() || start >= now[i].size()) break;
          Lines candidate = now;
          candidate[i].erase(start, chunk);
          if (!attempt(join(candidate))) start += chunk;
        }
        if (chunk == 1 || !budget_left()) break;
      }
    }
  }

  const std::function<bool(const std::string&)>& still_fails_;
  ReduceOptions options_;
  std::string current_;
  std::map<std::string, bool> memo_;
  std::set<std::string> visited_;
  int checks_ = 0;
  int accepted_ = 0;
  bool out_of_time_ = false;
  const char* pass_ = "";
};

}  // namespace

ReduceResult reduce_program(const std::string& text,
                            const std::function<bool(const std::string&)>& still_fails,
                            const ReduceOptions& options) {
  return Reducer(still_fails, options).run(text);
}

}  // namespace stax::fuzz
