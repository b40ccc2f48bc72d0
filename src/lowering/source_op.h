// Provenance (issue 7, point 6): the graph nodes whose element functions a buffer's body
// computes, carried from lowering through the scheduler's fused nodes into the kernel IR, so
// that every generated kernel and `stax explain` name the ATen ops it came from.
#pragma once

#include <string>
#include <vector>

namespace stax::lowering {

// One graph node composed into a buffer's body.
struct SourceOp {
  int node = -1;      // its position in the graph (lists are in graph order)
  std::string op;     // the ATen op: "exp"
  std::string value;  // the graph value it defines: "e"
  friend bool operator==(const SourceOp&, const SourceOp&) = default;
};

// The union of two lists in graph order (ascending by node, each node once).
std::vector<SourceOp> merge_source_ops(const std::vector<SourceOp>& a,
                                       const std::vector<SourceOp>& b);

// "exp (e), sum (s)"; "(none)" for an empty list. Kernel comments and explain print this.
std::string format_source_ops(const std::vector<SourceOp>& ops);

}  // namespace stax::lowering
