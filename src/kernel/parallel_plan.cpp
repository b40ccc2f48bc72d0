// The parallel-depth pass: Algorithm 8.1 over the loops a fused node may share among
// threads, and the split of single-output reductions.
#include "index/shape_exprs.h"
#include "kernel/nest_structure.h"
#include "kernel/parallel_depth.h"
#include "kernel/passes.h"

namespace stax::kernel {

namespace {

// A loop's trip count for Algorithm 8.1's estimate: its extent, at the size symbols' hints
// where it is symbolic (issue 33: a heuristic; every extent runs correctly).
int64_t extent(const Kernel& k, const Stmt* loop) {
  const index::Expr& end = loop->loop->end;
  if (const auto c = end.constant_value()) return *c;
  for (const std::string& v : index::free_vars(end)) {
    if (!k.ranges.symbols.count(v)) return 0;
  }
  return index::value_at_hints(end, k.ranges.symbols);
}

bool all_static(const std::vector<Stmt*>& loops) {
  for (const Stmt* l : loops) {
    if (!l->loop->end.is_constant()) return false;
  }
  return true;
}

}  // namespace

void choose_parallel_depth(Kernel& k, const TargetOptions& t) {
  KernelDecisions& d = k.decisions;
  auto extent = [&](const Stmt* loop) { return kernel::extent(k, loop); };
  auto product = [&](const std::vector<Stmt*>& loops) {
    int64_t n = 1;
    for (const Stmt* l : loops) n *= extent(l);
    return n;
  };
  const auto outer = outer_loops(k);
  auto views = nests(k);
  std::vector<int64_t> candidates;
  std::vector<int64_t> ranges;
  for (const Stmt* l : outer) candidates.push_back(extent(l));
  if (outer.empty()) {
    const NestView& n = views.at(0);
    for (const Stmt* l : n.pointwise) candidates.push_back(extent(l));
    ranges = candidates;
    for (const Stmt* l : n.reduction) ranges.push_back(extent(l));
  } else {
    // Work of an outer-loop fused node: outer iterations times the largest nest.
    int64_t inner = 1;
    for (const NestView& n : views)
      inner = std::max(inner, product(n.pointwise) * product(n.reduction));
    ranges = candidates;
    ranges.push_back(inner);
  }
  // A reduction with no pointwise loop (one output) splits its reduction loop across the
  // threads, each with its own accumulators, combined in thread order at the end.
  // (Its partial results are sized by the reduction's extent: a static one, so far.)
  if (outer.empty() && views.size() == 1 && views[0].pointwise.empty() &&
      !views[0].reduction.empty() && all_static(views[0].reduction)) {
    std::vector<int64_t> reduction;
    for (const Stmt* l : views[0].reduction) reduction.push_back(extent(l));
    if (parallel_depth(reduction, t.num_threads, 1) == 1) {
      d.split_reduction = true;
      d.parallel_depth = 1;
      d.parallel_ranges = reduction;
      d.parallel_reason = "one output: the reduction loop is split across the threads";
      return;
    }
  }
  size_t max_depth = candidates.size();
  bool pointwise_vectorized = false;
  if (outer.empty() && !views[0].pointwise.empty()) {
    const KernelForm form = d.nests.at(0).form;
    pointwise_vectorized = (views[0].reduction.empty() && form != KernelForm::Scalar) ||
                           form == KernelForm::ColumnReduction;
  }
  if (d.column_over_outer) max_depth -= 1;  // the vectorized outer loop stays in a thread
  const bool single_vector_loop = pointwise_vectorized && views[0].pointwise.size() == 1;
  if (pointwise_vectorized && !single_vector_loop) {
    max_depth -= 1;  // the vectorized innermost loop stays within a thread
  }
  d.parallel_depth = parallel_depth(ranges, t.num_threads, max_depth);
  d.parallel_ranges = ranges;
  d.parallel_vector_loop = single_vector_loop && d.parallel_depth > 0;
  d.parallel_reason = "Algorithm 8.1 over " + std::to_string(max_depth) + " parallelizable loop(s)";
}

}  // namespace stax::kernel
