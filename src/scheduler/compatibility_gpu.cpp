// Definition 7.2 by element count (see compatibility_gpu.h).
#include "scheduler/compatibility_gpu.h"

#include "scheduler/fused_node.h"
#include "scheduler/fusion_rules.h"

namespace stax::scheduler {

using index::Expr;

Expr element_count(const std::vector<Expr>& ranges) {
  Expr n(1);
  for (const Expr& e : ranges) n = n * e;
  return n;
}

bool splits_as(const std::vector<Expr>& ranges, const Expr& n, const Expr& r) {
  if (element_count(ranges) != n * r) return false;
  Expr prefix(1);
  for (size_t k = 0; k <= ranges.size(); ++k) {
    if (prefix == n) return true;  // a cut between ranges k-1 and k
    if (k == ranges.size()) break;
    // A cut inside range k: n = prefix · a with a dividing the range.
    const auto p = prefix.constant_value();
    const auto want = n.constant_value();
    const auto d = ranges[k].constant_value();
    if (p && want && d && *p != 0 && *want % *p == 0) {
      const int64_t a = *want / *p;
      if (a > 1 && a < *d && *d % a == 0) return true;
    }
    prefix = prefix * ranges[k];
  }
  return false;
}

namespace {

std::string counts(const Expr& n, const Expr& r) {
  return "(n, r) = (" + index::to_string(n) + ", " + index::to_string(r) + ")";
}

}  // namespace

GpuCompatibility gpu_compatibility(const std::vector<Expr>& pa, const std::vector<Expr>& ra,
                                   const std::vector<Expr>& pb, const std::vector<Expr>& rb) {
  GpuCompatibility c;
  const Expr na = element_count(pa);
  const Expr nb = element_count(pb);
  const Expr r1 = element_count(ra);
  const Expr r2 = element_count(rb);
  const std::string groups = counts(na, r1) + " and " + counts(nb, r2);
  // The shared nest keeps per-dimension ranges where the two agree (or one re-splits the
  // other), else the flat element counts: each node's indices become div/mod of them.
  auto shared = [](const std::vector<Expr>& x, const std::vector<Expr>& y) {
    if (x == y || coarsens(y, x)) return x;
    if (coarsens(x, y)) return y;
    std::vector<Expr> flat;
    flat.push_back(element_count(x));
    return flat;
  };
  const bool reduces_a = !ra.empty();
  const bool reduces_b = !rb.empty();
  if (reduces_a && reduces_b) {
    if (na == nb && r1 == r2) {
      c.compatible = true;
      c.reason = "SAME_VARS_REDUCE (GPU: element counts " + counts(na, r1) + ")";
      c.sizes = shared(pa, pb);
      c.reduction_sizes = ra;
      if (ra != rb) c.reduction_sizes.assign(1, r1);
      return c;
    }
  } else if (!reduces_a && !reduces_b) {
    if (na == nb) {
      c.compatible = true;
      c.reason = "COMPATIBLE_RANGES_NO_REDUCTION (GPU: element counts " + counts(na, Expr(1)) + ")";
      c.sizes = shared(pa, pb);
      return c;
    }
  } else {
    const auto& p = reduces_a ? pb : pa;
    const Expr big_n = reduces_a ? nb : na;
    const Expr n = reduces_a ? na : nb;
    const Expr r = reduces_a ? r1 : r2;
    c.sizes = reduces_a ? pa : pb;
    c.reduction_sizes = reduces_a ? ra : rb;
    if (big_n == n * r && splits_as(p, n, r)) {
      c.compatible = true;
      c.reason = "COMPATIBLE_REDUCTION (GPU: N = n·r, " + sizes_string(p) + " splits as " +
                 index::to_string(n) + " × " + index::to_string(r) + ")";
      return c;
    }
    if (big_n == n) {
      c.compatible = true;
      c.once_per_output = true;
      c.reason = "COMPATIBLE_REDUCTION (GPU: N = n = " + index::to_string(n) + ", once per output)";
      return c;
    }
    c.sizes.clear();
    c.reduction_sizes.clear();
  }
  c.reason = "GPU: element counts " + groups + " differ (Definition 7.2)";
  return c;
}

}  // namespace stax::scheduler
