// Blocked (cascade) summation for the reduction loops of every kernel form (Section 6.5: a
// float sum reordered is a different sum). A float32 accumulator that keeps adding elements
// of similar magnitude stalls once it is 2^24 times larger than them (2.5e7 ones sum to
// 16777216). So each sum accumulates one block of at most kCascadeBlock iterations into a
// float block accumulator (a plain inner loop, no test per iteration), and each block result
// is added into an outer accumulator in double (one per vector lane; the partials of the
// threads are added in double too), rounded to float once at the end. The error of a sum of
// N elements is then that of one block, at most kCascadeBlock·u in the worst case and about
// u·sqrt(kCascadeBlock)/3·(the block's share of the sum) for random rounding, plus
// (N/kCascadeBlock)·2^-53 for the outer level, instead of N·u. (A compensated float outer
// level is not enough: with identical blocks its error terms do not cancel, and 1e9 times 0.1
// comes out 0.2% low.) Overflow still gives inf: a block that overflows is inf, and so is the
// rounding of an outer sum beyond the float range.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace stax::kernel {

// Iterations per block accumulator (per lane in vectorized forms). The block's rounding error
// bounds the whole sum's (the double outer level adds next to nothing), so K is small: 2^7
// keeps the worst case K·u = 2^-17 and the typical error a few u (see cascade_error_chain),
// while one fold (W double additions, off the loop's critical add chain) per 128 iterations
// costs about 1% of the loop.
inline constexpr int64_t kCascadeBlock = 128;
// The most lanes a vector accumulator has (AVX-512 float); reduce_sum adds them.
inline constexpr int64_t kMaxSumLanes = 16;

// Where the block boundary of a loop nest lies: loop `level` (outer to inner) is strip-mined
// into chunks of `chunk` iterations, each chunk of it and all loops inside it being one block
// of at most kCascadeBlock iterations.
struct CascadeBlocking {
  size_t level = 0;
  int64_t chunk = 1;
};

// The blocking of reduction loops with these per-lane iteration counts (outer to inner), or
// nullopt when all of them together make at most one block (no blocking needed).
std::optional<CascadeBlocking> cascade_blocking(const std::vector<int64_t>& iterations);

// The longest run of plain float additions into one accumulator that a compiled sum of
// `length` elements performs in any form: one block (or the whole sum when shorter), plus the
// lanes combined by reduce_sum (unblocked sums). Blocks and thread partials are added in
// double. The tolerance of compiled results (driver/tolerance.h) grows with it.
int64_t cascade_error_chain(int64_t length);

}  // namespace stax::kernel
