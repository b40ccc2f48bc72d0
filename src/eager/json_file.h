// JSON files for the tools: reading with bounded nesting and errors that name the file, line and
// column (never the parser library's internal wording alone), writing with every failure
// (open, write, flush, close) reported, and bounded descriptions of JSON values for messages.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace stax::eager {

// Parses the JSON file at `path`. Arrays and objects nested deeper than `max_depth` levels are
// rejected before the parser sees them (its DOM and messages recurse, so unbounded nesting
// would overflow the stack). Every failure throws std::invalid_argument starting with `path`:
// "PATH: cannot open: No such file or directory", "PATH: is a directory",
// "PATH: line 3 col 7: syntax error ...", "PATH: line 1 col 12: number overflow parsing
// '1e400'", "PATH: line 1 col 2000: nested deeper than 100 levels", a key given twice.
nlohmann::json read_json_file(const std::string& path, size_t max_depth);

// Writes the file at `path` through `write`, then flushes and closes it; a failure at any step
// (cannot create, disk full, I/O error) throws std::runtime_error naming `path` and the cause.
void write_text_file(const std::string& path, const std::function<void(std::ostream&)>& write);

// "TYPE TEXT" for error messages, e.g. `array [[1,2],[3,...` or `string "abc"`: the text is a
// prefix of the value's JSON of at most about `max_chars` characters, produced without visiting
// (or recursing into) more of the value than that prefix shows.
std::string describe_json(const nlohmann::json& value, size_t max_chars = 40);

}  // namespace stax::eager
