// Reads the table rows of KNOWN_FAILURES.md (see known_failures.h).
#include "fuzz/known_failures.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "ir/dtype.h"

namespace stax::fuzz {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t`");
  const size_t e = s.find_last_not_of(" \t`");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

std::string failure_key(const std::string& case_name, const std::string& dtype) {
  return case_name + " " + dtype;
}

std::set<std::string> read_known_failures(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the known-failures file");
  std::set<std::string> keys;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(trim(cell));
    if (cells.size() < 2 || cells[0] == "case" || cells[0].find("---") != std::string::npos) {
      continue;
    }
    if (!parse_dtype(cells[1])) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": '" + cells[1] +
                               "' is not a dtype (expected f32, bf16, i64, bool, ...)");
    }
    keys.insert(failure_key(cells[0], cells[1]));
  }
  return keys;
}

}  // namespace stax::fuzz
