// Sizes known only at run time in the graph IR (issue 33, docs/symbolic_sizes.md): a dimension
// of a graph input may be a size symbol (`s0`) with what is known of it (index::SizeSymbol);
// the result types of the ops follow as expressions over the symbols. This file holds the
// symbolic shape rules of the op families that have one, the check that a symbolic type holds
// at the symbols' hints (the static rules ran there), and binding the symbols to values, which
// turns a symbolic graph into the static graph of one call.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "index/expr.h"
#include "index/shape_exprs.h"
#include "ir/graph.h"

namespace stax::ir {

// Whether `name` may name a size symbol: s0, s1, ... (as Dynamo names its sizes). The loop
// variables of the index algebra have other names (i0, r0, c0, ...), so a symbol never clashes
// with one.
bool is_size_symbol_name(const std::string& name);

// The facts of a symbol the text format or the C++ API did not declare: any size up to what an
// int32 holds, hinted at 64 (a heuristic for tile and vector choices, never for a proof).
index::SizeSymbol default_size_symbol();
// The hint of a symbol declared without one: default_size_symbol()'s, moved into its range
// and up to its divisor (down where that leaves the range).
int64_t default_hint(const index::SizeSymbol& facts);

// Symbolic contiguous strides (index/shape_exprs.h), beside the static ones of graph.h.
using index::contiguous_strides;

// A type's sizes and strides as expressions: its symbolic ones, or its static ones as
// constants. Stages that compile one program for every size read types only through these.
std::vector<index::Expr> symbolic_sizes_of(const TensorType& type);
std::vector<index::Expr> symbolic_strides_of(const TensorType& type);

// The window slice, narrow and select take along `dim`: [start, end) by `step` (select: the
// one index start), negative constants counted from the end; and the window slice_scatter and
// select_scatter write (their arguments after src). Throws GraphError naming the op when the
// window lies within the dim only for some values of the size symbols.
struct SymbolicWindow {
  int64_t dim = 0;
  index::Expr start;
  index::Expr end;
  int64_t step = 1;
};
SymbolicWindow symbolic_window(const Graph& graph, const Node& node);

// The symbolic sizes of `node`'s result in `graph`, whose static rule gave `at_hints`. Throws
// GraphError naming the op when its family has no symbolic rule yet or when the result's sizes
// depend on the symbols' values in a way the rule cannot express (a broadcast of s0 against
// 128 holds only where s0 == 128).
std::vector<index::Expr> infer_symbolic_sizes(const Graph& graph, const Node& node,
                                              const std::vector<int64_t>& at_hints);

// Throws GraphError naming the value when, at these values of the symbols, its sizes, strides,
// element count or bytes overflow int64 (issue 33: a symbolic program takes every size its
// symbols' facts allow whose tensors int64 can count; the others are refused per call, so that
// no symbol needs a range declared to be compiled).
void check_extents_at(const Graph& graph, const std::map<std::string, int64_t>& values);

// "s0 in [1, 4096] and a multiple of 8": what a message says of a symbol's facts.
std::string describe_facts(const std::string& name, const index::SizeSymbol& facts);

// Throws GraphError naming the symbol when a value breaks its facts (range, divisibility) or
// names no symbol of the graph, and, with require_all, when a symbol has no value.
void check_size_values(const Graph& graph, const std::map<std::string, int64_t>& values,
                       bool require_all);

// A size that is c * s for one symbol s and c >= 1 (s0, 2*s0): the dim of that size gives s.
struct SymbolMultiple {
  std::string symbol;
  int64_t factor = 1;
};
std::optional<SymbolMultiple> symbol_multiple(const index::Expr& size);

// Where a call's inputs give each symbol: the first input dim (in input order, then dim
// order) whose size is c * s. One rule for the driver (sizes_of_call) and the generated
// wrapper (program/host_printer.cpp), which read the symbols the same way.
struct SymbolSource {
  size_t input = 0;
  size_t dim = 0;
  int64_t factor = 1;
};
std::map<std::string, SymbolSource> symbol_sources(
    const std::vector<std::vector<index::Expr>>& input_sizes);

// The symbols' values a call with these input sizes gives, read from the inputs' dims that are
// exactly one symbol; throws GraphError naming the input and dimension whose size contradicts
// another or a constant dim, the symbol whose value breaks its facts, or the value whose
// tensor int64 cannot count (check_extents_at). `input_sizes` has one entry per graph input.
std::map<std::string, int64_t> sizes_of_call(const Graph& graph,
                                             const std::vector<std::vector<int64_t>>& input_sizes);
// sizes_of_call without check_extents_at: what a caller that remembers the values it checked
// already (driver::CompiledGraph, per call) reads first. Most of sizes_of_call's time is
// check_extents_at, which visits every value of the graph.
std::map<std::string, int64_t> symbol_values_of_call(
    const Graph& graph, const std::vector<std::vector<int64_t>>& input_sizes);

}  // namespace stax::ir
