// Helpers for the kernel IR tests: schedule a program (text format or a hand-made
// LoweredGraph), lower its fused nodes through the pipeline with the verifier on, and look
// for statements in the result.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernel/ir_builder.h"
#include "kernel/pipeline.h"
#include "kernel/printer.h"
#include "lowering/lowering.h"
#include "scheduler/schedule.h"

namespace stax::kernel_test {

struct Scheduled {
  lowering::LoweredGraph lowered;
  scheduler::Schedule schedule;
};

// `with_library`: lower contractions as external calls of a stand-in library that accepts
// every call (machine-independent, for snapshots); otherwise they are loop nests.
inline std::unique_ptr<Scheduled> schedule_text(const std::string& text,
                                                bool with_library = false) {
  auto s = std::make_unique<Scheduled>();
  lowering::LoweringOptions options;
  if (with_library) {
    options.library_for = [](const lowering::ExternalCall&, std::string*) {
      return std::optional<std::string>("a test library");
    };
  }
  s->lowered = lowering::lower(ir::parse_graph(text), options);
  s->schedule = scheduler::schedule(s->lowered);
  return s;
}

inline std::unique_ptr<Scheduled> schedule_lowered(lowering::LoweredGraph g) {
  auto s = std::make_unique<Scheduled>();
  s->lowered = std::move(g);
  s->schedule = scheduler::schedule(s->lowered);
  return s;
}

inline kernel::TargetOptions avx512(int threads = 1) {
  return {runtime::SimdLevel::Avx512, threads, {}};
}

// Every fused node lowered through all passes, verified after each.
inline std::vector<kernel::Kernel> lower_all(const Scheduled& s, kernel::TargetOptions target,
                                             std::vector<std::string>* passes = nullptr) {
  kernel::PipelineOptions o;
  o.target = target;
  o.verify = true;
  if (passes != nullptr) {
    o.after_pass = [passes](const std::string& pass, const kernel::Kernel&) {
      passes->push_back(pass);
    };
  }
  int next_error = kernel::kFirstIndexErrorCode;
  std::vector<kernel::Kernel> out;
  for (const auto& f : s.schedule.kernels) {
    out.push_back(kernel::lower_fused_node(s.schedule, f, o, next_error));
  }
  return out;
}

inline int count_stmts(const kernel::Kernel& k, const std::function<bool(const kernel::Stmt&)>& p) {
  int n = 0;
  kernel::for_each_stmt(k.body, [&](const kernel::Stmt& s) { n += p(s) ? 1 : 0; });
  return n;
}

inline int count_lets(const kernel::Kernel& k, kernel::LetKind kind) {
  return count_stmts(k, [&](const kernel::Stmt& s) {
    return s.kind == kernel::StmtKind::Let && s.let.kind == kind;
  });
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A computed buffer of `sizes` whose value is `body` (a pointwise buffer when
// reduction_sizes is empty).
inline lowering::ComputedBuffer make_buffer(
    const std::string& name, DType dtype, const std::vector<int64_t>& sizes,
    std::function<lowering::OpsValue(lowering::OpsHandler&, const std::vector<index::Expr>&,
                                     const std::vector<index::Expr>&)>
        body,
    std::vector<int64_t> reduction_sizes = {},
    std::optional<lowering::ReductionType> reduction = std::nullopt,
    std::vector<int64_t> output_sizes = {}) {
  lowering::ComputedBuffer b;
  b.name = name;
  b.dtype = dtype;
  const std::vector<int64_t> stored =
      output_sizes.empty() && reduction_sizes.empty() ? sizes : output_sizes;
  std::vector<int64_t> strides(stored.size(), 1);
  for (size_t d = stored.size(); d-- > 1;) strides[d - 1] = strides[d] * stored[d];
  b.sizes = index::to_exprs(stored);
  b.strides = index::to_exprs(strides);
  b.ranges = index::to_exprs(sizes);
  b.reduction_ranges = index::to_exprs(reduction_sizes);
  b.reduction = reduction;
  b.output_index = [strides](const std::vector<index::Expr>& idx) {
    index::Expr e(0);
    for (size_t k = 0; k < idx.size(); ++k) e = e + idx[k] * index::Expr(strides[k]);
    return e;
  };
  b.value = std::move(body);
  b.source = "test buffer '" + name + "'";
  b.origin = "test";
  return b;
}

// A row-major flat index of `idx` over `sizes`.
inline index::Expr flat(const std::vector<index::Expr>& idx, const std::vector<int64_t>& sizes) {
  index::Expr e(0);
  for (size_t k = 0; k < idx.size(); ++k) e = e * index::Expr(sizes[k]) + idx[k];
  return e;
}

// A graph with contiguous inputs `inputs` (name, dtype, sizes), computed buffers and their
// outputs.
inline lowering::LoweredGraph make_graph(
    const std::vector<std::tuple<std::string, DType, std::vector<int64_t>>>& inputs,
    std::vector<lowering::ComputedBuffer> buffers) {
  lowering::LoweredGraph g;
  g.name = "test";
  for (const auto& [name, dtype, sizes] : inputs) {
    std::vector<int64_t> strides(sizes.size(), 1);
    for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
    g.inputs.push_back({name, dtype, index::to_exprs(sizes), index::to_exprs(strides)});
  }
  for (auto& b : buffers) {
    g.outputs.push_back({b.name, false, b.dtype, b.sizes, b.strides, 0});
    g.buffers.push_back(std::move(b));
  }
  return g;
}

}  // namespace stax::kernel_test
