// Merging and printing provenance lists (source_op.h).
#include "lowering/source_op.h"

#include <algorithm>
#include <iterator>

namespace stax::lowering {

std::vector<SourceOp> merge_source_ops(const std::vector<SourceOp>& a,
                                       const std::vector<SourceOp>& b) {
  std::vector<SourceOp> out;
  out.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out),
                 [](const SourceOp& x, const SourceOp& y) { return x.node < y.node; });
  return out;
}

std::string format_source_ops(const std::vector<SourceOp>& ops) {
  if (ops.empty()) return "(none)";
  std::string out;
  for (const SourceOp& s : ops) {
    out += (out.empty() ? "" : ", ") + s.op + " (" + s.value + ")";
  }
  return out;
}

}  // namespace stax::lowering
