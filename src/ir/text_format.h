// Shared pieces of the Stax text format used by the parser, the printer, the graph (name
// validation) and diagnostics elsewhere: identifier rules and canonical spellings of floats,
// size lists, types and node arguments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace stax::ir {

// True for an identifier ([A-Za-z_][A-Za-z0-9_]*) that is not a reserved word of the text
// format (def, return, True, False, None, inf, nan). Graph, input and value names must be valid.
bool is_valid_value_name(std::string_view name);

// Shortest spelling of `value` that parses back bit-exactly as a float literal: always has a
// '.', an exponent, or is inf / -inf / nan (e.g. "2.0", "1e-05", "-inf").
std::string format_float(double value);
// "[64, 128]"
std::string format_sizes(const std::vector<int64_t>& sizes);
// "f32[64, 128]", plus " strides=[1, 64]" when the strides are not contiguous.
std::string format_type(const TensorType& type);
// One argument as the text format spells it: a value name, 2, 2.0, True, None, [0, 1], 'str'.
std::string format_arg(const Graph& graph, const Arg& arg);

}  // namespace stax::ir
