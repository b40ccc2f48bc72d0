// The GPU's fusion rules (issue 35; Section 7.1's last paragraph): Definition 7.2 by element
// count. Two nodes share one loop nest when their element counts agree
// (compatibility_gpu.h). A pointwise node whose N = n·r elements split into a reduction's n
// rows, but which reads the reduction's result (x / x.sum(-1), condition 3's second case),
// cannot run inside the reduction loop: it joins as the work over each row after the
// reduction, a kernel whose rows are the reduction's outputs, each one group of threads — the
// form Inductor's persistent and looped reductions give softmax and layer norm. In Stax's IR
// that is a fused node with the rows as its outer loops and one nest per phase.
#include "scheduler/compatibility_gpu.h"
#include "scheduler/fusion_rules.h"

namespace stax::scheduler {

using index::Expr;

FusionDecision FusionRules::try_same_nest_gpu(const FusedNode& a, const FusedNode& b,
                                              bool vertical) const {
  FusionDecision d;
  d.vertical = vertical;
  if (a.outer_loop_fused || b.outer_loop_fused) {
    d.reason = "GPU: a node of rows fuses by its rows";
    return d;
  }
  const GpuCompatibility c = gpu_compatibility(a.pointwise_ranges(), a.reduction_ranges(),
                                               b.pointwise_ranges(), b.reduction_ranges());
  d.reason = c.reason;
  if (!c.compatible) return d;
  if (c.once_per_output) {
    // One element per output of the reduction: it runs before or after the reduction loop,
    // not inside it, so the pair is a node of rows (try_rows_gpu).
    d.reason = c.reason + ": a nest of its own in each row";
    return d;
  }
  LoopNest nest{c.sizes, c.reduction_sizes, a.nests[0].nodes};
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

// A fused node seen as rows: its row ranges and its nests inside one row. A node of rows
// already is one; a reduction's rows are its outputs; a pointwise node has no rows of its own
// and is split into the other side's (split_into).
struct Rows {
  bool has_rows = false;
  std::vector<Expr> outer;
  std::vector<LoopNest> nests;
};

Rows rows_of(const FusedNode& f) {
  Rows r;
  if (f.outer_loop_fused) {
    r.has_rows = true;
    r.outer = f.outer;
    r.nests = f.nests;
  } else if (f.has_reduction()) {
    r.has_rows = true;
    r.outer = f.pointwise_ranges();
    r.nests = {LoopNest{{}, f.reduction_ranges(), f.nests[0].nodes}};
  }
  return r;
}

// A pointwise node's N = n·m elements as n rows of m (Definition 7.2's split, cutting at most
// one range): the row's inner ranges are the ranges after the cut, or m flat.
std::optional<LoopNest> split_into(const FusedNode& pointwise, const Expr& n) {
  const std::vector<Expr> p = pointwise.pointwise_ranges();
  const Expr total = element_count(p);
  std::vector<Expr> inner;
  Expr prefix(1);
  size_t k = 0;
  while (k < p.size() && prefix != n) prefix = prefix * p[k++];
  Expr m(0);
  if (prefix == n) {
    inner.assign(p.begin() + static_cast<std::ptrdiff_t>(k), p.end());
    m = element_count(inner);
  } else {
    const auto t = total.constant_value();
    const auto rows = n.constant_value();
    if (!t || !rows || *rows == 0 || *t % *rows != 0) return std::nullopt;
    m = Expr(*t / *rows);
    inner = {m};
  }
  if (!splits_as(p, n, m)) return std::nullopt;
  return LoopNest{inner, {}, pointwise.nests[0].nodes};
}

}  // namespace

FusionDecision FusionRules::try_rows_gpu(const FusedNode& a, const FusedNode& b,
                                         bool vertical) const {
  FusionDecision d;
  d.vertical = vertical;
  Rows ra = rows_of(a);
  Rows rb = rows_of(b);
  if (!ra.has_rows && !rb.has_rows) {
    d.reason = "GPU: no reduction to give rows";
    return d;
  }
  const Expr n = element_count(ra.has_rows ? ra.outer : rb.outer);
  for (auto [rows, node] : {std::pair{&ra, &a}, std::pair{&rb, &b}}) {
    if (rows->has_rows) continue;
    const std::optional<LoopNest> split = split_into(*node, n);
    if (!split) {
      d.reason = "GPU: the " + index::to_string(element_count(node->pointwise_ranges())) +
                 " elements of " + node->name + " do not split into " + index::to_string(n) +
                 " rows (Definition 7.2)";
      return d;
    }
    rows->has_rows = true;
    rows->outer = ra.has_rows && rows == &rb ? ra.outer : rb.outer;
    rows->nests = {*split};
  }
  if (element_count(ra.outer) != element_count(rb.outer)) {
    d.reason = "GPU: " + index::to_string(element_count(ra.outer)) + " rows and " +
               index::to_string(element_count(rb.outer)) + " rows differ";
    return d;
  }
  FusedNode f;
  f.name = a.name + "_" + b.name;
  f.outer_loop_fused = true;
  f.outer = ra.outer == rb.outer ? ra.outer : std::vector<Expr>{n};
  f.nests = ra.nests;
  f.nests.insert(f.nests.end(), rb.nests.begin(), rb.nests.end());
  if (std::string why = check_accesses(f, a, b); !why.empty()) {
    d.reason = why;
    return d;
  }
  d.fused = std::move(f);
  d.reason = "COMPATIBLE_REDUCTION (GPU: " + index::to_string(n) +
             " rows, the work over each row after its reduction)";
  d.accepted = true;
  return d;
}

}  // namespace stax::scheduler
