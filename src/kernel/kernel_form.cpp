// The kernel-form pass (Section 8.3): each nest's form from its scalar IR.
#include <set>

#include "kernel/nest_structure.h"
#include "kernel/passes.h"
#include "kernel/vector_form.h"

namespace stax::kernel {

namespace {

// Tile edge of the 2-D tiled form: two 64x64 float tiles and their output rows stay in L1.
constexpr int64_t kTile = 64;

std::string stride_text(const std::optional<int64_t>& s) {
  return s ? std::to_string(*s) : "a non-constant stride";
}

std::vector<const Let*> loads_of(const Block& b) {
  std::vector<const Let*> out;
  for_each_stmt(b, [&](const Stmt& s) {
    if (s.kind == StmtKind::Let && s.let.kind == LetKind::Load) out.push_back(&s.let);
  });
  return out;
}

bool reads_indirectly(const Kernel& k, const Let& load) {
  for (const auto& v : index::free_vars(load.access.index)) {
    if (v.rfind("ind", 0) == 0 && k.ranges.count(v)) return true;
  }
  return false;
}

// Whether every accumulator declared in the block keeps one output per lane (Welford
// accumulators have no per-lane result in the kernel API).
bool per_lane_accumulators(const Kernel& k, const Block& b, std::string* why) {
  bool ok = true;
  for_each_stmt(b, [&](const Stmt& s) {
    if (s.kind == StmtKind::AccumulatorInit &&
        k.accumulator(s.accumulator).type == ReductionType::WelfordMean) {
      ok = false;
      *why = "a Welford accumulator has no per-lane form";
    }
  });
  return ok;
}

// How the loads of a nest walk `var`: "loads: 2 contiguous, 1 strided, 1 uniform".
std::string access_summary(const Kernel& k, const std::vector<const Let*>& loads,
                           const std::string& var) {
  int contiguous = 0, strided = 0, uniform = 0, gathered = 0;
  for (const Let* l : loads) {
    const auto s = index::stride(l->access.index, var, k.ranges);
    if (reads_indirectly(k, *l) || !s) {
      ++gathered;
    } else if (*s == 0) {
      ++uniform;
    } else if (*s == 1) {
      ++contiguous;
    } else {
      ++strided;
    }
  }
  std::string out;
  auto add = [&](int n, const char* what) {
    if (n > 0) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(contiguous, "contiguous");
  add(strided, "strided");
  add(gathered, "gathered");
  add(uniform, "uniform");
  return out.empty() ? "no loads" : "loads: " + out;
}

NestDecision decide(const Kernel& k, NestView& v, const TargetOptions& t) {
  NestDecision d;
  if (t.simd == runtime::SimdLevel::Scalar) {
    d.reason = "the SIMD level is scalar";
    return d;
  }
  if (v.pointwise.empty() && v.reduction.empty()) {
    d.reason = "no loop to vectorize";
    return d;
  }
  const int width = runtime::simd_width(t.simd, DType::Float32);
  const Block& body = v.block->body;
  const auto loads = loads_of(body);
  if (!v.reduction.empty()) {
    const std::string r = v.reduction.back()->loop->var;
    if (!v.pointwise.empty()) {
      // A column reduction: every load walks the innermost output loop contiguously (or not
      // at all) and some reduced load walks the innermost reduction loop with a stride.
      const std::string x = v.pointwise.back()->loop->var;
      std::string why;
      bool contiguous_x = true;
      const Let* strided = nullptr;
      std::optional<int64_t> strided_by;
      for (const Let* l : loads) {
        const auto sx = index::stride(l->access.index, x, k.ranges);
        if (!sx || (*sx != 0 && *sx != 1)) contiguous_x = false;
        const auto sr = index::stride(l->access.index, r, k.ranges);
        if (!sr || (*sr != 0 && *sr != 1)) {
          strided = l;
          strided_by = sr;
        }
      }
      if (contiguous_x && strided != nullptr && per_lane_accumulators(k, body, &why) &&
          !vector_obstacle(k, body, x)) {
        d.form = KernelForm::ColumnReduction;
        d.vector_var = x;
        d.vector_width = width;
        d.reason = "the load of " + strided->access.buffer + " walks " + r + " with stride " +
                   stride_text(strided_by) + " and " + x + " contiguously: one output per lane";
        return d;
      }
    }
    if (auto obstacle = vector_obstacle(k, body, r)) {
      d.reason = *obstacle;
      return d;
    }
    d.form = KernelForm::Vectorized;
    d.vector_var = r;
    d.vector_width = width;
    d.reason = "along the innermost reduction loop " + r + "; " + access_summary(k, loads, r);
    return d;
  }
  const std::string x = v.pointwise.back()->loop->var;
  if (auto obstacle = vector_obstacle(k, body, x)) {
    d.reason = *obstacle;
    return d;
  }
  d.form = KernelForm::Vectorized;
  d.vector_var = x;
  d.vector_width = width;
  d.reason = "along the innermost loop " + x + "; " + access_summary(k, loads, x);
  if (v.pointwise.size() < 2) return d;
  // Transpose-like access (Section 8.2): a load walks the vectorized variable with a stride
  // but the next-outer variable contiguously. Tiling both loops keeps its cache lines in L1
  // while all their elements are used.
  const std::string a = v.pointwise[v.pointwise.size() - 2]->loop->var;
  std::set<std::string> local;
  for_each_stmt(k.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::LocalArray) local.insert(s.name);
  });
  std::set<std::string> seen;
  for (const Let* l : loads) {
    if (local.count(l->access.buffer) || l->access.mask >= 0 || reads_indirectly(k, *l)) continue;
    const auto inner = index::stride(l->access.index, x, k.ranges);
    const auto outer = index::stride(l->access.index, a, k.ranges);
    if (outer && *outer == 1 && (!inner || (*inner != 0 && *inner != 1)) &&
        seen.insert(l->access.buffer + "@" + index::to_string(l->access.index)).second) {
      d.tiled_loads.push_back({l->access.buffer, l->access.index});
    }
  }
  if (!d.tiled_loads.empty()) {
    d.form = KernelForm::Tiled;
    d.tile_outer_var = a;
    d.tile = kTile;
    d.reason = "the load of " + d.tiled_loads.front().first + " walks " + x + " with stride " +
               stride_text(index::stride(d.tiled_loads.front().second, x, k.ranges)) + " and " + a +
               " contiguously: " + std::to_string(kTile) + "x" + std::to_string(kTile) +
               " tiles through L1";
  }
  return d;
}

}  // namespace

void choose_kernel_form(Kernel& kernel, const TargetOptions& target) {
  kernel.decisions.nests.clear();
  for (NestView& v : nests(kernel)) kernel.decisions.nests.push_back(decide(kernel, v, target));
}

}  // namespace stax::kernel
