// The list of known failures, tests/sweep/KNOWN_FAILURES.md: a Markdown table whose rows name
// a catalogue case (op_catalog.h) and a dtype (`| div.floor | f16 | what failed |`). In the
// differential sweep a listed case x dtype is expected to fail (the test prints it and
// passes); an unlisted failure fails the test, and so does a listed one that now passes
// (remove its row), so the list only shrinks towards empty. The CI fuzz run leaves the
// listed pairs out of its catalogue steps (GeneratorOptions::excluded_cases), so that it
// looks for the failures nobody has found yet.
#pragma once

#include <set>
#include <string>

namespace stax::fuzz {

// "case dtype" keys, e.g. "div.floor f16". Throws std::runtime_error naming the file when
// it cannot be read or a row names an unknown dtype.
std::set<std::string> read_known_failures(const std::string& path);
std::string failure_key(const std::string& case_name, const std::string& dtype);

}  // namespace stax::fuzz
