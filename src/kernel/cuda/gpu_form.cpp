// Pass: the GPU form and launch shape of one kernel (see gpu_form.h). The starting numbers
// are ../shared/designs/gpu-backend.md section 4.3's (a warp per row up to 1024 elements, a
// 256-thread block beyond); each is to be confirmed by bench/gpu and recorded there.
#include "kernel/cuda/gpu_form.h"

#include <algorithm>

#include "kernel/kernel_ir_visitor.h"

namespace stax::kernel::cuda {

namespace {

using index::Expr;

constexpr int64_t kWarp = 32;
constexpr int64_t kWarpRowLimit = 1024;  // elements of a row one warp reduces
constexpr int kPointwiseBlock = 256;
constexpr int kWarpFormBlock = 128;
constexpr int kBlockFormBlock = 256;
// The grid covers at most this many waves of resident blocks; a grid-stride loop does the
// rest (a launch of millions of blocks costs more to schedule than the loop).
constexpr int64_t kMaxWaves = 8;

std::string unsupported(const Kernel& k) {
  std::string why;
  for_each_stmt(k.body, [&](const Stmt& s) {
    if (!why.empty()) return;
    switch (s.kind) {
      case StmtKind::Check:
        why = "an index or division check (the device error word is not built yet)";
        break;
      case StmtKind::LocalArray:
        // A row's one-element slice (a reduction's result every thread of the row holds) is
        // a register; a longer slice is never localized on the GPU (schedule.cpp).
        if (s.elements != 1) why = "a local array of " + std::to_string(s.elements) + " elements";
        break;
      case StmtKind::Call:
      case StmtKind::TransposeBlock:
      case StmtKind::Single:
      case StmtKind::Barrier:
      case StmtKind::FoldBlock:
      case StmtKind::StorePartial:
        why = "a CPU statement (" + std::string(stmt_kind_name(s.kind)) + ")";
        break;
      case StmtKind::Loop:
        if (s.loop->vector_width > 1 || s.loop->kind != ForKind::Serial) {
          why = "a loop the CPU passes shaped";
        }
        break;
      default:
        break;
    }
  });
  for (const Accumulator& a : k.accumulators) {
    if (!why.empty()) break;
    switch (a.type) {
      case ReductionType::Sum:
      case ReductionType::Prod:
      case ReductionType::Max:
      case ReductionType::Min:
        break;
      default:
        why = "a " + std::string(lowering::reduction_name(a.type)) +
              " reduction (no GPU combine for it yet)";
    }
  }
  return why;
}

// The loops perfectly nested from `s` with `role`, outermost first.
std::vector<const Loop*> loop_chain(const Stmt& s, LoopRole role) {
  std::vector<const Loop*> chain;
  const Stmt* at = &s;
  while (at->kind == StmtKind::Loop && at->loop->role == role) {
    chain.push_back(at->loop.get());
    if (at->body.size() != 1) break;
    at = &at->body[0];
  }
  return chain;
}

Expr product(const std::vector<const Loop*>& loops) {
  Expr p(1);
  for (const Loop* l : loops) p = p * (l->end - l->begin);
  return p;
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

void choose_gpu_form(Kernel& k, const target::CudaDevice& device) {
  if (const std::string why = unsupported(k); !why.empty()) {
    throw NoCudaForm("kernel " + k.name + ": no CUDA form yet for " + why);
  }
  // The rows: the outer loops of a node of rows (fusion_rules_gpu.cpp), else the pointwise
  // loops of the node's one nest.
  std::vector<const Loop*> rows;
  const Block* inside = &k.body;
  for (const Stmt& s : k.body) {
    if (s.kind == StmtKind::Loop && s.loop->role == LoopRole::Outer) {
      rows = loop_chain(s, LoopRole::Outer);
      const Stmt* at = &s;
      for (size_t j = 1; j < rows.size(); ++j) at = &at->body[0];
      inside = &at->body;
    }
  }
  std::vector<const Stmt*> nests;
  for (const Stmt& s : *inside) {
    if (s.kind == StmtKind::Block && s.nest >= 0) nests.push_back(&s);
  }
  if (nests.empty() || (rows.empty() && nests.size() != 1)) {
    throw NoCudaForm("kernel " + k.name + ": " + std::to_string(nests.size()) +
                     " loop nests without rows");
  }
  if (rows.empty() && !nests[0]->body.empty()) {
    rows = loop_chain(nests[0]->body[0], LoopRole::Pointwise);
  }
  // The longest reduction of a row sets its threads.
  std::vector<const Loop*> reduction;
  for (const Stmt* nest : nests) {
    for_each_stmt(nest->body, [&](const Stmt& s) {
      if (s.kind == StmtKind::Loop && s.loop->role == LoopRole::Reduction) {
        const auto chain = loop_chain(s, LoopRole::Reduction);
        const auto longest = product(reduction).constant_value();
        const auto this_one = product(chain).constant_value();
        if (reduction.empty() || !this_one || (longest && *this_one > *longest)) {
          reduction = chain;
        }
      }
    });
  }
  GpuDecision& d = k.decisions.gpu;
  d.on = true;
  d.rows = product(rows);
  if (reduction.empty()) {
    d.form = "pointwise";
    d.threads_per_row = 1;
    d.rows_per_block = kPointwiseBlock;
    d.reason = "no reduction loop: one element per thread";
  } else {
    const Expr r = product(reduction);
    const auto constant = r.constant_value();
    if (constant && *constant <= kWarpRowLimit) {
      d.threads_per_row = static_cast<int>(std::min(kWarp, pow2_at_least(*constant)));
      d.rows_per_block = kWarpFormBlock / d.threads_per_row;
      d.form = d.threads_per_row == kWarp ? "row reduction, a warp per row"
                                          : "row reduction, " + std::to_string(d.threads_per_row) +
                                                " lanes of a warp per row";
      d.reason = "r = " + std::to_string(*constant) + " <= " + std::to_string(kWarpRowLimit) +
                 ": the row's lanes combine by warp shuffles";
    } else {
      d.threads_per_row = kBlockFormBlock;
      d.rows_per_block = 1;
      d.form = "row reduction, a block per row";
      d.reason =
          "r = " + index::to_string(r) +
          (constant ? " > " + std::to_string(kWarpRowLimit) : std::string(", not known here")) +
          ": the row's threads combine by warp shuffles, then across warps in shared "
          "memory";
    }
  }
  d.block = d.threads_per_row * d.rows_per_block;
  const int64_t resident = std::max<int64_t>(1, device.max_threads_per_sm / d.block);
  d.max_blocks = std::max<int64_t>(1, device.sm_count) * resident * kMaxWaves;
  d.launch_reason = std::to_string(d.block) + " threads per block (" +
                    std::to_string(d.rows_per_block) + " row(s) of " +
                    std::to_string(d.threads_per_row) + "); grid ceil(" + index::to_string(d.rows) +
                    " / " + std::to_string(d.rows_per_block) + ") blocks, at most " +
                    std::to_string(d.max_blocks) + " (" + std::to_string(kMaxWaves) + " waves of " +
                    std::to_string(resident) + " per SM on " + std::to_string(device.sm_count) +
                    " SMs), the grid striding beyond";
}

}  // namespace stax::kernel::cuda
