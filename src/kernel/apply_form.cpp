// Rewrites each nest into the form the kernel-form pass chose: the vectorized loop with a
// masked tail (Section 8.1), the blocked column reduction, or the 2-D tiled form (Section 8.2).
#include <optional>
#include <stdexcept>

#include "kernel/nest_structure.h"
#include "kernel/passes.h"
#include "kernel/vector_form.h"

namespace stax::kernel {

using index::Expr;

namespace {

// Column reductions step kColumnBlock vectors per iteration of the reduction loops: each row
// then contributes whole cache lines, which the next block would otherwise fetch again.
constexpr int64_t kColumnBlock = 8;

void replace(Block& parent, const Stmt* target, Block replacement) {
  for (size_t i = 0; i < parent.size(); ++i) {
    if (&parent[i] != target) continue;
    parent.erase(parent.begin() + static_cast<std::ptrdiff_t>(i));
    parent.insert(parent.begin() + static_cast<std::ptrdiff_t>(i),
                  std::make_move_iterator(replacement.begin()),
                  std::make_move_iterator(replacement.end()));
    return;
  }
  throw std::logic_error("kernel IR: statement not found in its parent block");
}

Block& parent_of(NestView& v, size_t pointwise_level) {
  return pointwise_level == 0 ? v.block->body : v.pointwise[pointwise_level - 1]->body;
}

int64_t extent(const Stmt& loop) {
  return loop.loop->end.constant_value().value();
}

Stmt tail_block(const std::string& var, int64_t at, Block body) {
  Stmt define;
  define.kind = StmtKind::DefineIndex;
  define.name = var;
  define.index = Expr(at);
  Block b;
  b.push_back(std::move(define));
  for (Stmt& s : body) b.push_back(std::move(s));
  Stmt t = make_block(std::move(b));
  t.vector_tail = true;
  return t;
}

// The accumulators declared in `b`, given `lanes` lanes (and one output per lane).
void widen_accumulators(Kernel& k, const Block& b, int lanes, bool per_lane) {
  for_each_stmt(b, [&](const Stmt& s) {
    if (s.kind == StmtKind::AccumulatorInit) {
      k.accumulator(s.accumulator).lanes = lanes;
      k.accumulator(s.accumulator).per_lane_result = per_lane;
    }
  });
}

// Fresh copies of the accumulators declared in `b` for one instance of a column body.
std::map<int, int> clone_accumulators(Kernel& k, const Block& b, int lanes) {
  std::map<int, int> map;
  for_each_stmt(b, [&](const Stmt& s) {
    if (s.kind != StmtKind::AccumulatorInit) return;
    Accumulator a = k.accumulator(s.accumulator);
    a.id = static_cast<int>(k.accumulators.size());
    a.lanes = lanes;
    a.per_lane_result = true;
    map[s.accumulator] = a.id;
    k.accumulators.push_back(a);
  });
  return map;
}

// The vector loop over [0, main_end) and the masked tail over [main_end, extent). Over an
// extent known only at run time (issue 33) both are emitted: main_end = lanes * (e // lanes),
// and the tail's count e - main_end is a run-time value in [0, lanes - 1] (0: no lane).
Block vector_loop(Kernel& k, const Stmt& loop, int lanes) {
  VectorContext c;
  c.var = loop.loop->var;
  c.lanes = lanes;
  Block out;
  if (!loop.loop->end.is_constant()) {
    const Expr e = loop.loop->end;
    const Expr main_end = Expr(lanes) * index::floordiv(e, lanes);
    Loop l = *loop.loop;
    l.end = main_end;
    l.step = lanes;
    l.vector_width = lanes;
    out.push_back(make_loop(std::move(l), vectorize_block(k, loop.body, c)));
    c.count = index::mod(e, lanes);  // e - main_end, which bounds() sees within [0, lanes - 1]
    Stmt tail = make_block(vectorize_block(k, loop.body, c));
    Stmt define;
    define.kind = StmtKind::DefineIndex;
    define.name = c.var;
    define.index = main_end;
    tail.body.insert(tail.body.begin(), std::move(define));
    tail.vector_tail = true;
    out.push_back(std::move(tail));
    return out;
  }
  const int64_t e = extent(loop);
  const int64_t main_end = e - e % lanes;
  if (main_end > 0) {
    Loop l = *loop.loop;
    l.end = Expr(main_end);
    l.step = lanes;
    l.vector_width = lanes;
    out.push_back(make_loop(std::move(l), vectorize_block(k, loop.body, c)));
  }
  if (main_end < e) {
    c.count = Expr(e - main_end);
    out.push_back(tail_block(c.var, main_end, vectorize_block(k, loop.body, c)));
  }
  return out;
}

// The innermost body of the chain of reduction loops starting at the first one in `b`.
Block* innermost_reduction_body(Block& b) {
  Stmt* l = find_loop(b, LoopRole::Reduction);
  if (l == nullptr) return nullptr;
  Block* body = &l->body;
  while (Stmt* inner = find_loop(*body, LoopRole::Reduction)) body = &inner->body;
  return body;
}

// One step of kColumnBlock vectors: the instances' declarations, one shared chain of
// reduction loops holding all their updates, then their results.
Block merge_column_instances(std::vector<Block> instances) {
  Block before;
  Block after;
  std::optional<Stmt> chain;
  for (Block& inst : instances) {
    bool past_loop = false;
    Block* inner = innermost_reduction_body(inst);
    for (Stmt& s : inst) {
      if (s.kind == StmtKind::Loop && s.loop->role == LoopRole::Reduction && !past_loop) {
        past_loop = true;
        if (!chain) {
          chain = std::move(s);
        } else {
          Block one;
          one.push_back(std::move(*chain));
          Block* target = innermost_reduction_body(one);
          for (Stmt& u : *inner) target->push_back(std::move(u));
          chain = std::move(one.front());
        }
        continue;
      }
      (past_loop ? after : before).push_back(std::move(s));
    }
  }
  if (chain) before.push_back(std::move(*chain));
  for (Stmt& s : after) before.push_back(std::move(s));
  return before;
}

// The blocked column form of `x_loop` (a loop over outputs whose body holds reduction loops):
// kColumnBlock vectors of outputs per step, then single vectors, then a masked tail. Over an
// extent known only at run time (issue 33) all three are emitted with bounds computed from
// it, as vector_loop's: the tail's count is a run-time value in [0, lanes - 1].
Block column_loops(Kernel& k, Stmt& x_loop, int n) {
  const std::string x = x_loop.loop->var;
  const Expr e = x_loop.loop->end;
  const bool known = e.is_constant();
  const int64_t block = kColumnBlock * n;
  const Expr main_end =
      known ? Expr(extent(x_loop) - extent(x_loop) % n) : Expr(n) * index::floordiv(e, n);
  const Expr blocks_end =
      known ? Expr(main_end.constant_value().value() - main_end.constant_value().value() % block)
            : Expr(block) * index::floordiv(e, block);
  // Whether a piece may run: a known empty one is left out.
  auto may_run = [&](const Expr& from, const Expr& to) {
    return !known || from.constant_value().value() < to.constant_value().value();
  };
  Block out;
  if (may_run(Expr(0), blocks_end)) {
    const std::string xb = x + "_block";
    k.ranges.extents[xb] = e;
    std::vector<Block> instances;
    for (int64_t j = 0; j < kColumnBlock; ++j) {
      VectorContext c;
      c.var = xb;
      c.lanes = n;
      c.substitution[x] = Expr::var(xb) + Expr(j * n);
      c.accumulators = clone_accumulators(k, x_loop.body, n);
      instances.push_back(vectorize_block(k, x_loop.body, c));
    }
    Loop l = *x_loop.loop;
    l.var = xb;
    l.end = blocks_end;
    l.step = block;
    l.vector_width = n;
    out.push_back(make_loop(std::move(l), merge_column_instances(std::move(instances))));
  }
  VectorContext c;
  c.var = x;
  c.lanes = n;
  if (may_run(blocks_end, main_end)) {
    c.accumulators = clone_accumulators(k, x_loop.body, n);
    Loop l = *x_loop.loop;
    l.begin = blocks_end;
    l.end = main_end;
    l.step = n;
    l.vector_width = n;
    out.push_back(make_loop(std::move(l), vectorize_block(k, x_loop.body, c)));
  }
  if (may_run(main_end, e)) {
    c.accumulators = clone_accumulators(k, x_loop.body, n);
    // e - main_end; over a run-time extent bounds() sees it within [0, n - 1].
    c.count = known ? Expr(extent(x_loop)) - main_end : index::mod(e, n);
    Stmt tail = make_block(vectorize_block(k, x_loop.body, c));
    Stmt define;
    define.kind = StmtKind::DefineIndex;
    define.name = x;
    define.index = main_end;
    tail.body.insert(tail.body.begin(), std::move(define));
    tail.vector_tail = true;
    out.push_back(std::move(tail));
  }
  return out;
}

void column_reduction(Kernel& k, NestView& v, const NestDecision& d) {
  Stmt& x_loop = *v.pointwise.back();
  Block out = column_loops(k, x_loop, d.vector_width);
  replace(parent_of(v, v.pointwise.size() - 1), &x_loop, std::move(out));
}

Loop ranged_loop(const std::string& var, Expr begin, Expr end, int64_t limit, int64_t step,
                 LoopRole role, int nest) {
  Loop l;
  l.var = var;
  l.begin = std::move(begin);
  l.end = std::move(end);
  l.limit = limit;
  l.step = step;
  l.role = role;
  l.nest = nest;
  return l;
}

// One T x T tile of the tiled form: rows a in [at, at + T), columns x in [xt, xt + T), both
// cut at the extents (columns at the end of the full vectors).
struct TileFrame {
  std::string a, x, at, xt;
  int64_t t = 0;
  int64_t rows = 0;     // the extent of a
  int64_t columns = 0;  // the end of the full vectors along x
  int nest = -1;
  Expr in_tile;  // the element (a, x) in its tile

  Loop rows_from(Expr begin, int64_t limit, int64_t step) const {
    return ranged_loop(a, std::move(begin), Expr::var(at) + Expr(t), limit, step, LoopRole::Other,
                       nest);
  }
  Loop columns_from(Expr begin, int64_t limit, int64_t step) const {
    return ranged_loop(x, std::move(begin), Expr::var(xt) + Expr(t), limit, step, LoopRole::Other,
                       nest);
  }
};

// tile[in_tile] = source[index] element by element over `inner` inside `outer`.
Stmt copy_elements(Kernel& k, const TileFrame& f, const std::string& tile, const Access& source,
                   Loop outer, Loop inner) {
  Let load;
  load.id = k.new_value_id();
  load.kind = LetKind::Load;
  load.type = {source.storage, 1};
  load.access = source;
  Access to;
  to.buffer = tile;
  to.index = f.in_tile;
  to.storage = source.storage;
  Block copy;
  const int id = load.id;
  copy.push_back(make_let(std::move(load)));
  copy.push_back(make_store(std::move(to), id));
  Block body;
  body.push_back(make_loop(std::move(inner), std::move(copy)));
  return make_loop(std::move(outer), std::move(body));
}

// The copy of one transposed operand into its L1 tile. With a register block B (Section 8.2):
// every full B x B block by one register transpose, read along a (the source's contiguous
// direction, the inner loop, so a block's cache lines serve the next one) and written along
// x; the rows past the last full block and then the columns past it element by element.
// Without one, the whole tile element by element.
Block copy_into_tile(Kernel& k, const TileFrame& f, const std::string& tile, const Access& source,
                     int block) {
  Block out;
  const auto stride = index::stride(source.index, f.x, k.ranges);
  if (block == 0 || !stride) {
    out.push_back(copy_elements(k, f, tile, source, f.columns_from(Expr::var(f.xt), f.columns, 1),
                                f.rows_from(Expr::var(f.at), f.rows, 1)));
    return out;
  }
  const int64_t full_rows = f.rows - f.rows % block;
  const int64_t full_columns = f.columns - f.columns % block;
  if (full_rows > 0 && full_columns > 0) {
    Stmt transpose;
    transpose.kind = StmtKind::TransposeBlock;
    BlockTranspose& b = transpose.transpose;
    b.source = source;
    b.source.index = index::simplify(source.index, k.ranges);
    b.source.form = AccessForm::Strided;
    b.source.stride = *stride;
    b.destination.buffer = tile;
    b.destination.index = index::simplify(f.in_tile, k.ranges);
    b.destination.storage = source.storage;
    b.destination.form = AccessForm::Strided;
    b.destination.stride = f.t;
    b.rows = block;  // along x
    b.cols = block;  // along a
    Block one;
    one.push_back(std::move(transpose));
    Block blocks;
    blocks.push_back(make_loop(f.rows_from(Expr::var(f.at), full_rows, block), std::move(one)));
    out.push_back(
        make_loop(f.columns_from(Expr::var(f.xt), full_columns, block), std::move(blocks)));
  }
  if (full_rows < f.rows) {
    // Only the last tile of rows has any: the loop starts past the other tiles' ends.
    out.push_back(copy_elements(k, f, tile, source, f.rows_from(Expr(full_rows), f.rows, 1),
                                f.columns_from(Expr::var(f.xt), f.columns, 1)));
  }
  if (full_columns < f.columns && full_rows > 0) {
    out.push_back(copy_elements(k, f, tile, source,
                                f.columns_from(Expr(full_columns), f.columns, 1),
                                f.rows_from(Expr::var(f.at), full_rows, 1)));
  }
  return out;
}

void tiled(Kernel& k, NestView& v, const NestDecision& d) {
  Stmt& a_loop = *v.pointwise[v.pointwise.size() - 2];
  const Stmt& x_loop = *v.pointwise.back();
  const int n = d.vector_width;
  const int64_t ex = extent(x_loop);
  TileFrame f;
  f.a = a_loop.loop->var;
  f.x = x_loop.loop->var;
  f.at = f.a + "_tile";
  f.xt = f.x + "_tile";
  f.t = d.tile;
  f.rows = extent(a_loop);
  f.columns = ex - ex % n;
  f.nest = a_loop.loop->nest;
  f.in_tile = (Expr::var(f.a) - Expr::var(f.at)) * Expr(f.t) + (Expr::var(f.x) - Expr::var(f.xt));
  k.ranges.extents[f.at] = f.rows;
  k.ranges.extents[f.xt] = ex;
  Block tile_body;
  // The body reading the transposed operands from their tiles, which hold the operands'
  // storage type (a 16-bit float tile is read widened, like its operand).
  Block body = clone_block(x_loop.body);
  std::map<std::string, size_t> tiled_load;
  for (size_t j = 0; j < d.tiled_loads.size(); ++j) {
    tiled_load[d.tiled_loads[j].first + "@" + index::to_string(d.tiled_loads[j].second)] = j;
  }
  std::map<size_t, Access> source_of;  // the tiled loads the body reads
  for_each_stmt(body, [&](Stmt& s) {
    if (s.kind != StmtKind::Let || s.let.kind != LetKind::Load) return;
    Access& acc = s.let.access;
    auto it = tiled_load.find(acc.buffer + "@" + index::to_string(acc.index));
    if (it == tiled_load.end()) return;
    source_of.emplace(it->second, acc);
    acc.buffer = "tile" + std::to_string(it->second);
    acc.index = f.in_tile;
  });
  if (f.columns > 0) {
    Block copies;
    for (const auto& [j, source] : source_of) {
      const std::string tile = "tile" + std::to_string(j);
      Stmt array;
      array.kind = StmtKind::LocalArray;
      array.name = tile;
      array.dtype = source.storage;
      array.elements = f.t * f.t;
      copies.push_back(std::move(array));
      for (Stmt& s : copy_into_tile(k, f, tile, source, d.transpose_blocks.at(j))) {
        copies.push_back(std::move(s));
      }
    }
    VectorContext c;
    c.var = f.x;
    c.lanes = n;
    Loop vl = f.columns_from(Expr::var(f.xt), f.columns, n);
    vl.vector_width = n;
    Block inner;
    inner.push_back(make_loop(std::move(vl), vectorize_block(k, body, c)));
    copies.push_back(make_loop(f.rows_from(Expr::var(f.at), f.rows, 1), std::move(inner)));
    Loop tiles(
        ranged_loop(f.xt, Expr(0), Expr(f.columns), f.columns, f.t, LoopRole::Other, f.nest));
    tiles.limit.reset();
    tile_body.push_back(make_loop(std::move(tiles), std::move(copies)));
  }
  if (f.columns < ex) {
    // The tail columns are outside every tile: they read the operands directly.
    VectorContext c;
    c.var = f.x;
    c.lanes = n;
    c.count = Expr(ex - f.columns);
    Block tail;
    tail.push_back(tail_block(f.x, f.columns, vectorize_block(k, x_loop.body, c)));
    tile_body.push_back(make_loop(f.rows_from(Expr::var(f.at), f.rows, 1), std::move(tail)));
  }
  Loop outer = *a_loop.loop;
  outer.var = f.at;
  outer.step = f.t;
  Block replacement;
  replacement.push_back(make_loop(std::move(outer), std::move(tile_body)));
  replace(parent_of(v, v.pointwise.size() - 2), &a_loop, std::move(replacement));
}

}  // namespace

void apply_kernel_form(Kernel& k) {
  if (k.decisions.column_over_outer) {
    auto outer = outer_loops(k);
    Stmt& x_loop = *outer.back();
    Block out = column_loops(k, x_loop, k.decisions.nests.at(0).vector_width);
    replace(outer[outer.size() - 2]->body, &x_loop, std::move(out));
    return;
  }
  auto views = nests(k);
  for (size_t i = 0; i < views.size(); ++i) {
    NestView& v = views[i];
    const NestDecision& d = k.decisions.nests.at(i);
    switch (d.form) {
      case KernelForm::Scalar:
        break;
      case KernelForm::ColumnReduction:
        column_reduction(k, v, d);
        break;
      case KernelForm::Tiled:
        tiled(k, v, d);
        break;
      case KernelForm::Vectorized: {
        if (!v.reduction.empty()) {
          widen_accumulators(k, *v.inner, d.vector_width, false);
          Stmt& r = *v.reduction.back();
          Block& parent =
              v.reduction.size() == 1 ? *v.inner : v.reduction[v.reduction.size() - 2]->body;
          replace(parent, &r, vector_loop(k, r, d.vector_width));
        } else {
          Stmt& x = *v.pointwise.back();
          replace(parent_of(v, v.pointwise.size() - 1), &x, vector_loop(k, x, d.vector_width));
        }
        break;
      }
    }
  }
}

}  // namespace stax::kernel
