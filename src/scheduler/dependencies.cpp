// Building scheduler nodes: loop simplification, read/write recording and dependence
// normalization (Section 7.1, Example 7.1).
#include "scheduler/dependencies.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "index/shape_exprs.h"
#include "ir/scan_args.h"
#include "scheduler/recording_handler.h"

namespace stax::scheduler {

using index::Expr;
using index::LoopVar;

int64_t MemoryDep::numel(const index::SymbolTable& symbols) const {
  Expr n(1);
  for (const auto& v : ranges) n = n * v.extent;
  return index::value_at_hints(n, symbols);
}

int64_t MemoryDep::bytes(const index::SymbolTable& symbols) const {
  return numel(symbols) * static_cast<int64_t>(dtype_size(dtype));
}

std::string MemoryDep::to_string() const {
  std::ostringstream out;
  out << "MemoryDep('" << buffer << "', " << index::to_string(index) << ", {";
  for (size_t k = 0; k < ranges.size(); ++k) {
    out << (k ? ", " : "") << ranges[k].name << ": " << index::to_string(ranges[k].extent);
  }
  out << "})";
  return out.str();
}

bool operator==(const MemoryDep& a, const MemoryDep& b) {
  return a.buffer == b.buffer && a.index == b.index && a.ranges == b.ranges;
}

bool operator<(const MemoryDep& a, const MemoryDep& b) {
  if (a.buffer != b.buffer) return a.buffer < b.buffer;
  if (a.index != b.index) return a.index < b.index;
  if (a.ranges.size() != b.ranges.size()) return a.ranges.size() < b.ranges.size();
  for (size_t k = 0; k < a.ranges.size(); ++k) {
    if (a.ranges[k].name != b.ranges[k].name) return a.ranges[k].name < b.ranges[k].name;
    if (a.ranges[k].extent != b.ranges[k].extent) return a.ranges[k].extent < b.ranges[k].extent;
  }
  return false;
}

int64_t WholeDep::bytes() const {
  return numel * static_cast<int64_t>(dtype_size(dtype));
}

std::string WholeDep::to_string() const {
  return "WholeDep('" + buffer + "')";
}

std::string WeakDep::to_string() const {
  return "WeakDep('" + buffer + "', before op" + std::to_string(before) + ")";
}

MemoryDep normalize_dep(const std::string& buffer, const Expr& idx,
                        const std::vector<LoopVar>& loops, DType dtype,
                        const index::SymbolTable& symbols) {
  index::CollapsedIndex c = index::collapse(idx, loops, "c", symbols);
  return MemoryDep{buffer, c.index, c.vars, dtype};
}

std::vector<Expr> SchedulerNode::sizes() const {
  std::vector<Expr> out;
  for (const auto& v : vars) out.push_back(v.extent);
  return out;
}

std::vector<Expr> SchedulerNode::reduction_sizes() const {
  std::vector<Expr> out;
  for (const auto& v : reduction_vars) out.push_back(v.extent);
  return out;
}

index::Domain SchedulerNode::domain() const {
  std::map<std::string, Expr> extents;
  for (const auto& v : vars) extents[v.name] = v.extent;
  for (const auto& v : reduction_vars) extents[v.name] = v.extent;
  return index::Domain(std::move(extents), symbols);
}

namespace {

std::vector<LoopVar> make_vars(const std::vector<Expr>& extents, const std::string& prefix) {
  std::vector<LoopVar> vars;
  for (size_t k = 0; k < extents.size(); ++k) {
    vars.push_back({prefix + std::to_string(k), extents[k]});
  }
  return vars;
}

std::vector<Expr> as_exprs(const std::vector<LoopVar>& vars) {
  std::vector<Expr> out;
  for (const auto& v : vars) out.push_back(Expr::var(v.name));
  return out;
}

index::Domain domain_of(const std::vector<LoopVar>& a, const std::vector<LoopVar>& b,
                        const index::SymbolTable& symbols) {
  std::map<std::string, Expr> extents;
  for (const auto& v : a) extents[v.name] = v.extent;
  for (const auto& v : b) extents[v.name] = v.extent;
  return index::Domain(std::move(extents), symbols);
}

}  // namespace

void SchedulerNode::run_body(lowering::OpsHandler& handler, const std::vector<Expr>& pointwise,
                             const std::vector<Expr>& reduction) const {
  std::map<std::string, Expr> rename;
  for (size_t k = 0; k < vars.size(); ++k) rename[vars[k].name] = pointwise.at(k);
  for (size_t k = 0; k < reduction_vars.size(); ++k) {
    rename[reduction_vars[k].name] = reduction.at(k);
  }
  std::vector<Expr> idx;
  std::vector<Expr> ridx;
  for (size_t k = 0; k < buffer->ranges.size(); ++k) {
    idx.push_back(index::substitute(original_index.at("i" + std::to_string(k)), rename));
  }
  for (size_t k = 0; k < buffer->reduction_ranges.size(); ++k) {
    ridx.push_back(index::substitute(original_index.at("j" + std::to_string(k)), rename));
  }
  buffer->run_body(handler, idx, ridx);
}

std::vector<std::string> SchedulerNode::buffers() const {
  std::vector<std::string> out;
  for (const auto& r : reads) {
    if (std::find(out.begin(), out.end(), r.buffer) == out.end()) out.push_back(r.buffer);
  }
  if (std::find(out.begin(), out.end(), write.buffer) == out.end()) out.push_back(write.buffer);
  return out;
}

namespace {

// Section 7.3's "reductions that require a strict reduction order": a scan, whose element k
// of a line combines every element before it, in order; a scatter, whose output elements each
// combine their values in the order eager visits the positions (the last write wins, a float
// sum adds in that order: external/scatter.h).
std::string strict_order_of(const lowering::ExternalCall& call) {
  if (call.scan) {
    return call.op + " carries a running " + ir::scan_kind_name(call.scan->kind) + " along dim " +
           std::to_string(call.scan->dim) + ", each element after every one before it";
  }
  if (call.scatter) {
    return call.op + " combines the values of each output element in the order eager visits " +
           "its positions";
  }
  return "";
}

// An external call's node: whole dependences on its operands, and a write of its whole output
// over one loop of its element count (what the liveness passes and the fusion log print).
SchedulerNode make_external_node(SchedulerNode node, const lowering::ComputedBuffer& buffer) {
  node.kind = NodeKind::External;
  node.vars = {{"x0", buffer.numel()}};
  for (const lowering::ExternalOperand* op : buffer.external->operands()) {
    // At the hints for an operand over size symbols (the cost model's and the logs' count).
    const int64_t numel = index::value_at_hints(index::product(op->sizes), node.symbols);
    WholeDep dep{op->buffer, op->dtype, numel};
    if (std::find(node.whole_read_deps.begin(), node.whole_read_deps.end(), dep) !=
        node.whole_read_deps.end()) {
      continue;
    }
    node.whole_read_deps.push_back(dep);
    node.reads.push_back({op->buffer, Expr(0), op->dtype});
  }
  node.write = {buffer.name, Expr::var("x0"), buffer.dtype};
  node.write_dep = MemoryDep{buffer.name, Expr::var("c0"), {{"c0", buffer.numel()}}, buffer.dtype};
  node.strict_order = strict_order_of(*buffer.external);
  return node;
}

}  // namespace

SchedulerNode make_scheduler_node(int id, const lowering::ComputedBuffer& buffer,
                                  const index::SymbolTable& symbols) {
  SchedulerNode node;
  node.id = id;
  node.name = "op" + std::to_string(id);
  node.buffer = &buffer;
  node.symbols = symbols;
  if (buffer.is_external()) return make_external_node(std::move(node), buffer);

  // Record with the buffer's own loop variables to find which loops can be merged.
  const auto pw = make_vars(buffer.ranges, "i");
  const auto red = make_vars(buffer.reduction_ranges, "j");
  const index::Domain raw_ranges = domain_of(pw, red, symbols);
  RecordingHandler raw;
  buffer.run_body(raw, as_exprs(pw), as_exprs(red));
  std::vector<Expr> indices;
  for (const auto& r : raw.loads) indices.push_back(index::simplify(r.index, raw_ranges));
  for (const auto& s : raw.stores) indices.push_back(index::simplify(s.index, raw_ranges));

  std::vector<Expr> values;
  for (const Expr& v : raw.index_values) values.push_back(index::simplify(v, raw_ranges));
  index::MergedLoops merged_pw = index::merge_loops(pw, indices, "x", symbols, values);
  index::MergedLoops merged_red = index::merge_loops(red, indices, "r", symbols, values);
  node.vars = merged_pw.vars;
  node.reduction_vars = merged_red.vars;
  if (buffer.is_reduction() && node.reduction_vars.empty()) {
    // A reduction over extent-1 dims only: keep one trivial loop, so that the node is still
    // scheduled and generated as a reduction (its old variables were all mapped to 0).
    node.reduction_vars = {{"r0", 1}};
  }
  node.original_index = merged_pw.old_to_new;
  node.original_index.insert(merged_red.old_to_new.begin(), merged_red.old_to_new.end());

  // Record again over the simplified loops.
  RecordingHandler rec;
  node.run_body(rec, as_exprs(node.vars), as_exprs(node.reduction_vars));
  const index::Domain ranges = node.domain();
  std::vector<LoopVar> all_loops = node.vars;
  all_loops.insert(all_loops.end(), node.reduction_vars.begin(), node.reduction_vars.end());

  // An indirect variable (gather, index_select, embedding, index.Tensor) takes a value known
  // only at run time, so a read through one may touch any element in its range: its
  // dependence is on the whole range of the buffer it can reach (Definition 7.1), not on an
  // index over the loops. Its Access keeps the real index: fusion compares that with the
  // producer's write index, which never contains an indirect variable, so a node never
  // shares a loop with the producer of what it reads indirectly (Proposition 7.2).
  index::Domain reach = ranges;
  std::set<std::string> indirect_vars;
  for (const auto& ind : rec.indirect) {
    reach.extents[ind.var] = Expr(ind.size);
    indirect_vars.insert(ind.var);
  }
  auto is_indirect = [&](const Expr& idx) {
    for (const auto& v : index::free_vars(idx)) {
      if (indirect_vars.count(v)) return true;
    }
    return false;
  };
  std::set<std::pair<std::string, Expr>> seen;
  for (const auto& r : rec.loads) {
    Expr idx = index::simplify(r.index, ranges);
    if (!seen.insert({r.buffer, idx}).second) continue;
    node.reads.push_back({r.buffer, idx, r.dtype});
    MemoryDep dep = normalize_dep(r.buffer, idx, all_loops, r.dtype, symbols);
    if (is_indirect(idx)) {
      const std::optional<index::Interval> b = index::bounds(idx, reach);
      if (!b || b->lo < 0) {
        throw std::logic_error("indirect read of " + r.buffer + " at " + index::to_string(idx) +
                               " has no bounded range");
      }
      dep = MemoryDep{r.buffer, Expr::var("c0"), {{"c0", b->hi + 1}}, r.dtype};
    }
    if (std::find(node.read_deps.begin(), node.read_deps.end(), dep) == node.read_deps.end()) {
      node.read_deps.push_back(dep);
    }
  }
  const auto& st = rec.stores.at(0);
  node.write = {st.buffer, index::simplify(st.index, ranges), st.dtype};
  node.write_dep = normalize_dep(st.buffer, node.write.index, all_loops, st.dtype, symbols);
  return node;
}

void add_weak_dependences(std::vector<SchedulerNode>& nodes) {
  // The readers of each written input, found in one pass over all reads: asking every node
  // about every written input cost written inputs x nodes (issue 32).
  std::unordered_map<std::string, std::vector<int>> readers;
  for (const SchedulerNode& n : nodes) {
    if (!n.buffer->mutated_input.empty())
      readers.emplace(n.buffer->mutated_input, std::vector<int>{});
  }
  if (readers.empty()) return;
  for (const SchedulerNode& reader : nodes) {
    for (const Access& r : reader.reads) {
      auto it = readers.find(r.buffer);
      if (it != readers.end() && (it->second.empty() || it->second.back() != reader.id)) {
        it->second.push_back(reader.id);
      }
    }
  }
  for (SchedulerNode& writer : nodes) {
    const std::string& input = writer.buffer->mutated_input;
    if (input.empty()) continue;
    for (int reader : readers.at(input)) {
      if (reader == writer.id) continue;  // its own reads agree with its write (lowering)
      writer.weak_deps.push_back(WeakDep{input, reader});
    }
  }
}

std::vector<std::pair<int, int>> weak_edges(const std::vector<SchedulerNode>& nodes) {
  std::vector<std::pair<int, int>> edges;
  for (const SchedulerNode& n : nodes) {
    for (const WeakDep& w : n.weak_deps) edges.emplace_back(w.before, n.id);
  }
  return edges;
}

std::string in_place_conflict(const SchedulerNode& writer, const MemoryDep& written,
                              const SchedulerNode& reader, bool reader_runs_later) {
  for (const MemoryDep& d : reader.read_deps) {
    if (d.buffer != written.buffer) continue;
    // A reader after the writer in the loop body reads the new contents even at the element
    // written: in one outer iteration it sees the slice the writer has just overwritten.
    if (!(d == written) || reader_runs_later) {
      return reader.name + " reads " + written.buffer + " (" + d.to_string() + ") where " +
             writer.name + " writes it in place (" + written.to_string() +
             "): in one loop an element could be overwritten before it is read";
    }
  }
  return "";
}

MemoryDep in_place_write_dep(const SchedulerNode& node) {
  MemoryDep dep = node.write_dep;
  dep.buffer = node.buffer->mutated_input;
  return dep;
}

}  // namespace stax::scheduler
