// The passes over kernel IR, in the order pipeline.cpp runs them. Each takes the kernel of
// one fused node and rewrites it in place (or only records a decision).
#pragma once

#include "kernel/kernel_ir.h"
#include "runtime/cache_info.h"
#include "runtime/simd.h"
#include "target/target.h"

namespace stax::kernel {

// The machine the kernels are generated for: the target description (target/target.h).
using TargetOptions = target::Target;

// The vector registers of a SIMD level (Target::vector_register_count and _bytes).
inline int vector_register_count(runtime::SimdLevel simd) {
  target::Target t;
  t.simd = simd;
  return t.vector_register_count();
}
inline int64_t vector_register_bytes(runtime::SimdLevel simd) {
  target::Target t;
  t.simd = simd;
  return t.vector_register_bytes();
}

// Decides each nest's form — vectorized along its innermost loop, 2-D tiled (Section 8.2) for
// transposed operands, a column reduction vectorized along the output, or scalar — from the
// IR: which loads are strided, whether every value has a vector form. Records the reason.
void choose_kernel_form(Kernel& kernel, const TargetOptions& target);

// Algorithm 8.1: the parallel depth, and whether a reduction with a single output is split
// across the threads instead.
void choose_parallel_depth(Kernel& kernel, const TargetOptions& target);

// Rewrites each nest into its chosen form: the vector loop with its masked tail, the column
// blocks of a column reduction, the L1 tiles of the tiled form.
void apply_kernel_form(Kernel& kernel);

// Blocks float32 sums (cascade_blocking.h): strip-mines the reduction loop that takes a
// block past kCascadeBlock iterations and folds the block accumulators after each block.
void block_float_sums(Kernel& kernel);

// Section 8.1, Proposition 8.1(2): unrolls the innermost vectorized reduction loop by the W
// of a cost model (add latency x issue rate, vector registers, trip count) and spreads its
// Reduce updates over W independent parts of each accumulator (Accumulator::independent).
// Records W with its reason in the nest's decision.
void spread_independent_accumulators(Kernel& kernel, const TargetOptions& target);

// A split reduction: threads share the outermost reduction loop, each keeps its partials,
// combined in thread order after a barrier.
void split_reductions(Kernel& kernel);

// The OpenMP work sharing of the chosen depth (collapse), or one thread for depth 0.
void parallelize(Kernel& kernel);

// Marks the aligned full-vector stores of buffers the kernel writes more than the last-level
// cache of, and does not read, as streaming (non-temporal); adds the stream fence.
void mark_streaming_stores(Kernel& kernel, const TargetOptions& target);

// Issue 6 point 8: loop and index variables (and index values read only by conversions and
// gathers) in int32 where every index they take part in provably fits, int64 otherwise;
// records which and why in KernelDecisions::index_width_reason.
void narrow_indices(Kernel& kernel);

// Moves loop-invariant scalar values (a row's log-sum or reciprocal standard deviation, built
// per iteration of the row's vector loop) before their loop (hoist_invariants.cpp); records
// how many out of which loops in KernelDecisions::hoisting_reason.
void hoist_loop_invariants(Kernel& kernel);

// Removes loops without iterations and definitions nobody uses, simplifies indices.
void simplify(Kernel& kernel);

}  // namespace stax::kernel
