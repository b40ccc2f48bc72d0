// Reading and writing JSON files with errors that name the file and the problem (see
// json_file.h). Reading takes three passes over the text: a scan that bounds the nesting depth
// (nothing after it recurses deeper than that bound), a validating SAX pass that learns where
// an error is (the DOM parser's exceptions do not all carry a position: number overflow does
// not), and the DOM parse, which then cannot fail.
#include "eager/json_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <vector>

namespace stax::eager {

namespace {

using nlohmann::json;

constexpr size_t kMaxLibraryMessage = 160;

std::string errno_text(int error) {
  return error != 0 ? std::strerror(error) : "unknown error";
}

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::invalid_argument(path + ": is a directory, not a JSON file");
  }
  errno = 0;
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw std::invalid_argument(path + ": cannot open: " + errno_text(errno));
  std::string text;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) text.append(buffer, n);
  if (std::ferror(file.get())) {
    throw std::invalid_argument(path + ": read failed: " + errno_text(errno));
  }
  return text;
}

// "line L col C" of the byte at `offset` (both 1-based; columns count bytes).
std::string line_and_column(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "line " + std::to_string(line) + " col " + std::to_string(offset - line_start + 1);
}

// The offset of the first '[' or '{' (outside strings) that opens level max_depth + 1, or npos.
size_t first_too_deep(const std::string& text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

// The parser's explanation without its "[json.exception.parse_error.101] parse error at line 1,
// column 5: " prefix (we give the position ourselves), bounded in length: "last read: '...'"
// can quote a long token.
std::string library_explanation(const std::string& what) {
  std::string m = what;
  if (m.rfind("[json.exception.", 0) == 0) {
    const size_t close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  if (m.rfind("parse error", 0) == 0) {
    const size_t colon = m.find(": ");
    if (colon != std::string::npos) m = m.substr(colon + 2);
  }
  if (m.size() > kMaxLibraryMessage) m = m.substr(0, kMaxLibraryMessage - 3) + "...";
  return m;
}

// Accepts everything, remembering the first syntax error (with its position) or duplicate key.
class Validator final : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& key) override {
    if (!keys_.back().insert(key).second) {
      error_ = "key '" + key.substr(0, 40) + "' appears twice in one object";
      return false;
    }
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::json::exception& ex) override {
    // A syntax error is where the parser stopped (the last byte it read, as its own messages
    // say); a number out of range is the whole number just read: point at its start.
    const bool number_overflow = ex.id == 406 && last_token.size() <= position;
    position_ = number_overflow ? position - last_token.size() : std::max<size_t>(position, 1) - 1;
    error_ = library_explanation(ex.what());
    return false;
  }

  const std::string& error() const { return error_; }
  // Byte offset of the error; npos for a duplicate key (the SAX interface gives no position).
  size_t position() const { return position_; }

 private:
  std::vector<std::set<std::string>> keys_;
  std::string error_;
  size_t position_ = std::string::npos;
};

void append_prefix(const json& value, std::string& out, size_t limit) {
  if (out.size() >= limit) return;
  const auto dump = [](const json& v) {
    return v.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  switch (value.type()) {
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const json& element : value) {
        if (out.size() >= limit) return;
        if (!first) out += ',';
        first = false;
        append_prefix(element, out, limit);
      }
      out += ']';
      return;
    }
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (out.size() >= limit) return;
        if (!first) out += ',';
        first = false;
        out += dump(json(it.key().substr(0, limit))) + ':';
        append_prefix(it.value(), out, limit);
      }
      out += '}';
      return;
    }
    case json::value_t::string:
      out += dump(json(value.get_ref<const std::string&>().substr(0, limit)));
      return;
    default:
      out += dump(value);
  }
}

}  // namespace

json read_json_file(const std::string& path, size_t max_depth) {
  const std::string text = read_whole_file(path);
  const size_t deep = first_too_deep(text, max_depth);
  if (deep != std::string::npos) {
    throw std::invalid_argument(path + ": " + line_and_column(text, deep) +
                                ": nested deeper than " + std::to_string(max_depth) + " levels");
  }
  Validator validator;
  if (!json::sax_parse(text, &validator)) {
    const std::string where = validator.position() == std::string::npos
                                  ? ""
                                  : line_and_column(text, validator.position()) + ": ";
    throw std::invalid_argument(path + ": " + where + validator.error());
  }
  return json::parse(text);
}

void write_text_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  errno = 0;
  std::ofstream out(path, std::ios::out | std::ios::trunc | std::ios::binary);
  if (!out.is_open()) throw std::runtime_error(path + ": cannot create: " + errno_text(errno));
  errno = 0;
  write(out);
  out.flush();
  if (!out) throw std::runtime_error(path + ": write failed: " + errno_text(errno));
  errno = 0;
  out.close();
  if (out.fail()) throw std::runtime_error(path + ": close failed: " + errno_text(errno));
}

std::string describe_json(const json& value, size_t max_chars) {
  max_chars = std::max<size_t>(max_chars, 4);
  std::string text;
  append_prefix(value, text, max_chars + 1);
  if (text.size() > max_chars) text = text.substr(0, max_chars - 3) + "...";
  return std::string(value.type_name()) + " " + text;
}

}  // namespace stax::eager
