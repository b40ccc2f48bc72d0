// Epilogue fusion (issue 14, point 3): a pointwise loop whose only input from an external call
// is that call's output, read element for element, and whose body is a chain the call's library
// can apply to each result before storing it (tanh, abs, sqrt, x * x, x * a + b), runs inside
// the call: the library writes the loop's buffer directly, and the call's own output is never
// stored. It saves a pass over the output (written by the library, read and written again by
// the loop) and adds no traffic, so it is taken whenever the library can run the chain exactly
// as eager computes it (what `EpilogueCheck` answers; the library refuses, with its reason,
// every op whose results differ from eager's beyond its own accuracy, NaN and signed zeros
// included). Every candidate's decision is logged with its reason (explain).
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "lowering/loop_ir.h"
#include "scheduler/fused_node.h"

namespace stax::scheduler {

// Whether the target's library runs `call` followed by `chain` as eager computes it; when not,
// `why` says why.
using EpilogueCheck = std::function<bool(const lowering::ExternalCall& call,
                                         const std::vector<EpilogueOp>& chain, std::string* why)>;

// The chain a node's body applies to its one read of `input` at the index it writes, or a
// reason why it is not such a chain. Empty chain with an empty reason: the body copies.
struct EpilogueMatch {
  bool matches = false;
  std::vector<EpilogueOp> chain;
  std::string reason;
};
EpilogueMatch match_epilogue(const SchedulerNode& node, const std::string& input);

struct EpilogueLog {
  std::vector<std::string> lines;  // "op3 into op2 (addmm): fused, ..." / "not fused: ..."
};

// Merges each external node with the pointwise node it can run as an epilogue (see above):
// the external's group gains the node as a second member of its nest and `epilogue` lists the
// chain. `groups` are the fused nodes after greedy fusion.
void fuse_epilogues(const std::vector<SchedulerNode>& nodes, std::vector<FusedNode>& groups,
                    const std::set<std::string>& graph_outputs, const EpilogueCheck& check,
                    EpilogueLog& log);

}  // namespace stax::scheduler
