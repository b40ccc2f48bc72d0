// Reading and writing the `#!fuzz` header of saved failures, and replaying them.
#include "fuzz/regression_file.h"

#include <sstream>
#include <stdexcept>
#include <vector>

namespace stax::fuzz {

namespace {

constexpr const char* kPrefix = "#!fuzz ";

const char* expectation_name(Expectation e) {
  switch (e) {
    case Expectation::Match:
      return "match";
    case Expectation::Clean:
      return "clean";
    case Expectation::Refused:
      return "refused";
  }
  return "clean";
}

void parse_options(const std::string& text, CaseOptions& o, const std::string& where) {
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument(where + ": expected key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    try {
      if (key == "simd") {
        auto level = runtime::parse_simd_level(value);
        if (!level) throw std::invalid_argument("unknown SIMD level");
        o.simd = *level;
      } else if (key == "threads") {
        o.num_threads = std::stoi(value);
      } else if (key == "fuse") {
        o.fuse = value == "1";
      } else if (key == "localize") {
        o.localize = value == "1";
      } else if (key == "input_seed") {
        o.input_seed = std::stoull(value);
      } else if (key == "symbolic") {
        o.symbolic = value == "1";
      } else {
        throw std::invalid_argument("unknown option");
      }
    } catch (const std::exception& e) {
      throw std::invalid_argument(where + ": bad option '" + item + "' (" + e.what() + ")");
    }
  }
}

}  // namespace

std::string format_regression(const RegressionCase& c) {
  std::ostringstream out;
  std::string found = c.found;
  for (char& ch : found) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  out << kPrefix << "found: " << found << "\n";
  out << kPrefix << "expect: " << expectation_name(c.expect) << "\n";
  out << kPrefix << "options: simd=" << runtime::simd_level_name(c.options.simd)
      << " threads=" << c.options.num_threads << " fuse=" << (c.options.fuse ? 1 : 0)
      << " localize=" << (c.options.localize ? 1 : 0) << " input_seed=" << c.options.input_seed
      << (c.options.symbolic ? " symbolic=1" : "") << "\n";
  out << c.program;
  return out.str();
}

RegressionCase parse_regression(const std::string& file_text, const std::string& path) {
  RegressionCase c;
  size_t pos = 0;
  bool have_expect = false;
  int line = 0;
  while (file_text.compare(pos, std::string(kPrefix).size(), kPrefix) == 0) {
    ++line;
    size_t end = file_text.find('\n', pos);
    if (end == std::string::npos) end = file_text.size();
    const std::string header = file_text.substr(pos + std::string(kPrefix).size(),
                                                end - pos - std::string(kPrefix).size());
    const std::string where = path + ":" + std::to_string(line);
    if (header.rfind("found: ", 0) == 0) {
      c.found = header.substr(7);
    } else if (header.rfind("expect: ", 0) == 0) {
      const std::string e = header.substr(8);
      if (e == "match") {
        c.expect = Expectation::Match;
      } else if (e == "clean") {
        c.expect = Expectation::Clean;
      } else if (e == "refused") {
        c.expect = Expectation::Refused;
      } else {
        throw std::invalid_argument(where + ": unknown expectation '" + e +
                                    "' (expected match, clean or refused)");
      }
      have_expect = true;
    } else if (header.rfind("options: ", 0) == 0) {
      parse_options(header.substr(9), c.options, where);
    } else {
      throw std::invalid_argument(where + ": unknown header line '#!fuzz " + header + "'");
    }
    pos = end + 1;
    if (end == file_text.size()) pos = end;
  }
  if (!have_expect) throw std::invalid_argument(path + ": no '#!fuzz expect:' header line");
  c.program = file_text.substr(pos);
  return c;
}

Outcome check_regression(const RegressionCase& c) {
  if (c.expect == Expectation::Match) return check_valid(c.program, c.options);
  std::vector<std::string> errors;
  Outcome o = check_clean_errors(c.program, &errors);
  if (o.failed() || c.expect == Expectation::Clean || !errors.empty()) return o;
  o.kind = FailureKind::Accepted;
  o.detail = "expected the program to be refused with an error, but every stage accepted it";
  return o;
}

}  // namespace stax::fuzz
