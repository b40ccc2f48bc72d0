// Mutations of program text for the clean-error fuzzer: structural (delete, duplicate or swap
// lines, truncate), lexical (numbers to edge values such as 0, -1, huge and 2^62; op names,
// identifiers and dtypes replaced by other valid or invalid ones) and raw (garbage bytes
// inserted). Most results are invalid programs that must be refused with a clear error; some
// stay valid and must then work.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace stax::fuzz {

struct Mutation {
  std::string text;
  std::vector<std::string> applied;  // names of the mutations, in order ("swap-lines", ...)
};

// Applies 1 to 3 random mutations to `text`; deterministic in `seed`.
Mutation mutate_program(const std::string& text, uint64_t seed);

}  // namespace stax::fuzz
