// Epilogue fusion of external calls (see epilogue_fusion.h).
#include "scheduler/epilogue_fusion.h"

#include <map>
#include <sstream>

namespace stax::scheduler {

using lowering::OpsValue;
using lowering::PointwiseOp;

std::string EpilogueOp::to_string() const {
  switch (kind) {
    case Kind::Tanh:
      return "tanh";
    case Kind::Abs:
      return "abs";
    case Kind::Sqrt:
      return "sqrt";
    case Kind::Square:
      return "x * x";
    case Kind::Linear: {
      std::ostringstream out;
      out << "x";
      if (alpha != 1.0) out << " * " << alpha;
      if (beta != 0.0) out << " + " << beta;
      return out.str();
    }
  }
  return "?";
}

namespace {

// Runs a node's body and follows the value read from `input`: every op must take the latest
// value of the chain (and constants), so that the body is x -> op1 -> op2 -> ... -> store.
class ChainMatcher final : public lowering::OpsHandler {
 public:
  ChainMatcher(std::string input, index::Expr at, index::Domain ranges)
      : input_(std::move(input)), at_(std::move(at)), ranges_(std::move(ranges)) {}

  std::vector<EpilogueOp> chain;
  std::string failure;  // empty while the body is a chain
  bool stored_chain = false;

  OpsValue load(const std::string& buffer, const index::Expr& index, DType dtype) override {
    if (buffer != input_) return fail("it reads " + buffer + " too", dtype);
    if (index::simplify(index, ranges_) != at_) {
      return fail("it reads " + buffer + " at another index than it writes", dtype);
    }
    if (dtype != DType::Float32) return fail("it reads a " + std::string(dtype_name(dtype)), dtype);
    if (chain_value_ >= 0) return fail("it reads " + buffer + " twice");
    return chain_value(dtype);
  }
  OpsValue constant(const ir::Scalar& value, DType dtype) override {
    OpsValue v = fresh(dtype);
    constants_[v.id] = value.as_double();
    return v;
  }
  OpsValue compute(PointwiseOp op, std::span<const OpsValue> args, DType result) override {
    if (!failure.empty()) return fresh(result);  // (a chain no longer)
    if (result != DType::Float32) {
      return fail("it computes in " + std::string(dtype_name(result)), result);
    }
    auto is_chain = [&](const OpsValue& v) { return v.id == chain_value_; };
    auto constant_of = [&](const OpsValue& v) -> std::optional<double> {
      auto it = constants_.find(v.id);
      return it == constants_.end() ? std::nullopt : std::optional<double>(it->second);
    };
    if (args.size() == 1 && is_chain(args[0])) {
      if (op == PointwiseOp::Tanh) return extend({EpilogueOp::Kind::Tanh});
      if (op == PointwiseOp::Abs) return extend({EpilogueOp::Kind::Abs});
      if (op == PointwiseOp::Sqrt) return extend({EpilogueOp::Kind::Sqrt});
    }
    if (args.size() == 2) {
      const bool x0 = is_chain(args[0]);
      const bool x1 = is_chain(args[1]);
      if (op == PointwiseOp::Mul && x0 && x1) return extend({EpilogueOp::Kind::Square});
      const std::optional<double> c = x0 ? constant_of(args[1]) : constant_of(args[0]);
      if ((x0 || x1) && c) {
        if (op == PointwiseOp::Mul) return extend({EpilogueOp::Kind::Linear, *c, 0.0});
        if (op == PointwiseOp::Add) return extend({EpilogueOp::Kind::Linear, 1.0, *c});
        if (op == PointwiseOp::Sub && x0) return extend({EpilogueOp::Kind::Linear, 1.0, -*c});
      }
    }
    return fail("its " + std::string(lowering::op_info(op).name) +
                    " is not an op the library applies to a result",
                result);
  }
  OpsValue to_dtype(OpsValue value, DType dtype) override {
    if (value.dtype == dtype) return value;
    return fail("it converts to " + std::string(dtype_name(dtype)), dtype);
  }
  OpsValue index_value(const index::Expr&, DType dtype) override {
    fail("it computes with its index");
    return fresh(dtype);
  }
  index::Expr indirect_index(OpsValue, const ir::IndexRule&) override {
    fail("it gathers");
    return index::Expr(0);
  }
  void push_mask(OpsValue) override { fail("it masks"); }
  void pop_mask() override {}
  OpsValue reduction(lowering::ReductionType, OpsValue value) override {
    fail("it reduces");
    return value;
  }
  void store(const std::string&, const index::Expr& index, OpsValue value) override {
    if (index::simplify(index, ranges_) != at_) fail("it writes at another index");
    if (value.id != chain_value_) fail("what it stores is not computed from the call's result");
    stored_chain = true;
  }
  void store_reduction(const std::string&, const index::Expr&, OpsValue) override {
    fail("it reduces");
  }

 private:
  OpsValue fresh(DType dtype) { return OpsValue{next_id_++, dtype}; }
  OpsValue chain_value(DType dtype) {
    OpsValue v = fresh(dtype);
    chain_value_ = v.id;
    return v;
  }
  OpsValue extend(EpilogueOp op) {
    chain.push_back(op);
    return chain_value(DType::Float32);
  }
  // Records the first reason; the body runs on with a value of the dtype it expects.
  OpsValue fail(const std::string& why, DType dtype = DType::Float32) {
    if (failure.empty()) failure = why;
    return fresh(dtype);
  }

  std::string input_;
  index::Expr at_;  // the node's write index, simplified over its ranges
  index::Domain ranges_;
  int next_id_ = 0;
  int chain_value_ = -1;
  std::map<int, double> constants_;
};

// A lone node of one pointwise nest, or nullptr.
const SchedulerNode* lone_pointwise_node(const std::vector<SchedulerNode>& nodes,
                                         const FusedNode& f) {
  const std::vector<int> members = f.members();
  if (members.size() != 1 || f.nests.size() != 1 || f.has_reduction()) return nullptr;
  const SchedulerNode& n = nodes[static_cast<size_t>(members[0])];
  return n.is_external() || n.is_reduction() ? nullptr : &n;
}

}  // namespace

EpilogueMatch match_epilogue(const SchedulerNode& node, const std::string& input) {
  std::vector<index::Expr> pointwise;
  for (const auto& v : node.vars) pointwise.push_back(index::Expr::var(v.name));
  ChainMatcher matcher(input, node.write.index, node.domain());
  EpilogueMatch m;
  try {
    node.run_body(matcher, pointwise, {});
  } catch (const std::exception& e) {
    // A body that cannot run on the matcher's stand-in values is no chain; never an error.
    m.reason = std::string("its body is not a chain (") + e.what() + ")";
    return m;
  }
  if (matcher.failure.empty() && !matcher.stored_chain) matcher.failure = "it stores nothing";
  m.matches = matcher.failure.empty();
  m.reason = matcher.failure;
  if (m.matches) m.chain = matcher.chain;
  return m;
}

void fuse_epilogues(const std::vector<SchedulerNode>& nodes, std::vector<FusedNode>& groups,
                    const std::set<std::string>& graph_outputs, const EpilogueCheck& check,
                    EpilogueLog& log) {
  if (!check) return;
  std::map<std::string, std::vector<size_t>> readers;  // buffer -> groups reading it
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int id : groups[g].members()) {
      for (const auto& r : nodes[static_cast<size_t>(id)].reads) readers[r.buffer].push_back(g);
    }
  }
  std::vector<bool> absorbed(groups.size(), false);
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<int> members = groups[g].members();
    if (members.size() != 1) continue;
    const SchedulerNode& call = nodes[static_cast<size_t>(members[0])];
    if (!call.is_external()) continue;
    const std::string& out = call.write.buffer;
    const auto& rs = readers[out];
    const std::string who = call.name + " (" + call.buffer->external->op + ")";
    auto refuse = [&](const std::string& why) {
      log.lines.push_back(who + ": no epilogue: " + why);
    };
    if (graph_outputs.count(out)) {
      refuse(out + " is a graph output");
      continue;
    }
    if (rs.size() != 1) {
      refuse(out + " has " + std::to_string(rs.size()) + " readers");
      continue;
    }
    const size_t reader_group = rs[0];
    const SchedulerNode* consumer = lone_pointwise_node(nodes, groups[reader_group]);
    if (consumer == nullptr || absorbed[reader_group]) {
      refuse("its reader " + groups[reader_group].name + " is not one pointwise loop");
      continue;
    }
    if (!consumer->buffer->mutated_input.empty()) {
      // The library would write the input while it may still read it.
      refuse("its reader " + consumer->name + " writes input " + consumer->buffer->mutated_input +
             " in place");
      continue;
    }
    if (consumer->buffer->sizes != call.buffer->sizes ||
        consumer->buffer->strides != call.buffer->strides ||
        consumer->buffer->dtype != call.buffer->dtype) {
      refuse("its reader " + consumer->name + " writes another layout or dtype");
      continue;
    }
    const EpilogueMatch m = match_epilogue(*consumer, out);
    if (!m.matches) {
      refuse("its reader " + consumer->name + " is not a chain the library applies: " + m.reason);
      continue;
    }
    std::string why;
    // A call over size symbols is asked at the hints: whether the library applies the chain
    // rests on the dtypes and the layouts' kinds, which every size shares.
    const lowering::ExternalCall& external = *call.buffer->external;
    if (!check(external.is_symbolic()
                   ? lowering::bind_external_call(external, index::hint_values(call.symbols))
                   : external,
               m.chain, &why)) {
      refuse("the library does not run " + consumer->name + "'s chain: " + why);
      continue;
    }
    std::string chain;
    for (const EpilogueOp& op : m.chain) chain += (chain.empty() ? "" : ", ") + op.to_string();
    log.lines.push_back(who + ": runs " + consumer->name + " (" + chain +
                        ") as its epilogue, writing " + consumer->write.buffer +
                        " directly: saves a pass over " + out + " (" +
                        std::to_string(call.write_dep.bytes(call.symbols)) +
                        " bytes written, read and written again), adds no traffic");
    FusedNode& f = groups[g];
    f.nests[0].nodes.push_back(consumer->id);
    f.name += "_" + consumer->name;
    f.epilogue = m.chain;
    absorbed[reader_group] = true;
  }
  std::vector<FusedNode> kept;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!absorbed[g]) kept.push_back(std::move(groups[g]));
  }
  groups = std::move(kept);
}

}  // namespace stax::scheduler
