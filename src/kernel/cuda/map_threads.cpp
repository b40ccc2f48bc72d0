// Pass: the thread mapping of the chosen GPU form (see gpu_form.h). The pointwise loops of
// the nest become one GpuRows loop (their iterations flattened row-major), the reduction
// loops one GpuLanes loop, and after it each accumulator is combined across the row's
// threads. Every thread of a row then holds the results, so the stores after the reduction
// are the first thread's; the stores inside it (a pointwise node walking the reduction's
// elements) are each thread's own.
#include <set>

#include "kernel/cuda/gpu_form.h"

namespace stax::kernel::cuda {

namespace {

// Marks `s` and the loops perfectly nested in it with `role` as one flattened loop of `kind`.
void collapse_chain(Stmt& s, LoopRole role, ForKind kind, const GpuDecision& d) {
  int count = 0;
  Stmt* at = &s;
  while (at->kind == StmtKind::Loop && at->loop->role == role) {
    ++count;
    if (at->body.size() != 1) break;
    at = &at->body[0];
  }
  s.loop->kind = kind;
  s.loop->collapse = count;
  s.loop->threads_per_row = d.threads_per_row;
  s.loop->rows_per_block = d.rows_per_block;
}

// The innermost body of a flattened chain.
Block& chain_body(Stmt& s) {
  Stmt* at = &s;
  for (int j = 1; j < s.loop->collapse; ++j) at = &at->body[0];
  return at->body;
}

// Stores every thread of the row would make with the same value: the first thread's. A
// row's local slice (a register of each thread) is each thread's own.
void mark_stores(Block& b, const std::set<std::string>& local) {
  for_each_stmt(b, [&](Stmt& s) {
    if (s.kind == StmtKind::Store && !local.count(s.access.buffer)) s.first_thread_of_row = true;
  });
}

std::set<std::string> buffers_accessed(const Block& b, bool stores) {
  std::set<std::string> out;
  for_each_stmt(b, [&](const Stmt& s) {
    if (stores && s.kind == StmtKind::Store) out.insert(s.access.buffer);
    if (!stores && s.kind == StmtKind::Let && s.let.kind == LetKind::Load) {
      out.insert(s.let.access.buffer);
    }
  });
  return out;
}

// In a row's body: the GpuLanes loop, a combine per accumulator it updates, and the stores
// after it written once.
void map_row_body(Block& body, const GpuDecision& d, const std::set<std::string>& local) {
  for (size_t i = 0; i < body.size(); ++i) {
    Stmt& s = body[i];
    if (s.kind == StmtKind::Loop && s.loop->role == LoopRole::Reduction) {
      collapse_chain(s, LoopRole::Reduction, ForKind::GpuLanes, d);
      std::set<int> updated;
      for_each_stmt(s.body, [&](const Stmt& u) {
        if (u.kind == StmtKind::Reduce) updated.insert(u.accumulator);
      });
      Block combines;
      for (int acc : updated) {
        Stmt c;
        c.kind = StmtKind::ThreadCombine;
        c.accumulator = acc;
        combines.push_back(std::move(c));
      }
      body.insert(body.begin() + static_cast<std::ptrdiff_t>(i) + 1, combines.begin(),
                  combines.end());
      for (size_t j = i + 1 + combines.size(); j < body.size(); ++j) {
        Block one;
        one.push_back(body[j]);
        mark_stores(one, local);
        body[j] = std::move(one[0]);
      }
      return;
    }
    if (s.kind == StmtKind::Block) map_row_body(s.body, d, local);
  }
}

// The nests of one row, in order: a nest of the row's elements strides them over the row's
// threads (each thread its own elements), a reduction nest too, combined after. A nest that
// reads what an earlier one wrote to memory waits for the row's threads first (another
// thread may have written it).
void map_row_nests(Block& row, const GpuDecision& d, const std::set<std::string>& local) {
  std::set<std::string> written;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i].kind != StmtKind::Block || row[i].nest < 0) continue;
    const std::set<std::string> reads = buffers_accessed(row[i].body, false);
    for (const std::string& b : reads) {
      if (written.count(b)) {
        Stmt barrier;
        barrier.kind = StmtKind::Barrier;
        row.insert(row.begin() + static_cast<std::ptrdiff_t>(i), barrier);
        ++i;
        written.clear();
        break;
      }
    }
    Stmt& nest = row[i];
    Block& body = nest.body;
    bool has_loop = false;
    for (const Stmt& s : body) has_loop |= s.kind == StmtKind::Loop;
    if (!body.empty() && body[0].kind == StmtKind::Loop &&
        body[0].loop->role == LoopRole::Pointwise) {
      collapse_chain(body[0], LoopRole::Pointwise, ForKind::GpuLanes, d);
    } else if (has_loop) {
      map_row_body(body, d, local);
    } else {
      mark_stores(body, local);  // once per row
    }
    for (const std::string& b : buffers_accessed(body, true)) {
      if (!local.count(b)) written.insert(b);
    }
  }
}

}  // namespace

void map_threads(Kernel& k) {
  const GpuDecision& d = k.decisions.gpu;
  if (!d.on) throw std::logic_error("map_threads: kernel " + k.name + " has no GPU form");
  std::set<std::string> local;
  for_each_stmt(k.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::LocalArray) local.insert(s.name);
  });
  // A node of rows: its outer loops are the rows.
  for (Stmt& s : k.body) {
    if (s.kind == StmtKind::Loop && s.loop->role == LoopRole::Outer) {
      collapse_chain(s, LoopRole::Outer, ForKind::GpuRows, d);
      map_row_nests(chain_body(s), d, local);
      return;
    }
  }
  for (Stmt& nest : k.body) {
    if (nest.kind != StmtKind::Block || nest.nest < 0) continue;
    Block& body = nest.body;
    if (body.empty() || body[0].kind != StmtKind::Loop ||
        body[0].loop->role != LoopRole::Pointwise) {
      // No pointwise loop (a full reduction, or a single element): one row of extent 1.
      Loop row;
      row.var = "x_row";
      row.end = index::Expr(1);
      row.role = LoopRole::Pointwise;
      row.nest = nest.nest;
      Stmt wrapped = make_loop(row, std::move(body));
      body.clear();
      body.push_back(std::move(wrapped));
      k.ranges.extents["x_row"] = index::Expr(1);
    }
    collapse_chain(body[0], LoopRole::Pointwise, ForKind::GpuRows, d);
    if (d.threads_per_row > 1) map_row_body(chain_body(body[0]), d, local);
  }
}

}  // namespace stax::kernel::cuda
