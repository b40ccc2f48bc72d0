// The CPU fusion legality rules and the fusion score (Sections 7.1-7.3).
#include "scheduler/fusion_rules.h"

#include "scheduler/compatibility_gpu.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

namespace stax::scheduler {

using index::Expr;
using index::LoopVar;

std::string FusionScore::to_string() const {
  std::ostringstream out;
  out << "(" << type << ", " << shared_bytes << ", " << shared_buffers << ", " << -distance << ")";
  return out.str();
}

bool ranks_higher(const FusionScore& x, const FusionScore& y) {
  const int64_t lo = std::min(x.shared_bytes, y.shared_bytes);
  const int64_t hi = std::max(x.shared_bytes, y.shared_bytes);
  if (hi > 16 * lo) return x.shared_bytes > y.shared_bytes;
  if (x.type != y.type) return x.type > y.type;
  if (x.shared_bytes != y.shared_bytes) return x.shared_bytes > y.shared_bytes;
  if (x.shared_buffers != y.shared_buffers) return x.shared_buffers > y.shared_buffers;
  return x.distance < y.distance;
}

std::string sizes_string(const std::vector<Expr>& sizes) {
  std::string out = "(";
  for (size_t k = 0; k < sizes.size(); ++k) out += (k ? ", " : "") + index::to_string(sizes[k]);
  if (sizes.size() == 1) out += ",";
  return out + ")";
}

std::vector<int> FusedNode::members() const {
  std::vector<int> out;
  for (const auto& nest : nests) out.insert(out.end(), nest.nodes.begin(), nest.nodes.end());
  return out;
}

bool FusedNode::contains(int node_id) const {
  for (const auto& nest : nests) {
    if (std::find(nest.nodes.begin(), nest.nodes.end(), node_id) != nest.nodes.end()) return true;
  }
  return false;
}

bool FusedNode::runs_before(int first, int second) const {
  const std::vector<int> body = members();
  const auto at = [&](int id) {
    const auto it = std::find(body.begin(), body.end(), id);
    if (it == body.end()) throw std::logic_error("op" + std::to_string(id) + " is not in " + name);
    return it - body.begin();
  };
  return at(first) < at(second);
}

bool FusedNode::has_reduction() const {
  for (const auto& nest : nests) {
    if (!nest.reduction_sizes.empty()) return true;
  }
  return false;
}

std::vector<Expr> FusedNode::pointwise_ranges() const {
  std::vector<Expr> out = outer;
  out.insert(out.end(), nests.at(0).sizes.begin(), nests.at(0).sizes.end());
  return out;
}

std::vector<lowering::SourceOp> FusedNode::source_ops(
    const std::vector<SchedulerNode>& nodes) const {
  std::vector<lowering::SourceOp> ops;
  for (int id : members()) {
    ops = lowering::merge_source_ops(ops, nodes.at(static_cast<size_t>(id)).buffer->source_ops);
  }
  return ops;
}

std::string FusedNode::kind_name() const {
  if (outer_loop_fused) return "OuterLoopFusedSchedulerNode";
  if (members().size() > 1) return "FusedSchedulerNode";
  return "SchedulerNode";
}

std::string FusedNode::group_string() const {
  if (!outer_loop_fused) {
    return "(" + sizes_string(pointwise_ranges()) + ", " + sizes_string(reduction_ranges()) + ")";
  }
  std::string out = "outer " + sizes_string(outer) + ":";
  for (size_t k = 0; k < nests.size(); ++k) {
    out += (k ? " ;" : "") + std::string(" (") + sizes_string(nests[k].sizes) + ", " +
           sizes_string(nests[k].reduction_sizes) + ")";
  }
  return out;
}

namespace {

// The end of the run of `fine` extents from `from` whose product is `coarse`, trailing extents
// of 1 included; nullopt when no run has that product. Constant products compare by value (a
// run stops before it passes the coarse extent); symbolic ones by equality of canonical forms
// (issue 33: a run over [s0, 4] closes at 4*s0, at every size).
std::optional<size_t> run_covering(const std::vector<Expr>& fine, size_t from, const Expr& coarse) {
  size_t j = from;
  Expr covered(1);
  auto more = [&] {
    if (j >= fine.size()) return false;
    const auto c = covered.constant_value();
    const auto e = coarse.constant_value();
    const auto f = fine[j].constant_value();
    if (c && e && f) return (*c < *e || *f == 1) && *c * *f <= *e;
    return covered != coarse || fine[j] == Expr(1);
  };
  while (more()) covered = covered * fine[j++];
  if (covered != coarse) return std::nullopt;
  return j;
}

}  // namespace

Placement place(const FusedNode& fused, const SchedulerNode& node) {
  for (size_t k = 0; k < fused.nests.size(); ++k) {
    const LoopNest& nest = fused.nests[k];
    if (std::find(nest.nodes.begin(), nest.nodes.end(), node.id) == nest.nodes.end()) continue;
    Placement p;
    p.nest = k;
    const size_t pointwise_loops = fused.outer.size() + nest.sizes.size();
    for (size_t j = 0; j < pointwise_loops; ++j)
      p.pointwise.push_back(Expr::var("x" + std::to_string(j)));
    std::vector<Expr> red;
    for (size_t j = 0; j < nest.reduction_sizes.size(); ++j) {
      red.push_back(Expr::var("r" + std::to_string(j)));
    }
    std::vector<Expr> extents = fused.outer;
    extents.insert(extents.end(), nest.sizes.begin(), nest.sizes.end());
    std::vector<Expr> node_extents;
    for (const index::LoopVar& v : node.vars) node_extents.push_back(v.extent);
    const Expr node_count = element_count(node_extents);
    if (node.is_reduction() || nest.reduction_sizes.empty()) {
      p.reduction = red;
    } else {
      // A pointwise node inside a reduction nest walks the reduction loops as its own.
      p.pointwise.insert(p.pointwise.end(), red.begin(), red.end());
      extents.insert(extents.end(), nest.reduction_sizes.begin(), nest.reduction_sizes.end());
    }
    if (node_extents != extents) {
      // The node's loops are a coarsening of the nest's (its loop simplification merged
      // loops that the nest keeps apart): each of its variables is the row-major combination
      // of a run of the nest's variables.
      std::vector<Expr> regrouped;
      size_t fine = 0;
      for (const index::LoopVar& v : node.vars) {
        const std::optional<size_t> end = run_covering(extents, fine, v.extent);
        if (!end) break;
        Expr combined(0);
        for (; fine < *end; ++fine) combined = combined * extents[fine] + p.pointwise[fine];
        regrouped.push_back(combined);
      }
      if (regrouped.size() != node.vars.size()) {
        // The GPU's element-count nests: the node's loops are no re-grouping of the nest's,
        // only as many elements. Each variable is div/mod of the nest's flat row-major index.
        if (node_count != element_count(extents)) {
          throw std::logic_error(node.name + " does not fit " + fused.name);
        }
        Expr flat(0);
        for (size_t j = 0; j < extents.size(); ++j) flat = flat * extents[j] + p.pointwise[j];
        regrouped.assign(node.vars.size(), Expr(0));
        Expr inner(1);
        for (size_t k = node.vars.size(); k-- > 0;) {
          regrouped[k] = index::mod(index::floordiv(flat, inner), node.vars[k].extent);
          inner = inner * node.vars[k].extent;
        }
      }
      p.pointwise = regrouped;
    }
    return p;
  }
  throw std::logic_error(node.name + " is not part of " + fused.name);
}

std::vector<LoopVar> nest_inner_loops(const FusedNode& fused, size_t nest) {
  std::vector<LoopVar> loops;
  const LoopNest& n = fused.nests.at(nest);
  for (size_t j = 0; j < n.sizes.size(); ++j) {
    loops.push_back({"x" + std::to_string(fused.outer.size() + j), n.sizes[j]});
  }
  for (size_t j = 0; j < n.reduction_sizes.size(); ++j) {
    loops.push_back({"r" + std::to_string(j), n.reduction_sizes[j]});
  }
  return loops;
}

index::Domain nest_domain(const FusedNode& fused, size_t nest, const index::SymbolTable& symbols) {
  std::map<std::string, Expr> extents;
  for (size_t j = 0; j < fused.outer.size(); ++j) extents["x" + std::to_string(j)] = fused.outer[j];
  for (const LoopVar& v : nest_inner_loops(fused, nest)) extents[v.name] = v.extent;
  return index::Domain(std::move(extents), symbols);
}

index::RangeMap nest_ranges(const FusedNode& fused, size_t nest) {
  index::RangeMap r;
  for (size_t j = 0; j < fused.outer.size(); ++j) {
    r["x" + std::to_string(j)] =
        index::static_extent({"x" + std::to_string(j), fused.outer[j]}, "code generation");
  }
  for (const LoopVar& v : nest_inner_loops(fused, nest)) {
    r[v.name] = index::static_extent(v, "code generation");
  }
  return r;
}

Expr placed_index(const FusedNode& fused, const SchedulerNode& node, const Expr& idx,
                  const Placement& p) {
  std::map<std::string, Expr> rename;
  for (size_t k = 0; k < node.vars.size(); ++k) rename[node.vars[k].name] = p.pointwise.at(k);
  for (size_t k = 0; k < node.reduction_vars.size(); ++k) {
    rename[node.reduction_vars[k].name] = p.reduction.at(k);
  }
  return index::simplify(index::substitute(idx, rename), nest_domain(fused, p.nest, node.symbols));
}

bool coarsens(const std::vector<Expr>& coarse, const std::vector<Expr>& fine) {
  if (coarse.size() >= fine.size()) return false;
  size_t j = 0;
  for (const Expr& c : coarse) {
    const std::optional<size_t> end = run_covering(fine, j, c);
    if (!end) return false;
    j = *end;
  }
  return j == fine.size();
}

FusionRules::FusionRules(const std::vector<SchedulerNode>& nodes, FusionLimits limits)
    : nodes_(nodes), limits_(limits) {}

// A fused node's name lists its members, so it identifies the member set the summary is of;
// Algorithm 7.1 asks about the same group in many pairs of a round and across rounds.
const FusionRules::GroupSummary& FusionRules::summary(const FusedNode& f) const {
  auto [it, inserted] = summaries_.try_emplace(f.name);
  GroupSummary& s = it->second;
  if (!inserted) return s;
  const auto members = f.members();
  s.position = *std::min_element(members.begin(), members.end());
  for (int id : members) {
    const SchedulerNode& n = nodes_[static_cast<size_t>(id)];
    s.deps.insert(n.read_deps.begin(), n.read_deps.end());
    s.deps.insert(n.write_dep);
    s.written.insert(n.write.buffer);
    for (const auto& r : n.reads) s.read.insert(r.buffer);
    for (const auto& b : n.buffers()) s.buffers.insert(b);
    s.members.insert(id);
    for (const WeakDep& w : n.weak_deps) s.runs_after.insert(w.before);
  }
  return s;
}

int FusionRules::position(const FusedNode& n) const {
  return summary(n).position;
}

bool FusionRules::has_edge(const FusedNode& from, const FusedNode& to) const {
  const auto& written = summary(from).written;
  for (const auto& r : summary(to).read) {
    if (written.count(r)) return true;
  }
  for (int before : summary(to).runs_after) {
    if (summary(from).members.count(before)) return true;
  }
  return false;
}

std::string FusionRules::check_in_place_writes(const FusedNode& fused, const FusedNode& a,
                                               const FusedNode& b) const {
  for (const auto& [writers, readers] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    for (int w : writers->members()) {
      const SchedulerNode& writer = nodes_[static_cast<size_t>(w)];
      const std::string& input = writer.buffer->mutated_input;
      if (input.empty()) continue;
      const MemoryDep written = in_place_write_dep(writer);
      for (int r : readers->members()) {
        std::string why = in_place_conflict(writer, written, nodes_[static_cast<size_t>(r)],
                                            fused.runs_before(w, r));
        if (!why.empty()) return why;
      }
    }
  }
  return "";
}

FusionScore FusionRules::score(const FusedNode& a, const FusedNode& b) const {
  FusionScore s;
  const GroupSummary& sa = summary(a);
  const GroupSummary& sb = summary(b);
  for (const MemoryDep& d : sa.deps) {
    if (sb.deps.count(d)) s.shared_bytes += d.bytes(nodes_.front().symbols);
  }
  for (const auto& name : sa.buffers) s.shared_buffers += static_cast<int>(sb.buffers.count(name));
  s.type = (a.has_reduction() == b.has_reduction() && s.shared_bytes > 0) ? 1 : 0;
  s.distance = std::abs(sa.position - sb.position);
  return s;
}

// Checks every producer/consumer pair across a and b inside the proposed fused node.
std::string FusionRules::check_accesses(const FusedNode& fused, const FusedNode& a,
                                        const FusedNode& b) const {
  std::map<std::string, int> writer;
  for (int id : fused.members()) writer[nodes_[static_cast<size_t>(id)].write.buffer] = id;
  for (int reader_id : fused.members()) {
    const SchedulerNode& reader = nodes_[static_cast<size_t>(reader_id)];
    for (const Access& read : reader.reads) {
      auto it = writer.find(read.buffer);
      if (it == writer.end()) continue;
      const SchedulerNode& producer = nodes_[static_cast<size_t>(it->second)];
      const bool crosses = (a.contains(producer.id) && b.contains(reader.id)) ||
                           (b.contains(producer.id) && a.contains(reader.id));
      if (!crosses) continue;
      const Placement pw = place(fused, producer);
      const Placement pr = place(fused, reader);
      const Expr w = placed_index(fused, producer, producer.write.index, pw);
      const Expr r = placed_index(fused, reader, read.index, pr);
      if (pw.nest == pr.nest) {
        if (producer.is_reduction()) {
          return reader.name + " reads " + read.buffer + ", the result of reduction " +
                 producer.name + ", inside the same loop";
        }
        if (w != r) {
          return reader.name + " reads " + read.buffer + " at " + index::to_string(r) + " but " +
                 producer.name + " writes it at " + index::to_string(w) + " (Proposition 7.2)";
        }
      } else {
        if (pw.nest > pr.nest) {
          return reader.name + " would run before its producer " + producer.name;
        }
        const auto cw = index::collapse(w, nest_inner_loops(fused, pw.nest), "c", producer.symbols);
        const auto cr = index::collapse(r, nest_inner_loops(fused, pr.nest), "c", reader.symbols);
        if (!(cw == cr)) {
          return reader.name + " reads " + read.buffer + " outside the outer iteration that " +
                 producer.name + " writes (" + index::to_string(r) + " vs " + index::to_string(w) +
                 ")";
        }
      }
    }
  }
  return "";
}

FusionDecision FusionRules::try_same_nest(const FusedNode& a, const FusedNode& b,
                                          bool vertical) const {
  FusionDecision d;
  d.vertical = vertical;
  if (a.outer_loop_fused || b.outer_loop_fused || a.nests.size() != 1 || b.nests.size() != 1) {
    d.reason = "an outer-loop fused node only fuses by outer loops";
    return d;
  }
  const auto pa = a.pointwise_ranges();
  const auto pb = b.pointwise_ranges();
  const auto ra = a.reduction_ranges();
  const auto rb = b.reduction_ranges();
  auto joined = [](std::vector<Expr> x, const std::vector<Expr>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  LoopNest nest;
  if (pa == pb && ra == rb) {
    d.reason = "SAME_VARS_REDUCE";
    nest = {pa, ra, {}};
  } else if (ra.empty() && !rb.empty() && pa == joined(pb, rb)) {
    d.reason = "COMPATIBLE_REDUCTION";
    nest = {pb, rb, {}};
  } else if (rb.empty() && !ra.empty() && pb == joined(pa, ra)) {
    d.reason = "COMPATIBLE_REDUCTION";
    nest = {pa, ra, {}};
  } else if (ra.empty() && rb.empty() && coarsens(pa, pb)) {
    d.reason = "COMPATIBLE_RANGES_NO_REDUCTION";
    nest = {pb, {}, {}};
  } else if (ra.empty() && rb.empty() && coarsens(pb, pa)) {
    d.reason = "COMPATIBLE_RANGES_NO_REDUCTION";
    nest = {pa, {}, {}};
  } else {
    d.reason = "iteration groups " + a.group_string() + " and " + b.group_string() +
               " differ (Definition 7.2)";
    return d;
  }
  nest.nodes = a.nests[0].nodes;
  nest.nodes.insert(nest.nodes.end(), b.nests[0].nodes.begin(), b.nests[0].nodes.end());
  d.fused.name = a.name + "_" + b.name;
  d.fused.nests = {nest};
  if (std::string why = check_accesses(d.fused, a, b); !why.empty()) {
    d.reason = why;
    return d;
  }
  d.accepted = true;
  return d;
}

namespace {

// A column reduction: some load walks the node's innermost output loop contiguously and its
// innermost reduction loop with a stride (a sum over the rows of a row-major matrix). Code
// generation vectorizes it along the output loop, one output per lane (kernel_form.cpp).
const Access* column_reduction_load(const SchedulerNode& n) {
  if (!n.is_reduction() || n.vars.empty() || n.reduction_vars.empty()) return nullptr;
  const index::Domain ranges = n.domain();
  for (const Access& read : n.reads) {
    const auto along_output = index::stride(read.index, n.vars.back().name, ranges);
    const auto along_reduction = index::stride(read.index, n.reduction_vars.back().name, ranges);
    if (along_output == 1 &&
        (!along_reduction || (*along_reduction != 0 && *along_reduction != 1))) {
      return &read;
    }
  }
  return nullptr;
}

}  // namespace

FusionDecision FusionRules::try_outer_loop(const FusedNode& a, const FusedNode& b) const {
  FusionDecision d;
  d.vertical = has_edge(a, b);
  const auto la = a.outer_loop_fused ? a.outer : a.pointwise_ranges();
  const auto lb = b.outer_loop_fused ? b.outer : b.pointwise_ranges();
  size_t depth = 0;
  while (depth < la.size() && depth < lb.size() && la[depth] == lb[depth]) ++depth;
  if (depth == 0) {
    d.reason = "outer-loop fusion depth 0: iteration groups " + a.group_string() + " and " +
               b.group_string() + " share no outer loop";
    return d;
  }
  FusedNode f;
  f.name = a.name + "_" + b.name;
  f.outer.assign(la.begin(), la.begin() + static_cast<std::ptrdiff_t>(depth));
  f.outer_loop_fused = true;
  for (const FusedNode* part : {&a, &b}) {
    for (const LoopNest& nest : part->nests) {
      LoopNest moved = nest;
      std::vector<Expr> inner(part->outer.begin(), part->outer.end());
      inner.insert(inner.end(), nest.sizes.begin(), nest.sizes.end());
      moved.sizes.assign(inner.begin() + static_cast<std::ptrdiff_t>(depth), inner.end());
      f.nests.push_back(moved);
    }
  }
  // Sharing every output loop of a column reduction leaves its reduction loop innermost
  // alone: each output becomes a strided walk down its column, which no vector form reads
  // contiguously, where on its own it reads whole rows, one output per lane.
  for (const LoopNest& nest : f.nests) {
    if (!nest.sizes.empty()) continue;
    for (int id : nest.nodes) {
      const SchedulerNode& n = nodes_[static_cast<size_t>(id)];
      if (const Access* load = column_reduction_load(n)) {
        d.reason = "outer-loop fusion depth " + std::to_string(depth) +
                   " would make every loop of " + n.name +
                   "'s output outer: a column reduction (its load of " + load->buffer +
                   " walks the rows with a stride) would walk each column alone instead of "
                   "reading rows, one output per vector lane";
        return d;
      }
    }
  }
  d.fused = f;
  if (std::string why = check_accesses(f, a, b); !why.empty()) {
    d.reason = why;
    return d;
  }
  d.reason = "OUTER_LOOP_FUSED depth " + std::to_string(depth);
  d.accepted = true;
  return d;
}

const SchedulerNode* FusionRules::strict_order_member(const FusedNode& f) const {
  for (int id : f.members()) {
    const SchedulerNode& n = nodes_[static_cast<size_t>(id)];
    if (!n.strict_order.empty()) return &n;
  }
  return nullptr;
}

FusionDecision FusionRules::can_fuse(const FusedNode& first, const FusedNode& second,
                                     const RaisedPeak& raised_peak) const {
  // Order the pair so that nothing in `a` depends on `b`.
  const bool ab = has_edge(first, second);
  const bool ba = has_edge(second, first);
  FusionDecision rejected;
  if (ab && ba) {
    rejected.reason = first.name + " and " + second.name + " depend on each other";
    return rejected;
  }
  const bool swap = ba || (!ab && position(second) < position(first));
  const FusedNode& a = swap ? second : first;
  const FusedNode& b = swap ? first : second;
  const bool vertical = ab || ba;

  rejected.score = score(a, b);
  rejected.vertical = vertical;
  // Section 7.3: "two reductions that require a strict reduction order cannot be fused".
  // A rule of its own, whatever else refuses the pair: a fused node walks one order for all
  // its members.
  const SchedulerNode* strict_a = strict_order_member(a);
  const SchedulerNode* strict_b = strict_order_member(b);
  if (strict_a != nullptr && strict_b != nullptr) {
    rejected.reason = strict_a->name + " and " + strict_b->name +
                      " both require a strict reduction order (" + strict_a->strict_order + "; " +
                      strict_b->strict_order + "): two such reductions are never fused";
    return rejected;
  }
  // An external call runs a library routine over whole buffers (its dependences are
  // WholeDeps): there is no loop of its own for another node to share.
  for (const FusedNode* f : {&a, &b}) {
    for (int id : f->members()) {
      const SchedulerNode& n = nodes_[static_cast<size_t>(id)];
      if (!n.is_external()) continue;
      rejected.reason = n.name + " is an external call (" + n.buffer->external->library +
                        "): it reads and writes whole buffers (WholeDep), no loop to share";
      return rejected;
    }
  }
  // Section 7.3: at most 128 nodes after fusion.
  const size_t members = a.members().size() + b.members().size();
  if (members > limits_.max_nodes) {
    rejected.reason = std::to_string(members) + " nodes after fusion: more than " +
                      std::to_string(limits_.max_nodes);
    return rejected;
  }
  // Section 7.3: at most 32 distinct buffers involved.
  const size_t buffers = summary(a).buffers.size() + summary(b).buffers.size() -
                         static_cast<size_t>(rejected.score.shared_buffers);
  if (buffers > limits_.max_buffers) {
    rejected.reason = std::to_string(buffers) + " distinct buffers after fusion: more than " +
                      std::to_string(limits_.max_buffers);
    return rejected;
  }
  // Section 7.3: shared data bytes no lower than a threshold.
  if (rejected.score.shared_bytes < limits_.min_shared_bytes) {
    rejected.reason = rejected.score.shared_bytes == 0
                          ? "no shared data with identical indices (score 0)"
                          : std::to_string(rejected.score.shared_bytes) +
                                " bytes of shared data: below the threshold of " +
                                std::to_string(limits_.min_shared_bytes);
    return rejected;
  }
  // The loop rules of the device: the CPU's one nest or shared outer loops; the GPU's one
  // nest by element count or rows (fusion_rules_gpu.cpp).
  const bool gpu = limits_.device == lowering::Device::Gpu;
  FusionDecision fused = gpu ? try_same_nest_gpu(a, b, vertical) : try_same_nest(a, b, vertical);
  if (!fused.accepted) {
    FusionDecision other = gpu ? try_rows_gpu(a, b, vertical) : try_outer_loop(a, b);
    other.vertical = vertical;
    if (!other.accepted) {
      rejected.reason = fused.reason + "; " + other.reason;
      return rejected;
    }
    fused = std::move(other);
  }
  // Issue 16, point 6: an in-place write shares a loop only with reads of the same element,
  // none of them later in the loop body than the write.
  if (std::string why = check_in_place_writes(fused.fused, a, b); !why.empty()) {
    rejected.reason = why;
    return rejected;
  }
  fused.score = rejected.score;
  // Section 7.3: horizontal fusion must not extend the lifetime of what the two share so far
  // that peak memory rises; Definition 7.5's simulation decides (fusion_peak.h).
  if (!vertical && raised_peak) {
    if (const std::optional<PeakChange> peak = raised_peak()) {
      rejected.reason = "horizontal fusion would raise the simulated peak from " +
                        std::to_string(peak->before) + " to " + std::to_string(peak->after) +
                        " bytes (Definition 7.5)";
      return rejected;
    }
  }
  return fused;
}

}  // namespace stax::scheduler
