// The CUDA pass list of one fused node (see cuda_pipeline.h).
#include "kernel/cuda/cuda_pipeline.h"

#include <set>
#include <stdexcept>

#include "kernel/cuda/gpu_form.h"
#include "kernel/ir_builder.h"

namespace stax::kernel::cuda {

Kernel lower_fused_node_cuda(const scheduler::Schedule& schedule, const scheduler::FusedNode& fused,
                             const CudaPipelineOptions& options, int& next_error_code) {
  Kernel k = build_kernel(schedule, fused, next_error_code);
  auto done = [&](const std::string& pass, bool mapped) {
    if (mapped) verify_cuda(k, pass);
    if (options.after_pass) options.after_pass(pass, k);
  };
  done("build", false);
  // The form and launch shape, from the sizes and the device.
  choose_gpu_form(k, options.device);
  done("gpu form", false);
  // Rows, lanes, combines and the first thread's stores.
  map_threads(k);
  done("map threads", true);
  return k;
}

namespace {

class Verifier {
 public:
  Verifier(const Kernel& k, std::string pass) : k_(k), pass_(std::move(pass)) {}

  void run() {
    for (const Stmt& s : k_.body) {
      if (s.kind == StmtKind::Comment) continue;
      // A node of rows is one GpuRows loop; a node of one nest, a nest of one GpuRows loop.
      const Stmt* rows_stmt = &s;
      if (s.kind == StmtKind::Block && s.nest >= 0 && s.body.size() == 1) rows_stmt = &s.body[0];
      if (rows_stmt->kind != StmtKind::Loop || rows_stmt->loop->kind != ForKind::GpuRows) {
        fail("the kernel is not one GpuRows loop");
      }
      const Loop& rows = *rows_stmt->loop;
      threads_ = rows.threads_per_row;
      if (threads_ < 1 || rows.rows_per_block < 1 ||
          threads_ * rows.rows_per_block != k_.decisions.gpu.block) {
        fail("the row shape differs from the decided block");
      }
      const Stmt* at = rows_stmt;
      for (int j = 1; j < rows.collapse; ++j) at = &at->body[0];
      walk(at->body, false, false);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::logic_error("CUDA kernel IR of " + k_.name + " after " + pass_ + ": " + what);
  }

  void walk(const Block& b, bool in_lanes, bool combined) {
    for (size_t i = 0; i < b.size(); ++i) {
      const Stmt& s = b[i];
      switch (s.kind) {
        case StmtKind::Loop:
          if (s.loop->kind == ForKind::GpuRows) fail("GpuRows nested in a row");
          if (s.loop->kind == ForKind::GpuLanes) {
            if (in_lanes) fail("GpuLanes nested in GpuLanes");
            walk(s.body, true, false);
            std::set<int> updated;
            for_each_stmt(s.body, [&](const Stmt& u) {
              if (u.kind == StmtKind::Reduce) updated.insert(u.accumulator);
            });
            for (int acc : updated) {
              ++i;
              if (i >= b.size() || b[i].kind != StmtKind::ThreadCombine ||
                  b[i].accumulator != acc) {
                fail("accumulator acc" + std::to_string(acc) +
                     " is not combined right after its GpuLanes loop");
              }
            }
            combined = true;
            continue;
          }
          walk(s.body, in_lanes, combined);
          break;
        case StmtKind::Block:
          walk(s.body, in_lanes, combined);
          break;
        case StmtKind::Reduce:
          if (!in_lanes && threads_ > 1) fail("a reduction update outside the lanes loop");
          break;
        case StmtKind::ThreadCombine:
          fail("a combine not right after its GpuLanes loop");
        case StmtKind::LocalArray:
          local_.insert(s.name);
          break;
        case StmtKind::Store:
          if (combined && !s.first_thread_of_row && !local_.count(s.access.buffer)) {
            fail("a store of combined values by every thread of the row");
          }
          if (in_lanes && s.first_thread_of_row) fail("a first-thread store inside the lanes");
          break;
        default:
          break;
      }
    }
  }

  const Kernel& k_;
  std::string pass_;
  int threads_ = 1;
  std::set<std::string> local_;
};

}  // namespace

void verify_cuda(const Kernel& kernel, const std::string& after_pass) {
  Verifier(kernel, after_pass).run();
}

}  // namespace stax::kernel::cuda
