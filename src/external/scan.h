// Stax's runtime scan (issue 16, point 7; the scan nodes at the end of Section 7.7): the
// external node cumsum, cumprod, logcumsumexp, cummax and cummin lower to (lowering/loop_ir.h:
// ScanCall). Each line along `dim` is scanned in PyTorch's CPU accumulation type
// (ir/scan_args.h), so every element is what eager's sequential loop gives, up to the
// association of a parallel scan. The dims other than `dim` are independent lines run in
// parallel (the inner ones together, one running value per column, so a scan along an outer
// dim reads whole rows); when the lines are too few for the threads and the carried dim is
// long, the carried dim is split by associativity: each block reduces to its total, the
// totals are scanned in order, and each block scans again from the prefix of the blocks before
// it (reduce, scan, rescan: no element is rounded twice).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/scan_args.h"

namespace stax::external {

struct ScanSpec {
  ir::ScanKind kind = ir::ScanKind::Sum;
  DType dtype = DType::Float32;  // of the input and of the values written
  std::vector<int64_t> sizes;
  std::vector<int64_t> input_strides;  // in elements (0 where the input broadcasts)
  int64_t dim = 0;                     // 0 for a 0-dim input
  // The values and (cummax, cummin) the indices are written contiguously.
};

// Why `spec` is not one the runtime runs, or nullopt.
std::optional<std::string> scan_spec_problem(const ScanSpec& spec);

// How the runtime splits a scan over threads (for tests and explain): `blocks` > 1 when the
// carried dim is split by associativity.
struct ScanPartition {
  int64_t outer = 1, length = 1, inner = 1;  // dims before `dim`, `dim`, dims after
  int64_t column_chunk = 1;                  // columns (inner elements) per task
  int64_t blocks = 1;                        // pieces of the carried dim per line group
  int threads = 1;
};
ScanPartition scan_partition(const ScanSpec& spec, int num_threads);

// Runs the scan: `input` points at element 0 of its layout; `values` receives the results;
// `indices` (cummax and cummin; may be null when no one keeps them) the int64 indices.
void run_scan(const ScanSpec& spec, const void* input, void* values, int64_t* indices,
              int num_threads);

}  // namespace stax::external
