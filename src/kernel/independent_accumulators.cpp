// W independent vector accumulators per reduction (issue 6 point 5; the seed's Section 8.1,
// Proposition 8.1(2)). A vectorized reduction loop that updates one vector accumulator per
// iteration is one dependent chain: each update waits for the previous one, so a sum of an
// L2- or L3-resident array runs at one vector per add latency instead of the issue rate. The
// pass unrolls the innermost vectorized reduction loop by W and lets copy j of the body update
// part j of each accumulator (Accumulator::independent = W, Stmt::part = j); the parts are
// combined in a fixed order wherever the accumulator is read (kernel_ir.h), in particular
// before a cascade fold, so a blocked float sum still rounds one block (now W shorter chains
// and log2(W) additions) before the double outer level (cascade_blocking.h).
#include <algorithm>
#include <map>
#include <optional>

#include "kernel/kernel_ir_visitor.h"
#include "kernel/passes.h"

namespace stax::kernel {

namespace {

using index::Expr;

// The dependent-chain cost of one update: its latency in cycles and how many independent
// updates of that kind the core starts per cycle. latency x per_cycle updates must be in
// flight to keep the units busy. The numbers are those of Agner Fog's instruction tables
// (Intel Skylake for AVX2, Skylake-X for AVX-512; uops.info agrees): vaddps/vmulps/vmaxps
// latency 4 on two ports (p0, p1 / p0, p5); vpaddd/vpmaxsd latency 1 on three AVX2 ports
// (p0, p1, p5) and two AVX-512 ones (p0, p5); vpmulld latency 10 at one per cycle; mask
// registers (Vec<bool, N> is a bit mask) combine in one cycle on the four scalar ALUs.
struct ChainCost {
  int latency = 1;
  int per_cycle = 1;
  const char* what = "";
};

ChainCost chain_cost(runtime::SimdLevel simd, ReductionType type, DType dtype) {
  const bool avx512 = simd == runtime::SimdLevel::Avx512;
  if (type == ReductionType::Any || type == ReductionType::All) return {1, 4, "mask"};
  const bool floating = is_floating(dtype);
  const char* op = type == ReductionType::Sum    ? "add"
                   : type == ReductionType::Prod ? "mul"
                   : type == ReductionType::Max  ? "max"
                                                 : "min";
  if (floating) return {4, 2, op};
  if (type == ReductionType::Prod) return {10, 1, op};
  return {1, avx512 ? 2 : 3, op};
}

int registers_of(const ValueType& t, runtime::SimdLevel simd) {
  const int64_t width = vector_register_bytes(simd);
  if (!t.is_vector() || width == 0) return 0;
  if (t.dtype == DType::Bool) return 1;  // a bit mask
  const int64_t bytes = t.lanes * static_cast<int64_t>(dtype_size(t.dtype));
  return static_cast<int>((bytes + width - 1) / width);
}

bool has_parts(ReductionType t) {
  // Arg-reductions would need a lane-wise combination that lets the smaller index win ties
  // (the parts interleave their indices, so the order of combination does not decide it) and
  // the kernel headers have none; Welford parts would need the parallel-variance combination
  // of vectors. Their updates all stay on part 0, in iteration order, so they are unchanged.
  return t != ReductionType::ArgMax && t != ReductionType::ArgMin &&
         t != ReductionType::WelfordMean && t != ReductionType::WelfordM2;
}

int64_t floor_pow2(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// What the loop body holds that the unrolling must know about.
struct BodyInfo {
  std::vector<int> accumulators;  // with parts, in first-update order
  int accumulator_registers = 0;  // of all accumulators updated in the body (arg: 2 each)
  int value_registers = 0;        // of the vector values the body defines
  bool unrollable = true;         // no nested loop, index definition, local array or call
  bool arg_reduction = false;     // an arg-reduction is updated in the body
};

BodyInfo inspect(const Kernel& k, const Block& body, runtime::SimdLevel simd) {
  BodyInfo info;
  std::map<int, bool> seen;
  for_each_stmt(body, [&](const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Let:
        info.value_registers += registers_of(s.let.type, simd);
        break;
      case StmtKind::Reduce: {
        if (seen[s.accumulator]) break;
        seen[s.accumulator] = true;
        const Accumulator& a = k.accumulator(s.accumulator);
        const int regs = registers_of({a.dtype, a.lanes}, simd);
        info.accumulator_registers += has_parts(a.type) ? regs : 2 * regs;
        info.arg_reduction = info.arg_reduction || a.type == ReductionType::ArgMax ||
                             a.type == ReductionType::ArgMin;
        if (has_parts(a.type) && a.lanes > 1) info.accumulators.push_back(a.id);
        break;
      }
      case StmtKind::Loop:
      case StmtKind::DefineIndex:
      case StmtKind::LocalArray:
      case StmtKind::Call:
        info.unrollable = false;
        break;
      default:
        break;
    }
  });
  return info;
}

// Copy `part` of the body: the loop variable advanced by `offset`, fresh value ids, the
// Reduce statements of accumulators with parts on that part.
void advance_copy(Kernel& k, Block& body, const std::string& var, int64_t offset, int part,
                  std::map<int, int>& ids) {
  const std::map<std::string, Expr> shift{{var, Expr::var(var) + Expr(offset)}};
  for_each_stmt(body, [&](Stmt& s) {
    // Uses first: a Let reads the values defined before it, never itself.
    map_value_uses(s, [&](int& v, ValueRole) {
      auto it = ids.find(v);
      if (it != ids.end()) v = it->second;
    });
    map_indices(s, [&](Expr& e, IndexRole) { e = index::substitute(e, shift); });
    if (s.kind == StmtKind::Let) {
      const int fresh = k.new_value_id();
      ids[s.let.id] = fresh;
      s.let.id = fresh;
    }
    if (s.kind == StmtKind::Reduce && has_parts(k.accumulator(s.accumulator).type)) {
      s.part = part;
    }
  });
}

// Where the unrolled loop of w vectors per step ends: it covers [begin, main_end) in whole
// groups, the remainder loop [main_end, end) one vector at a time. Loops of constant bounds,
// and the inner loops of cascade blocks (begin = the block variable, whose loop starts at a
// constant and steps a multiple of w vectors, end = begin + that step, limit = the
// reduction's end). *per_run: the loop's iterations per execution; nullopt: another form.
std::optional<int64_t> main_end(const Loop& l, const std::vector<const Loop*>& outer, int64_t w,
                                int64_t* per_run) {
  const int64_t group = w * l.step;
  const auto b = l.begin.constant_value();
  const auto e = l.end.constant_value();
  if (!l.limit) {
    if (!b || !e || (*e - *b) % l.step != 0) return std::nullopt;
    *per_run = (*e - *b) / l.step;
    return *b + (*e - *b) / group * group;
  }
  const auto block_var = l.begin.as_var();
  const auto chunk = (l.end - l.begin).constant_value();
  if (!block_var || !chunk) return std::nullopt;
  const Loop* block = nullptr;
  for (const Loop* o : outer) {
    if (o->var == *block_var) block = o;
  }
  if (block == nullptr || !block->begin.constant_value() || block->step != *chunk ||
      *chunk % group != 0) {
    return std::nullopt;
  }
  const int64_t b0 = *block->begin.constant_value();
  if ((*l.limit - b0) % l.step != 0) return std::nullopt;
  *per_run = std::min(*chunk, *l.limit - b0) / l.step;
  return b0 + (*l.limit - b0) / group * group;
}

class Spreader {
 public:
  Spreader(Kernel& k, const TargetOptions& target) : k_(k), simd_(target.simd) {}

  void walk(Block& b) {
    for (size_t i = 0; i < b.size(); ++i) {
      Stmt& s = b[i];
      if (s.kind == StmtKind::Loop && s.loop->role == LoopRole::Reduction &&
          s.loop->vector_width > 1) {
        if (auto remainder = spread(s)) {
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(*remainder));
          ++i;
        }
        continue;
      }
      if (s.kind == StmtKind::Loop) outer_.push_back(s.loop.get());
      walk(s.body);
      if (s.kind == StmtKind::Loop) outer_.pop_back();
    }
  }

 private:
  // Unrolls the loop by the W of its cost model; returns the remainder loop, if any.
  std::optional<Stmt> spread(Stmt& s) {
    Loop& l = *s.loop;
    const BodyInfo info = inspect(k_, s.body, simd_);
    if (info.accumulators.empty()) return std::nullopt;
    std::string why;
    int64_t w = choose(l, info, &why);
    const int64_t chosen = w;
    int64_t per_run = 0;
    std::optional<int64_t> end;
    while (w > 1 && !(end = main_end(l, outer_, w, &per_run))) w /= 2;
    if (w < chosen) why += "; bounds that do not split into groups of " + std::to_string(chosen);
    record(l, w, why);
    if (w <= 1) return std::nullopt;
    for (int a : info.accumulators) k_.accumulator(a).independent = static_cast<int>(w);
    Loop remainder = l;
    remainder.begin = Expr(*end);
    if (l.limit) {
      l.limit = *end;
    } else {
      l.end = Expr(*end);
    }
    l.step *= w;
    Block unrolled = clone_block(s.body);
    Block scalar_copy = clone_block(s.body);
    for (int64_t j = 1; j < w; ++j) {
      Block copy = clone_block(scalar_copy);
      std::map<int, int> ids;
      advance_copy(k_, copy, l.var, j * remainder.step, static_cast<int>(j), ids);
      for (Stmt& c : copy) unrolled.push_back(std::move(c));
    }
    s.body = std::move(unrolled);
    // The remainder's vectors update part 0, like the masked tail after it.
    const auto b = remainder.begin.constant_value();
    const auto e = remainder.end.constant_value();
    const bool empty = remainder.limit ? *remainder.limit <= *b : *e <= *b;
    if (empty) return std::nullopt;
    std::map<int, int> ids;
    advance_copy(k_, scalar_copy, l.var, 0, 0, ids);
    return make_loop(std::move(remainder), std::move(scalar_copy));
  }

  // The cost model: enough chains to cover latency x issue rate of the slowest update, as
  // many as the registers hold (each copy of the body needs its accumulator parts and its
  // vector values), and at most half the loop's iterations (so the unrolled loop runs at
  // least twice per execution). A power of two, so it divides the cascade block.
  int64_t choose(const Loop& l, const BodyInfo& info, std::string* why) {
    const int registers = vector_register_count(simd_);
    if (!info.unrollable) {
      *why = "the body defines indices, arrays or loops of its own";
      return 1;
    }
    if (info.arg_reduction) {
      // Its first-index rule needs its updates in index order within each thread's share of
      // the loop; a remainder loop shared among the threads of a split reduction would hand
      // its last vectors to the first threads.
      *why = "an arg-reduction shares the loop";
      return 1;
    }
    if (registers == 0) {
      *why = "no vector registers at this SIMD level";
      return 1;
    }
    ChainCost cost;
    for (int a : info.accumulators) {
      const Accumulator& acc = k_.accumulator(a);
      const ChainCost c = chain_cost(simd_, acc.type, acc.dtype);
      if (c.latency * c.per_cycle > cost.latency * cost.per_cycle) cost = c;
    }
    const int64_t cover = cost.latency * cost.per_cycle;
    const int per_copy = std::max(1, info.accumulator_registers + info.value_registers);
    const int64_t by_registers = std::max(1, registers / per_copy);
    int64_t iterations = 0;
    main_end(l, outer_, 1, &iterations);
    const int64_t by_trip = std::max<int64_t>(1, iterations / 2);
    const int64_t w = floor_pow2(std::min({cover, by_registers, by_trip}));
    *why = std::string(cost.what) + " latency " + std::to_string(cost.latency) + " x " +
           std::to_string(cost.per_cycle) + " per cycle, " + std::to_string(per_copy) + " of " +
           std::to_string(registers) + " registers per copy, " + std::to_string(iterations) +
           " iterations";
    return w;
  }

  void record(const Loop& l, int64_t w, const std::string& why) {
    if (l.nest < 0 || l.nest >= static_cast<int>(k_.decisions.nests.size())) return;
    std::string& reason = k_.decisions.nests[static_cast<size_t>(l.nest)].reason;
    reason += "; " + l.var + ": " + std::to_string(w) + " accumulator" + (w > 1 ? "s" : "") + " (" +
              why + ")";
  }

  Kernel& k_;
  runtime::SimdLevel simd_;
  std::vector<const Loop*> outer_;
};

}  // namespace

void spread_independent_accumulators(Kernel& kernel, const TargetOptions& target) {
  Spreader(kernel, target).walk(kernel.body);
}

}  // namespace stax::kernel
