// The kernel-form pass (Section 8.3): each nest's form from its scalar IR.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include "index/shape_exprs.h"
#include "kernel/nest_structure.h"
#include "kernel/passes.h"
#include "kernel/vector_form.h"
#include "kernel/vector_width.h"

namespace stax::kernel {

namespace {

// The edge of the register transposes stax::transpose_tile has for elements of `bytes` bytes
// at `simd` (src/runtime/kernel_include/stax_kernel_transpose.h: every dtype has one at the
// AVX levels, moved as bits).
int register_transpose_block(runtime::SimdLevel simd, size_t bytes) {
  const bool avx512 = simd == runtime::SimdLevel::Avx512;
  switch (simd == runtime::SimdLevel::Scalar ? 0 : bytes) {
    case 1:
    case 2:
      return 16;
    case 4:
      return avx512 ? 16 : 8;
    case 8:
      return avx512 ? 8 : 4;
    default:
      return 0;
  }
}

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
    if (v.rfind("ind", 0) == 0 && k.ranges.extents.count(v)) return true;
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

// The smallest multiple of `m` at least `n`.
int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

// The tile edge T of the 2-D tiled form and the register block of each tiled load (Section
// 8.2), with the derivation for the reason. Within a T x T tile every tiled operand has its
// L1 tile and every other operand and output its T rows of T elements, so the tile's data is
// T^2 * S bytes, S the bytes of one element of each: T is the largest multiple of the blocks
// (the register transposes and the vector width) with T^2 * S within L1, but at least
// line / element bytes, so that no cache line of any of them is read partially.
std::string choose_tile(const Kernel& k, const Block& body, const std::string& a,
                        const std::string& x, const TargetOptions& t, NestDecision& d) {
  std::map<std::string, size_t> element_bytes;  // buffer@index -> bytes, every access once
  std::map<std::string, DType> load_storage;
  for_each_stmt(body, [&](const Stmt& s) {
    const Access* acc = nullptr;
    if (s.kind == StmtKind::Let && s.let.kind == LetKind::Load) acc = &s.let.access;
    if (s.kind == StmtKind::Store) acc = &s.access;
    if (acc == nullptr) return;
    if (!index::depends_on(acc->index, a) && !index::depends_on(acc->index, x)) return;
    const std::string key = acc->buffer + "@" + index::to_string(acc->index);
    element_bytes[key] = dtype_size(acc->storage);
    if (s.kind == StmtKind::Let) load_storage[key] = acc->storage;
  });
  int64_t per_element = 0;
  int64_t smallest = 8;
  for (const auto& [key, bytes] : element_bytes) {
    per_element += static_cast<int64_t>(bytes);
    smallest = std::min(smallest, static_cast<int64_t>(bytes));
  }
  int64_t multiple = d.vector_width;
  std::string blocks;
  d.transpose_blocks.clear();
  for (const auto& [buffer, index] : d.tiled_loads) {
    const DType storage = load_storage.at(buffer + "@" + index::to_string(index));
    const bool constant_stride = index::stride(index, x, k.ranges).has_value();
    const int b = constant_stride ? register_transpose_block(t.simd, dtype_size(storage)) : 0;
    d.transpose_blocks.push_back(b);
    if (b > 0) multiple = std::lcm(multiple, static_cast<int64_t>(b));
    if (!blocks.empty()) blocks += ", ";
    blocks += buffer +
              (b > 0 ? " by " + std::to_string(b) + "x" + std::to_string(b) + " register transposes"
                     : " element by element (" +
                           std::string(constant_stride ? "no register transpose of " +
                                                             std::string(dtype_name(storage))
                                                       : "a non-constant stride") +
                           ")");
  }
  const int64_t l1 = t.caches.l1d_bytes;
  const int64_t line = t.caches.line_bytes;
  if (l1 < 1 || line < 1) {
    throw std::invalid_argument("cache sizes for the tiled form of " + k.name +
                                ": the L1 data cache (" + std::to_string(l1) +
                                " bytes) and its line (" + std::to_string(line) +
                                " bytes) must be positive");
  }
  // The largest edge whose tile data fits in L1.
  auto fits = static_cast<int64_t>(std::sqrt(static_cast<double>(l1 / per_element)));
  while (fits * fits * per_element > l1) --fits;
  while ((fits + 1) * (fits + 1) * per_element <= l1) ++fits;
  const int64_t line_bound = round_up(line, smallest) / smallest;
  int64_t tile = fits - fits % multiple;
  std::string why = std::to_string(per_element) + " bytes per tile element fit " +
                    std::to_string(fits) + "x" + std::to_string(fits) + " in the " +
                    std::to_string(l1) + "-byte L1, a multiple of " + std::to_string(multiple) +
                    " is " + std::to_string(tile);
  if (tile < line_bound || tile == 0) {
    tile = round_up(std::max<int64_t>(line_bound, 1), multiple);
    why += ", below the " + std::to_string(line) + "-byte line of " + std::to_string(smallest) +
           "-byte elements: " + std::to_string(tile);
  } else {
    why += " (at least the " + std::to_string(line) + "-byte line of " + std::to_string(smallest) +
           "-byte elements, " + std::to_string(line_bound) + ")";
  }
  d.tile = tile;
  return std::to_string(tile) + "x" + std::to_string(tile) + " tiles through L1 (" + why +
         "); copied " + blocks;
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
  const Block& body = v.block->body;
  // Section 8.1: as many lanes as one register holds of the widest type the nest computes in
  // along the vectorized loop (vector_width.h).
  auto set_width = [&](const VectorWidth& w) {
    d.vector_width = w.lanes;
    d.vector_width_reason = w.reason;
  };
  const auto loads = loads_of(body);
  if (!v.reduction.empty()) {
    const std::string r = v.reduction.back()->loop->var;
    const VectorWidth along_r = choose_vector_width(k, body, r, t);
    if (!v.pointwise.empty()) {
      // A column reduction: every load walks the innermost output loop contiguously (or not
      // at all) and some reduced load walks the innermost reduction loop with a stride.
      const std::string x = v.pointwise.back()->loop->var;
      const VectorWidth along_x = choose_vector_width(k, body, x, t);
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
        set_width(along_x);
        d.reason = "the load of " + strided->access.buffer + " walks " + r + " with stride " +
                   stride_text(strided_by) + " and " + x + " contiguously: one output per lane";
        return d;
      }
      // A window reduction (pooling, a convolution's loop nest): when every reduction loop is
      // shorter than a vector, vectorizing the innermost one would leave most lanes masked off
      // and reduce across lanes for every output; a vector of outputs along x fills every lane
      // (its loads gathered where they stride).
      bool short_reduction = true;
      int64_t reduced = 1;
      for (const Stmt* loop : v.reduction) {
        // A heuristic: at the hints where extents are symbolic (issue 33).
        const int64_t extent =
            index::value_at_hints(k.ranges.extents.at(loop->loop->var), k.ranges.symbols);
        short_reduction = short_reduction && extent < along_r.lanes;
        reduced *= extent;
      }
      const int64_t x_extent = index::value_at_hints(k.ranges.extents.at(x), k.ranges.symbols);
      if (short_reduction && x_extent >= along_x.lanes && per_lane_accumulators(k, body, &why) &&
          !vector_obstacle(k, body, x)) {
        d.form = KernelForm::ColumnReduction;
        d.vector_var = x;
        set_width(along_x);
        d.reason = "every reduction loop is shorter than the " + std::to_string(along_r.lanes) +
                   " lanes (" + std::to_string(reduced) + " terms per output): one output per " +
                   "lane along " + x + "; " + access_summary(k, loads, x);
        return d;
      }
    }
    if (auto obstacle = vector_obstacle(k, body, r)) {
      d.reason = *obstacle;
      return d;
    }
    d.form = KernelForm::Vectorized;
    d.vector_var = r;
    set_width(along_r);
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
  set_width(choose_vector_width(k, body, x, t));
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
    d.reason = "the load of " + d.tiled_loads.front().first + " walks " + x + " with stride " +
               stride_text(index::stride(d.tiled_loads.front().second, x, k.ranges)) + " and " + a +
               " contiguously: " + choose_tile(k, body, a, x, t, d);
  }
  return d;
}

// Window reductions whose outputs' loops are shared outer loops (a max pool with indices over
// sizes known at run time: its outputs' dims do not collapse, so the nest that turns the
// window's argmax into an input index has the reductions' pointwise loops and shares them as
// outer loops). No nest has a pointwise loop of its own for the column form, and vectorizing
// each short window would leave most lanes masked off. When every reduction under the outer
// loops is shorter than a vector, the innermost outer loop is vectorized for all the nests
// at once: one output per lane, each nest's results stored and read back as vectors. Returns
// whether it chose that form.
bool outer_column_form(Kernel& k, const TargetOptions& t) {
  auto outer = outer_loops(k);
  if (outer.size() < 2 || t.simd == runtime::SimdLevel::Scalar) return false;
  auto views = nests(k);
  bool any_reduction = false;
  for (const NestView& v : views) {
    if (!v.pointwise.empty()) return false;
    if (v.reduction.empty()) continue;
    any_reduction = true;
    const VectorWidth along_r =
        choose_vector_width(k, v.block->body, v.reduction.back()->loop->var, t);
    for (const Stmt* loop : v.reduction) {
      // A heuristic: at the hints where extents are symbolic (issue 33).
      if (index::value_at_hints(k.ranges.extents.at(loop->loop->var), k.ranges.symbols) >=
          along_r.lanes) {
        return false;
      }
    }
  }
  if (!any_reduction) return false;
  Stmt& x_loop = *outer.back();
  const std::string x = x_loop.loop->var;
  const Block& body = x_loop.body;
  const VectorWidth along_x = choose_vector_width(k, body, x, t);
  std::string why;
  if (index::value_at_hints(k.ranges.extents.at(x), k.ranges.symbols) < along_x.lanes ||
      !per_lane_accumulators(k, body, &why) || vector_obstacle(k, body, x)) {
    return false;
  }
  const std::string reason =
      "every reduction loop under the shared outer loops is shorter "
      "than a vector: one output per lane along the outer loop " +
      x + "; " + access_summary(k, loads_of(body), x);
  for (NestDecision& d : k.decisions.nests) {
    d = NestDecision{};
    d.form = KernelForm::ColumnReduction;
    d.vector_var = x;
    d.vector_width = along_x.lanes;
    d.vector_width_reason = along_x.reason;
    d.reason = reason;
  }
  k.decisions.column_over_outer = true;
  return true;
}

}  // namespace

void choose_kernel_form(Kernel& kernel, const TargetOptions& target) {
  kernel.decisions.nests.clear();
  for (NestView& v : nests(kernel)) {
    NestDecision d = decide(kernel, v, target);
    // Issue 33: the vector forms split their innermost loops into whole vectors and a masked
    // tail. Over an innermost extent known only at run time the tail's length is a run-time
    // value, which the vectorized and column forms take (apply_form.cpp); the tiled form's
    // tiles are cut at static extents, so such a nest runs scalar.
    for (const std::vector<Stmt*>* loops : {&v.pointwise, &v.reduction}) {
      if (d.form != KernelForm::Tiled || loops->empty()) continue;
      const Loop& innermost = *loops->back()->loop;
      if (innermost.end.is_constant()) continue;
      d = NestDecision{};
      d.reason = "the innermost loop " + innermost.var + " runs to " +
                 index::to_string(innermost.end) +
                 ", known only at run time: the tiled form takes static extents only, so far";
    }
    kernel.decisions.nests.push_back(std::move(d));
  }
  kernel.decisions.column_over_outer = false;
  outer_column_form(kernel, target);
}

}  // namespace stax::kernel
